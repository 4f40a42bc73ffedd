//! The LSTM cell's element-wise work on one time step of a batch, gates
//! `i, f, g, o` side by side in rows of `4H` (PyTorch's order): the gate
//! activations, the state update, and the backward pass through both.
//!
//! The logistic function and `tanh` come from one vectorised exponential
//! ([`exp_minus`]) over the whole step: `σ(x) = 1 / (1 + e^{−x})` and
//! `tanh(x) = 2 / (1 + e^{−2x}) − 1`, which saturate to the right limits when
//! the exponential overflows.

use fedcluster_core::kernels::exp_minus;

/// `v <- 1 / (1 + v)`: the logistic function from `v = e^{−x}`.
#[inline]
fn logistic_of_exp(v: &mut f32) {
    *v = 1.0 / (1.0 + *v);
}

/// `v <- 2 / (1 + v) − 1`: `tanh` from `v = e^{−2x}`.
#[inline]
fn tanh_of_exp(v: &mut f32) {
    *v = 2.0 / (1.0 + *v) - 1.0;
}

/// `t <- tanh(t)` for every entry.
pub(super) fn tanh_in_place(t: &mut [f32]) {
    for v in t.iter_mut() {
        *v *= -2.0;
    }
    exp_minus(t, 0.0);
    t.iter_mut().for_each(tanh_of_exp);
}

/// One step forward. `gates` (`B x 4H`) holds the pre-activations without
/// biases on entry and the activated gates on exit; `bias` (`4H`) is
/// `b_ih + b_hh`. Writes the cell state `c = f ⊙ c_prev + i ⊙ g` (`c_prev`
/// `None`: zero), `tc = tanh(c)` and `h = o ⊙ tc` (each `B x H`).
pub(super) fn forward(
    gates: &mut [f32],
    bias: &[f32],
    c_prev: Option<&[f32]>,
    c: &mut [f32],
    tc: &mut [f32],
    h: &mut [f32],
) {
    let h4 = bias.len();
    let hidden = h4 / 4;
    for row in gates.chunks_exact_mut(h4) {
        // e^{−x} for the logistic gates, e^{−2x} for g.
        for (block, (v, b)) in row
            .chunks_exact_mut(hidden)
            .zip(bias.chunks_exact(hidden))
            .enumerate()
        {
            let scale = if block == 2 { -2.0 } else { -1.0 };
            for (v, b) in v.iter_mut().zip(b) {
                *v = scale * (*v + b);
            }
        }
    }
    exp_minus(gates, 0.0);
    let rows = gates.chunks_exact_mut(h4).zip(c.chunks_exact_mut(hidden));
    for (b, (row, c)) in rows.enumerate() {
        let (ifg, o) = row.split_at_mut(3 * hidden);
        let (if_, g) = ifg.split_at_mut(2 * hidden);
        if_.iter_mut().for_each(logistic_of_exp);
        g.iter_mut().for_each(tanh_of_exp);
        o.iter_mut().for_each(logistic_of_exp);
        let (i, f) = if_.split_at(hidden);
        match c_prev {
            Some(prev) => {
                let prev = &prev[b * hidden..(b + 1) * hidden];
                for ((((c, p), f), i), g) in c.iter_mut().zip(prev).zip(f).zip(i).zip(&*g) {
                    *c = f * p + i * g;
                }
            }
            None => {
                for ((c, i), g) in c.iter_mut().zip(i).zip(&*g) {
                    *c = i * g;
                }
            }
        }
    }
    tc.copy_from_slice(c);
    tanh_in_place(tc);
    let rows = gates.chunks_exact(h4).zip(tc.chunks_exact(hidden));
    for ((row, tc), h) in rows.zip(h.chunks_exact_mut(hidden)) {
        for ((h, t), o) in h.iter_mut().zip(tc).zip(&row[3 * hidden..]) {
            *h = o * t;
        }
    }
}

/// One step backward. `gates` (`B x 4H`) holds the step's activated gates on
/// entry and the gradient of the loss by their pre-activations on exit; `dh`
/// (`B x H`) is the gradient by the step's output `h`, `dc` the gradient by
/// its cell state from the later steps (updated to the gradient by
/// `c_prev`); `tc` is `tanh(c)` and `c_prev` the previous state (`None`:
/// zero).
pub(super) fn backward(
    gates: &mut [f32],
    c_prev: Option<&[f32]>,
    tc: &[f32],
    dh: &[f32],
    dc: &mut [f32],
    hidden: usize,
) {
    for (b, row) in gates.chunks_exact_mut(4 * hidden).enumerate() {
        let at = b * hidden..(b + 1) * hidden;
        let (tc, dh, dc) = (&tc[at.clone()], &dh[at.clone()], &mut dc[at.clone()]);
        let c_prev = c_prev.map(|p| &p[at]);
        let (i, rest) = row.split_at_mut(hidden);
        let (f, rest) = rest.split_at_mut(hidden);
        let (g, o) = rest.split_at_mut(hidden);
        for j in 0..hidden {
            let (iv, fv, gv, ov) = (i[j], f[j], g[j], o[j]);
            let t = tc[j];
            let dct = dc[j] + dh[j] * ov * (1.0 - t * t);
            let cp = c_prev.map_or(0.0, |p| p[j]);
            i[j] = dct * gv * iv * (1.0 - iv);
            f[j] = dct * cp * fv * (1.0 - fv);
            g[j] = dct * iv * (1.0 - gv * gv);
            o[j] = dh[j] * t * ov * (1.0 - ov);
            dc[j] = dct * fv;
        }
    }
}
