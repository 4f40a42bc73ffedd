//! Convolutions with a stride over channels-last images (the SR-FCA code's
//! 5x5 stride-2 convolution, [`super::variant`]): `im2col` with the stride,
//! then one GEMM, a chunk of images at a time, as `crate::cnn::conv` does for
//! stride 1. The shape is a `Conv` whose `out_h x out_w` are the strided
//! positions (`(in + 2 pad − k) / stride + 1`), so its `patch`, `positions`
//! and `scratch_len` hold as they are.

use fedcluster_core::linalg::{MatMut, MatRef, matmul};

use crate::cnn::conv::{Conv, col2im_strided as col2im, im2col_strided as im2col};
use crate::cnn::layers::{dense, input_grad};

/// Calls `f(first, m, cols)` for consecutive chunks of `m` of the `n` images,
/// as many per chunk as `scratch` holds patches of (at least one).
fn for_chunks(
    c: &Conv,
    n: usize,
    scratch: &mut [f32],
    mut f: impl FnMut(usize, usize, &mut [f32]),
) {
    let per_image = c.positions() * c.patch();
    let chunk = (scratch.len() / per_image.max(1)).clamp(1, n.max(1));
    let mut first = 0;
    while first < n {
        let m = chunk.min(n - first);
        f(first, m, &mut scratch[..m * per_image]);
        first += m;
    }
}

/// `z` (`n · positions x out`) `= im2col(x) · Wᵀ` for `n` images `x` and
/// filters `w` (`out x patch`), through `scratch` (`c.scratch_len(n)`).
pub(super) fn forward(
    c: &Conv,
    stride: usize,
    x: &[f32],
    w: &[f32],
    n: usize,
    scratch: &mut [f32],
    z: &mut [f32],
) {
    let out = w.len() / c.patch().max(1);
    let image = c.in_h * c.in_w * c.in_c;
    for_chunks(c, n, scratch, |first, m, cols| {
        im2col(c, stride, &x[first * image..(first + m) * image], m, cols);
        let rows = m * c.positions();
        let z = &mut z[first * c.positions() * out..][..rows * out];
        dense(z, cols, w, c.patch(), 1.0);
    });
}

/// The backward pass of [`forward`] with `d` the gradient at `z`: the
/// filters' gradient `gw = dᵀ im2col(x)` (overwritten) and, when `dx` is
/// given, the gradient at the input `col2im(d · W)`.
#[allow(clippy::too_many_arguments)]
pub(super) fn backward(
    c: &Conv,
    stride: usize,
    x: &[f32],
    d: &[f32],
    w: &[f32],
    n: usize,
    scratch: &mut [f32],
    gw: &mut [f32],
    mut dx: Option<&mut [f32]>,
) {
    let out = w.len() / c.patch().max(1);
    let image = c.in_h * c.in_w * c.in_c;
    if n == 0 {
        gw.fill(0.0);
    }
    for_chunks(c, n, scratch, |first, m, cols| {
        let images = first * image..(first + m) * image;
        im2col(c, stride, &x[images.clone()], m, cols);
        let rows = m * c.positions();
        let d = &d[first * c.positions() * out..][..rows * out];
        matmul(
            MatMut::row_major(gw, out, c.patch()),
            MatRef::row_major(d, rows, out).t(),
            MatRef::row_major(cols, rows, c.patch()),
            first > 0,
            1.0,
        );
        if let Some(dx) = dx.as_deref_mut() {
            input_grad(cols, d, w, rows, 1.0);
            col2im(c, stride, cols, m, &mut dx[images]);
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The direct sum `z[o, y, x, f] = Σ w[f, ky, kx, c] x[y s + ky − p, x s + kx − p, c]`.
    fn direct(c: &Conv, stride: usize, x: &[f32], w: &[f32], out: usize) -> Vec<f32> {
        let mut z = vec![0.0f32; c.positions() * out];
        for oy in 0..c.out_h {
            for ox in 0..c.out_w {
                for f in 0..out {
                    let mut s = 0.0f32;
                    for ky in 0..c.k {
                        for kx in 0..c.k {
                            let iy = (oy * stride + ky) as isize - c.pad as isize;
                            let ix = (ox * stride + kx) as isize - c.pad as isize;
                            if iy < 0 || ix < 0 || iy >= c.in_h as isize || ix >= c.in_w as isize {
                                continue;
                            }
                            for ch in 0..c.in_c {
                                let xv = x[(iy as usize * c.in_w + ix as usize) * c.in_c + ch];
                                s += w[((f * c.k + ky) * c.k + kx) * c.in_c + ch] * xv;
                            }
                        }
                    }
                    z[(oy * c.out_w + ox) * out + f] = s;
                }
            }
        }
        z
    }

    /// A 5x5 stride-2 convolution with padding 2 (the SR-FCA code's) against
    /// the direct sum, and its input gradient against the adjoint identity
    /// `⟨z(x), d⟩ = ⟨x, dx⟩` (the convolution is linear in `x`).
    #[test]
    fn strided_convolution_matches_the_direct_sum_and_its_adjoint() {
        let (side, cin, out, stride) = (7, 2, 3, 2);
        let o = (side + 4 - 5) / stride + 1;
        let c = Conv {
            in_h: side,
            in_w: side,
            in_c: cin,
            k: 5,
            pad: 2,
            out_h: o,
            out_w: o,
        };
        let value = |i: usize| ((i * 37 % 23) as f32 - 11.0) / 7.0;
        let x: Vec<f32> = (0..side * side * cin).map(value).collect();
        let w: Vec<f32> = (0..out * c.patch()).map(|i| value(i + 5)).collect();
        let mut scratch = vec![0.0; c.scratch_len(1)];
        let mut z = vec![0.0; c.positions() * out];
        forward(&c, stride, &x, &w, 1, &mut scratch, &mut z);
        for (a, b) in z.iter().zip(direct(&c, stride, &x, &w, out)) {
            assert!((a - b).abs() < 1e-4, "{a} vs {b}");
        }
        let d: Vec<f32> = (0..z.len()).map(|i| value(i + 9)).collect();
        let (mut gw, mut dx) = (vec![0.0; w.len()], vec![0.0; x.len()]);
        backward(
            &c,
            stride,
            &x,
            &d,
            &w,
            1,
            &mut scratch,
            &mut gw,
            Some(&mut dx),
        );
        let lhs: f32 = z.iter().zip(&d).map(|(a, b)| a * b).sum();
        let rhs: f32 = x.iter().zip(&dx).map(|(a, b)| a * b).sum();
        assert!(
            (lhs - rhs).abs() < 1e-3 * lhs.abs().max(1.0),
            "{lhs} vs {rhs}"
        );
        // And linear in w: ⟨z(w), d⟩ = ⟨w, gw⟩.
        let rhs: f32 = w.iter().zip(&gw).map(|(a, b)| a * b).sum();
        assert!(
            (lhs - rhs).abs() < 1e-3 * lhs.abs().max(1.0),
            "{lhs} vs {rhs}"
        );
    }
}
