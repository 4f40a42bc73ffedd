//! The dense layer of the training pass: logits from the top layer's last
//! outputs, the softmax cross-entropy, the dense layer's gradient and the
//! gradient by those outputs, where backpropagation through time starts.

use fedcluster_core::linalg::{MatMut, MatRef, matmul};

use super::CharLstm;
use crate::logistic::loss_and_softmax_minus_onehot;

impl CharLstm {
    /// The dense layer on the top layer's last outputs `last` (`B x H`): adds
    /// its gradient to `grad`, writes the gradient by `last` into `dh` and
    /// returns the summed loss.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn head(
        &self,
        params: &[f32],
        last: &[f32],
        y: &[u32],
        scale: f32,
        z: &mut [f32],
        dh: &mut [f32],
        grad: &mut [f32],
    ) -> f64 {
        let (h, v, b) = (self.hidden, self.vocab, y.len());
        let fc = self.fc();
        let w = &params[fc..fc + v * h];
        matmul(
            MatMut::row_major(z, b, v),
            MatRef::row_major(last, b, h),
            MatRef::row_major(w, v, h).t(),
            false,
            1.0,
        );
        let mut loss = 0.0;
        for (row, &label) in z.chunks_exact_mut(v).zip(y) {
            for (zv, bv) in row.iter_mut().zip(&params[fc + v * h..]) {
                *zv += bv;
            }
            loss += loss_and_softmax_minus_onehot(row, label);
        }
        let (gw, gb) = grad[fc..].split_at_mut(v * h);
        matmul(
            MatMut::row_major(gw, v, h),
            MatRef::row_major(z, b, v).t(),
            MatRef::row_major(last, b, h),
            true,
            scale,
        );
        add_column_sums(z, scale, gb);
        matmul(
            MatMut::row_major(dh, b, h),
            MatRef::row_major(z, b, v),
            MatRef::row_major(w, v, h),
            false,
            1.0,
        );
        loss
    }
}

/// `out += scale · Σ_rows m` for `m` rows of `out.len()` columns.
fn add_column_sums(m: &[f32], scale: f32, out: &mut [f32]) {
    for row in m.chunks_exact(out.len()) {
        for (o, v) in out.iter_mut().zip(row) {
            *o += scale * v;
        }
    }
}
