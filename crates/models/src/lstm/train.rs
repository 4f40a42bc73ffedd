//! The training pass over one chunk of windows: forward with every step's
//! gates and states kept, the loss and its gradient at the dense layer, then
//! backpropagation through time, layer by layer from the top.
//!
//! Per layer, time-major (`T·B` rows):
//! - forward: `G = X · W_ihᵀ` in one GEMM; each step `G_t += h_{t−1} · W_hhᵀ`,
//!   then the cell ([`cell::forward`]);
//! - backward, steps from last to first: `dh_t = dX_t^{above} + dG_{t+1} · W_hh`
//!   (one GEMM), then [`cell::backward`] turns the step's gates into `dG_t`
//!   in place; with every step's `dG` stored, `∇W_ih = dGᵀ X`,
//!   `∇W_hh = dG_{1..}ᵀ h_{..T−1}` and the input gradient `dX = dG · W_ih`
//!   are one GEMM each, and `∇b_ih = ∇b_hh = Σ_rows dG`.
//!
//! The top layer's `dh` is non-zero at the last step only (from the dense
//! layer); the bottom layer's `dX` is scattered into the embedding rows of
//! the window's symbols. Gradients are added to `grad`, scaled by `scale`
//! (`1 / n` of the whole batch), so chunks accumulate.
//!
//! Scratch: `Workspace` buffer 0, carved into the embedded inputs, each
//! layer's gates, cell states, `tanh` of the states and outputs (all steps),
//! the input gradient passed down, and per-step `dh`, `dc`, biases and logits.
//!
//! A chunk may start from a given state instead of zeros (`carry`, the SR-FCA
//! public code's carried state, [`super::carried`]): step 0 then adds
//! `h_0 · W_hhᵀ` and continues `c_0`, `∇W_hh` gains `dG_0ᵀ h_0`, and the
//! chunk's last states replace it. The state is detached, as the code's
//! `hidden[0].detach()`: no gradient flows into it.

use fedcluster_core::Workspace;
use fedcluster_core::linalg::{MatMut, MatRef, matmul};

use super::carried::StateRows;
use super::{CharLstm, LayerAt, add_biases, cell};

/// One layer's stored sequences over every step (`T·B` rows each).
struct Store<'a> {
    gates: &'a mut [f32],
    c: &'a mut [f32],
    tc: &'a mut [f32],
    h: &'a mut [f32],
}

impl<'a> Store<'a> {
    /// Floats a layer stores for `rows` rows of `hidden` units.
    fn len(rows: usize, hidden: usize) -> usize {
        7 * rows * hidden
    }

    fn carve(buf: &'a mut [f32], rows: usize, hidden: usize) -> Self {
        let (gates, rest) = buf.split_at_mut(4 * rows * hidden);
        let (c, rest) = rest.split_at_mut(rows * hidden);
        let (tc, h) = rest.split_at_mut(rows * hidden);
        Self { gates, c, tc, h }
    }

    /// The outputs `h` of a stored layer.
    fn outputs(buf: &[f32], rows: usize, hidden: usize) -> &[f32] {
        &buf[6 * rows * hidden..7 * rows * hidden]
    }

    /// The last step's output and cell state of a stored layer of `b`
    /// windows.
    fn last_state(buf: &[f32], rows: usize, hidden: usize, b: usize) -> (&[f32], &[f32]) {
        let last = (rows - b) * hidden..rows * hidden;
        let c = &buf[4 * rows * hidden..5 * rows * hidden];
        (&Store::outputs(buf, rows, hidden)[last.clone()], &c[last])
    }
}

impl CharLstm {
    /// Adds the gradient of `scale ×` the summed loss of the windows `x`
    /// (labels `y`) to `grad`; returns the summed loss. With `carry` (these
    /// windows' rows of a batch's state) the windows start from that state,
    /// which their last states then replace; without it they start from
    /// zeros.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn chunk_loss_grad(
        &self,
        params: &[f32],
        x: &[f32],
        y: &[u32],
        scale: f32,
        grad: &mut [f32],
        ws: &mut Workspace,
        carry: Option<StateRows<'_>>,
    ) -> f64 {
        let (t_len, e, h, v) = (self.seq_len, self.embedding, self.hidden, self.vocab);
        let (b, layers) = (y.len(), self.layers);
        let rows = t_len * b;
        let per_layer = Store::len(rows, h);
        let lens = [
            rows * e,
            layers * per_layer,
            rows * h.max(e),
            b * h,
            b * h,
            4 * h,
            b * v,
            (h * skewed(4 * h)).max(4 * h * skewed(h)),
        ];
        let [buf] = ws.slices([lens.iter().sum()]);
        let (x0, rest) = buf.split_at_mut(lens[0]);
        let (stores, rest) = rest.split_at_mut(lens[1]);
        let (dx, rest) = rest.split_at_mut(lens[2]);
        let (dh, rest) = rest.split_at_mut(lens[3]);
        let (dc, rest) = rest.split_at_mut(lens[4]);
        let (bias, rest) = rest.split_at_mut(lens[5]);
        let (z, w_hh_copy) = rest.split_at_mut(lens[6]);

        self.gather(params, x, b, x0);
        for k in 0..layers {
            let (below, store) = stores.split_at_mut(k * per_layer);
            let input = match k {
                0 => &*x0,
                _ => Store::outputs(&below[(k - 1) * per_layer..], rows, h),
            };
            let store = Store::carve(&mut store[..per_layer], rows, h);
            let start = carry.as_ref().map(|s| s.layer(k));
            let at = self.layer(k);
            self.layer_forward(params, at, input, store, bias, w_hh_copy, b, start);
        }
        let top = Store::outputs(&stores[(layers - 1) * per_layer..], rows, h);
        let loss = self.head(params, &top[(t_len - 1) * b * h..], y, scale, z, dh, grad);

        for k in (0..layers).rev() {
            let at = self.layer(k);
            let store = Store::carve(&mut stores[k * per_layer..(k + 1) * per_layer], rows, h);
            let from_above = (k + 1 < layers).then_some(&dx[..rows * h]);
            let start = carry.as_ref().map(|s| s.layer(k));
            let c0 = start.map(|s| s.1);
            self.layer_backward(params, at, from_above, store, [dh, dc, w_hh_copy], b, c0);
            let input = match k {
                0 => &*x0,
                _ => Store::outputs(&stores[(k - 1) * per_layer..], rows, h),
            };
            let stored = &stores[k * per_layer..(k + 1) * per_layer];
            self.layer_grads(at, input, stored, scale, bias, b, grad, start.map(|s| s.0));
            // The input gradient, for the layer below or the embedding.
            let dx = &mut dx[..rows * at.input];
            matmul(
                MatMut::row_major(dx, rows, at.input),
                MatRef::row_major(&stored[..rows * 4 * h], rows, 4 * h),
                MatRef::row_major(&params[at.w_ih..at.w_hh], 4 * h, at.input),
                false,
                1.0,
            );
            if k == 0 {
                self.scatter(x, b, dx, scale, grad);
            }
        }
        if let Some(mut carry) = carry {
            for k in 0..layers {
                let stored = &stores[k * per_layer..(k + 1) * per_layer];
                let (h_last, c_last) = Store::last_state(stored, rows, h, b);
                carry.set_layer(k, h_last, c_last);
            }
        }
        loss
    }

    /// `x0` (time-major, `T·B x E`) <- the embeddings of the windows `x`.
    fn gather(&self, params: &[f32], x: &[f32], b: usize, x0: &mut [f32]) {
        let (t_len, e) = (self.seq_len, self.embedding);
        for (i, window) in x.chunks_exact(t_len).enumerate() {
            for (t, &token) in window.iter().enumerate() {
                let s = token as usize * e;
                let row = (t * b + i) * e;
                x0[row..row + e].copy_from_slice(&params[s..s + e]);
            }
        }
    }

    /// Adds `scale ×` the input gradient `dx` (time-major) to the embedding
    /// rows of the windows' symbols.
    fn scatter(&self, x: &[f32], b: usize, dx: &[f32], scale: f32, grad: &mut [f32]) {
        let (t_len, e) = (self.seq_len, self.embedding);
        for (i, window) in x.chunks_exact(t_len).enumerate() {
            for (t, &token) in window.iter().enumerate() {
                let s = token as usize * e;
                let row = (t * b + i) * e;
                for (g, d) in grad[s..s + e].iter_mut().zip(&dx[row..row + e]) {
                    *g += scale * d;
                }
            }
        }
    }

    /// One layer forward over every step, keeping what the backward pass
    /// needs. `w_hh_t` is scratch for `W_hhᵀ` (`H x 4H`, row-major): with it
    /// the recurrent products read the weights as `gemm` wants them, where
    /// `W_hh` itself would be packed again at every step (a fifth of a
    /// batch-10 step). `start` is the `(h, c)` step 0 continues (zeros
    /// without it).
    #[allow(clippy::too_many_arguments)]
    fn layer_forward(
        &self,
        params: &[f32],
        at: LayerAt,
        input: &[f32],
        store: Store<'_>,
        bias: &mut [f32],
        w_hh_t: &mut [f32],
        b: usize,
        start: Option<(&[f32], &[f32])>,
    ) {
        let (h, h4) = (self.hidden, 4 * self.hidden);
        let rows = self.seq_len * b;
        let Store {
            gates,
            c,
            tc,
            h: out,
        } = store;
        matmul(
            MatMut::row_major(gates, rows, h4),
            MatRef::row_major(input, rows, at.input),
            MatRef::row_major(&params[at.w_ih..at.w_hh], h4, at.input).t(),
            false,
            1.0,
        );
        add_biases(params, at, bias);
        let stride = skewed(h4);
        transpose(&params[at.w_hh..at.b_ih], h4, h, w_hh_t, stride);
        let w_hh = MatRef::row_major_strided(w_hh_t, h, h4, stride);
        let (bh, bh4) = (b * h, b * h4);
        for t in 0..self.seq_len {
            let g = &mut gates[t * bh4..(t + 1) * bh4];
            let (done, now) = out.split_at_mut(t * bh);
            let h_prev = match (t, start) {
                (0, Some((h0, _))) => Some(h0),
                (0, None) => None,
                _ => Some(&done[(t - 1) * bh..]),
            };
            if let Some(prev) = h_prev {
                let prev = MatRef::row_major(prev, b, h);
                matmul(MatMut::row_major(g, b, h4), prev, w_hh, true, 1.0);
            }
            let (c_done, c_now) = c.split_at_mut(t * bh);
            let c_prev = match t {
                0 => start.map(|(_, c0)| c0),
                _ => Some(&c_done[(t - 1) * bh..]),
            };
            let tc = &mut tc[t * bh..(t + 1) * bh];
            cell::forward(g, bias, c_prev, &mut c_now[..bh], tc, &mut now[..bh]);
        }
    }

    /// Backpropagation through one layer's steps: the stored gates become
    /// `dG`. `from_above` is the gradient by every step's output from the
    /// layer above; without it (the top layer) `dh` holds the last step's.
    /// `c0` is the cell state step 0 continued (zeros without it).
    #[allow(clippy::too_many_arguments)]
    fn layer_backward(
        &self,
        params: &[f32],
        at: LayerAt,
        from_above: Option<&[f32]>,
        store: Store<'_>,
        [dh, dc, w_hh_copy]: [&mut [f32]; 3],
        b: usize,
        c0: Option<&[f32]>,
    ) {
        let (h, h4, t_len) = (self.hidden, 4 * self.hidden, self.seq_len);
        let Store { gates, c, tc, .. } = store;
        let stride = skewed(h);
        copy_rows(&params[at.w_hh..at.b_ih], h, w_hh_copy, stride);
        let w_hh = MatRef::row_major_strided(w_hh_copy, h4, h, stride);
        let (bh, bh4) = (b * h, b * h4);
        dc.fill(0.0);
        for t in (0..t_len).rev() {
            match from_above {
                Some(d) => dh.copy_from_slice(&d[t * bh..(t + 1) * bh]),
                None if t + 1 < t_len => dh.fill(0.0),
                None => {}
            }
            let (now, later) = gates.split_at_mut((t + 1) * bh4);
            if t + 1 < t_len {
                let next = MatRef::row_major(&later[..bh4], b, h4);
                matmul(MatMut::row_major(dh, b, h), next, w_hh, true, 1.0);
            }
            let c_prev = match t {
                0 => c0,
                _ => Some(&c[(t - 1) * bh..t * bh]),
            };
            let tc = &tc[t * bh..(t + 1) * bh];
            cell::backward(&mut now[t * bh4..], c_prev, tc, dh, dc, h);
        }
    }

    /// Adds `scale ×` one layer's weight and bias gradients to `grad`, from
    /// its input and its stored layer `stored` (every step's `dG`, in place of
    /// the gates, and outputs); `sums` is scratch of `4H`. `h0` is the output
    /// step 0 continued (zeros without it).
    #[allow(clippy::too_many_arguments)]
    fn layer_grads(
        &self,
        at: LayerAt,
        input: &[f32],
        stored: &[f32],
        scale: f32,
        sums: &mut [f32],
        b: usize,
        grad: &mut [f32],
        h0: Option<&[f32]>,
    ) {
        let (h, h4) = (self.hidden, 4 * self.hidden);
        let rows = self.seq_len * b;
        let dg = &stored[..rows * h4];
        let out = Store::outputs(stored, rows, h);
        let (g_ih, rest) = grad[at.w_ih..at.b_hh + h4].split_at_mut(h4 * at.input);
        let (g_hh, rest) = rest.split_at_mut(h4 * h);
        let (g_bih, g_bhh) = rest.split_at_mut(h4);
        matmul(
            MatMut::row_major(g_ih, h4, at.input),
            MatRef::row_major(dg, rows, h4).t(),
            MatRef::row_major(input, rows, at.input),
            true,
            scale,
        );
        // Step t's recurrent input is step t - 1's output (at t = 0 the
        // carried `h0`, or zero).
        let later = rows - b;
        matmul(
            MatMut::row_major(g_hh, h4, h),
            MatRef::row_major(&dg[b * h4..], later, h4).t(),
            MatRef::row_major(&out[..later * h], later, h),
            true,
            scale,
        );
        if let Some(h0) = h0 {
            matmul(
                MatMut::row_major(g_hh, h4, h),
                MatRef::row_major(&dg[..b * h4], b, h4).t(),
                MatRef::row_major(h0, b, h),
                true,
                scale,
            );
        }
        sums.fill(0.0);
        for row in dg.chunks_exact(h4) {
            for (s, v) in sums.iter_mut().zip(row) {
                *s += v;
            }
        }
        for (g, s) in g_bih.iter_mut().zip(sums.iter()) {
            *g += scale * s;
        }
        for (g, s) in g_bhh.iter_mut().zip(sums.iter()) {
            *g += scale * s;
        }
    }
}

/// The row stride of `W_hhᵀ`'s copy for rows of `len` values: one cache line
/// more than `len`. `gemm` reads the copy down its columns (16 values of
/// each row at a time, a row apart): at `4H = 1,024` values, rows 4 KiB
/// apart fall in one cache set and evicted one another before the second
/// block of batch columns read them again.
pub(super) fn skewed(len: usize) -> usize {
    len + 16
}

/// `out` <- the rows of `m` (`cols` values each), `stride >= cols` values
/// apart.
pub(super) fn copy_rows(m: &[f32], cols: usize, out: &mut [f32], stride: usize) {
    for (row, out) in m.chunks_exact(cols).zip(out.chunks_mut(stride)) {
        out[..cols].copy_from_slice(row);
    }
}

/// `out` (`cols x rows`, row-major, rows `stride >= rows` values apart) <-
/// the transpose of `m` (`rows x cols`, row-major), in 8x8 tiles written
/// along `out`'s rows: written the other way (along `m`'s rows), a tile's 8
/// rows of `out`, for `W_hh` 4 KiB apart, fell in one cache set and evicted
/// one another (3.6% of a batch-10 step).
pub(super) fn transpose(m: &[f32], rows: usize, cols: usize, out: &mut [f32], stride: usize) {
    const TILE: usize = 8;
    assert!(
        stride >= rows
            && m.len() >= rows * cols
            && out.len() >= cols.saturating_sub(1) * stride + rows,
        "transpose: lengths"
    );
    for j0 in (0..cols).step_by(TILE) {
        for i0 in (0..rows).step_by(TILE) {
            for j in j0..(j0 + TILE).min(cols) {
                let row = &mut out[j * stride..][i0..(i0 + TILE).min(rows)];
                for (k, v) in row.iter_mut().enumerate() {
                    *v = m[(i0 + k) * cols + j];
                }
            }
        }
    }
}
