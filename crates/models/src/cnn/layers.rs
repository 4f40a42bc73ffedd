//! The dense layers the native convolutional networks share ([`super::Cnn`]
//! and [`crate::resnet9::ResNet9`]): products by GEMM, ReLU, and their
//! backward passes (convolutions are in [`super::conv`], 2x2 max-pooling in
//! [`super::pool`]).

use fedcluster_core::linalg::{MatMut, MatRef, matmul};

/// `z (rows x cols) += bias` per column, then ReLU in place.
pub(crate) fn bias_relu(z: &mut [f32], bias: &[f32]) {
    for row in z.chunks_exact_mut(bias.len()) {
        for (v, b) in row.iter_mut().zip(bias) {
            *v = (*v + b).max(0.0);
        }
    }
}

/// `z (rows x cols) = scale · a · Wᵀ` for `w` (`cols x inner`).
pub(crate) fn dense(z: &mut [f32], a: &[f32], w: &[f32], inner: usize, scale: f32) {
    let cols = w.len() / inner;
    let rows = a.len() / inner;
    matmul(
        MatMut::row_major(z, rows, cols),
        MatRef::row_major(a, rows, inner),
        MatRef::row_major(w, cols, inner).t(),
        false,
        scale,
    );
}

/// `g (rows_out x inner) = scale · dᵀ a` for `d` (`n x rows_out`), `a` (`n x inner`).
pub(crate) fn weight_grad(g: &mut [f32], d: &[f32], a: &[f32], n: usize, scale: f32) {
    let rows_out = d.len() / n.max(1);
    let inner = a.len() / n.max(1);
    matmul(
        MatMut::row_major(g, rows_out, inner),
        MatRef::row_major(d, n, rows_out).t(),
        MatRef::row_major(a, n, inner),
        false,
        scale,
    );
}

/// `da (n x inner) = scale · d · W` for `d` (`n x rows_out`) and `w`
/// (`rows_out x inner`).
pub(crate) fn input_grad(da: &mut [f32], d: &[f32], w: &[f32], n: usize, scale: f32) {
    let rows_out = d.len() / n.max(1);
    let inner = w.len() / rows_out.max(1);
    matmul(
        MatMut::row_major(da, n, inner),
        MatRef::row_major(d, n, rows_out),
        MatRef::row_major(w, rows_out, inner),
        false,
        scale,
    );
}

/// Zeroes `d` where the ReLU output `a` is not positive.
pub(crate) fn relu_backward(d: &mut [f32], a: &[f32]) {
    for (g, v) in d.iter_mut().zip(a) {
        if *v <= 0.0 {
            *g = 0.0;
        }
    }
}
