//! Evaluation: the summed loss and the number correct over any number of
//! windows, in chunks of [`EVAL_CHUNK`] windows, so memory is bounded by the
//! chunk and not by the data.
//!
//! Nothing is kept for a backward pass, so the layers advance together step
//! by step: at step `t` each layer's gates are `x_t · W_ihᵀ + h_{t−1} · W_hhᵀ`
//! (two GEMMs of `EVAL_CHUNK` rows, efficient at that height), then the cell
//! updates its state in place. Only the current step's input, gates and each
//! layer's states are held.
//!
//! Scratch: `Workspace` buffer 0, carved into the step's embedded input, per
//! layer its cell state, previous cell state and output, the gates, `tanh` of
//! the state, the summed biases and the logits.
//!
//! With a `carry` (the SR-FCA public code's carried state,
//! [`super::carried`]) the windows start from the given states, as if step 0
//! had a step before it, and their last states replace them.

use fedcluster_core::Workspace;
use fedcluster_core::linalg::{MatMut, MatRef, matmul};

use super::carried::StateRows;
use super::{CharLstm, EVAL_CHUNK, add_biases, cell};
use crate::logistic::{count_argmax_matches, sample_loss};

impl CharLstm {
    /// The summed loss and the number correct of the windows `x` (labels
    /// `y`), which fit the model, from zero states, or from the states in
    /// `carry` ([`CharLstm::state_len`] of them), which their last states
    /// then replace.
    pub(super) fn evaluate(
        &self,
        params: &[f32],
        x: &[f32],
        y: &[u32],
        ws: &mut Workspace,
        mut carry: Option<&mut [f32]>,
    ) -> (f64, usize) {
        let (mut loss, mut hits) = (0.0, 0);
        let n = y.len();
        for start in (0..n).step_by(EVAL_CHUNK) {
            let end = (start + EVAL_CHUNK).min(n);
            let x = &x[start * self.seq_len..end * self.seq_len];
            let chunk = (carry.as_deref_mut()).map(|s| StateRows::new(self, s, n, start..end));
            let (l, c) = self.chunk_evaluate(params, x, &y[start..end], ws, chunk);
            loss += l;
            hits += c;
        }
        (loss, hits)
    }

    fn chunk_evaluate(
        &self,
        params: &[f32],
        x: &[f32],
        y: &[u32],
        ws: &mut Workspace,
        carry: Option<StateRows<'_>>,
    ) -> (f64, usize) {
        let (t_len, e, h, v) = (self.seq_len, self.embedding, self.hidden, self.vocab);
        let (h4, b, layers) = (4 * h, y.len(), self.layers);
        let bh = b * h;
        let lens = [b * e, layers * 3 * bh, b * h4, bh, layers * h4, b * v];
        let [buf] = ws.slices([lens.iter().sum()]);
        let (xt, rest) = buf.split_at_mut(lens[0]);
        let (states, rest) = rest.split_at_mut(lens[1]);
        let (gates, rest) = rest.split_at_mut(lens[2]);
        let (tc, rest) = rest.split_at_mut(lens[3]);
        let (biases, z) = rest.split_at_mut(lens[4]);
        for (k, bias) in biases.chunks_exact_mut(h4).enumerate() {
            add_biases(params, self.layer(k), bias);
        }
        let carried = carry.is_some();
        if let Some(carry) = &carry {
            for (k, state) in states.chunks_exact_mut(3 * bh).enumerate() {
                let (h0, c0) = carry.layer(k);
                state[..bh].copy_from_slice(c0);
                state[2 * bh..].copy_from_slice(h0);
            }
        }
        for t in 0..t_len {
            for (i, window) in x.chunks_exact(t_len).enumerate() {
                let s = window[t] as usize * e;
                xt[i * e..(i + 1) * e].copy_from_slice(&params[s..s + e]);
            }
            for k in 0..layers {
                let at = self.layer(k);
                let (below, state) = states.split_at_mut(k * 3 * bh);
                let input = match k {
                    0 => &*xt,
                    _ => &below[(k - 1) * 3 * bh + 2 * bh..k * 3 * bh],
                };
                let (c, rest) = state.split_at_mut(bh);
                let (c_prev, rest) = rest.split_at_mut(bh);
                let out = &mut rest[..bh];
                matmul(
                    MatMut::row_major(gates, b, h4),
                    MatRef::row_major(input, b, at.input),
                    MatRef::row_major(&params[at.w_ih..at.w_hh], h4, at.input).t(),
                    false,
                    1.0,
                );
                if t > 0 || carried {
                    matmul(
                        MatMut::row_major(gates, b, h4),
                        MatRef::row_major(out, b, h),
                        MatRef::row_major(&params[at.w_hh..at.b_ih], h4, h).t(),
                        true,
                        1.0,
                    );
                    c_prev.copy_from_slice(c);
                }
                let c_prev = (t > 0 || carried).then_some(&*c_prev);
                let bias = &biases[k * h4..(k + 1) * h4];
                cell::forward(gates, bias, c_prev, c, tc, out);
            }
        }
        if let Some(mut carry) = carry {
            for (k, state) in states.chunks_exact(3 * bh).enumerate() {
                carry.set_layer(k, &state[2 * bh..], &state[..bh]);
            }
        }
        let fc = self.fc();
        let top = &states[(layers - 1) * 3 * bh + 2 * bh..layers * 3 * bh];
        matmul(
            MatMut::row_major(z, b, v),
            MatRef::row_major(top, b, h),
            MatRef::row_major(&params[fc..fc + v * h], v, h).t(),
            false,
            1.0,
        );
        let mut loss = 0.0;
        for (row, &label) in z.chunks_exact_mut(v).zip(y) {
            for (zv, bv) in row.iter_mut().zip(&params[fc + v * h..]) {
                *zv += bv;
            }
            loss += sample_loss(row, label);
        }
        (loss, count_argmax_matches(z, v, y))
    }
}
