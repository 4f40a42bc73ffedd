//! One conv-BN-ReLU block of [`super::ResNet9`]: a convolution without
//! bias (by the path [`ConvPath::choose`] picks: Winograd F(2x2, 3x3) for
//! 3x3 with padding 1 where its rule picks it, else `im2col`, strided where
//! the kernel moves by more than 1), batch normalisation over every
//! position of every image, ReLU, and an optional 2x2 max-pooling; forward
//! in training mode (the batch's statistics) or evaluation mode (the running
//! ones), and backward in training mode.
//!
//! Batch normalisation follows PyTorch (and the burn tier, `nn::layers::batch_norm`):
//! `y = γ (z − μ) / √(σ² + ε) + β` with the batch's mean `μ` and biased
//! variance `σ²`, `ε = 1e-5`; the running statistics move by momentum 0.1
//! towards the batch mean and the unbiased variance ([`running_update`]).

use std::ops::Range;

use crate::cnn::conv::Conv;
use crate::cnn::conv_path::ConvPath;
use crate::cnn::layers::relu_backward;
use crate::cnn::pool::{pool_forward, pool_relu_backward};

/// PyTorch's batch-norm `ε`.
pub const BN_EPS: f32 = 1e-5;
/// PyTorch's batch-norm running-statistics momentum.
pub const BN_MOMENTUM: f32 = 0.1;

/// A block's shape and where its five tensors sit in the flat vector.
pub(super) struct Block {
    /// Its tensors' name prefix (`{name}.conv.weight`, `{name}.bn.*`).
    pub name: &'static str,
    /// The convolution (its `out_h x out_w` are the strided positions).
    pub conv: Conv,
    /// Output channels.
    pub cout: usize,
    /// Whether a 2x2 max-pooling follows.
    pub pool: bool,
    /// How the convolution runs.
    pub path: ConvPath,
    /// Whether the block's output is its ReLU's plus the output of the block
    /// two before (the end of a residual pair).
    pub residual: bool,
    /// Offset of the convolution's filters (`[cout, 3, 3, cin]`), followed by
    /// the scale, the shift, the running mean and the running variance.
    pub at: usize,
}

impl Block {
    /// The filters' range.
    pub fn filters(&self) -> Range<usize> {
        self.at..self.at + self.cout * self.conv.patch()
    }

    /// The range of tensor `t` after the filters (0: scale, 1: shift,
    /// 2: running mean, 3: running variance).
    pub fn vector(&self, t: usize) -> Range<usize> {
        let start = self.filters().end + t * self.cout;
        start..start + self.cout
    }

    /// Where the next block's tensors start.
    pub fn end(&self) -> usize {
        self.vector(3).end
    }

    /// Scratch values the convolution's passes over `n` images need.
    pub fn scratch_len(&self, n: usize) -> usize {
        self.path.scratch_len(&self.conv, self.cout, n)
    }

    /// Values of one image after the convolution (and before pooling).
    pub fn conv_len(&self) -> usize {
        self.conv.positions() * self.cout
    }

    /// Values of one image at the block's output.
    pub fn out_len(&self) -> usize {
        if self.pool {
            (self.conv.out_h / 2) * (self.conv.out_w / 2) * self.cout
        } else {
            self.conv_len()
        }
    }
}

/// Which statistics batch normalisation uses.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Mode {
    /// The batch's (training, and the loss that gradients differentiate).
    Batch,
    /// The running ones (evaluation).
    Running,
}

/// A block's buffers of one forward pass, kept for the backward pass.
pub(super) struct Saved<'a> {
    /// The normalised values `(z − μ) / √(σ² + ε)` (training mode only).
    pub xhat: &'a mut [f32],
    /// The ReLU's output.
    pub a: &'a mut [f32],
    /// The pooled output and the index of each maximum (empty without pooling).
    pub pooled: &'a mut [f32],
    pub idx: &'a mut [f32],
    /// The batch's mean and biased variance per channel (training mode).
    pub mean: &'a mut [f32],
    pub var: &'a mut [f32],
}

/// The block over `n` images `x`, with `cols` as scratch.
pub(super) fn forward(
    b: &Block,
    params: &[f32],
    x: &[f32],
    n: usize,
    cols: &mut [f32],
    s: &mut Saved<'_>,
    mode: Mode,
) {
    let w = &params[b.filters()];
    b.path.forward(&b.conv, x, w, n, cols, s.a);
    if mode == Mode::Batch {
        batch_statistics(s.a, s.mean, s.var);
    } else {
        s.mean.copy_from_slice(&params[b.vector(2)]);
        s.var.copy_from_slice(&params[b.vector(3)]);
    }
    let std: Vec<f32> = s.var.iter().map(|v| (v + BN_EPS).sqrt()).collect();
    let (gamma, beta) = (&params[b.vector(0)], &params[b.vector(1)]);
    let c = b.cout;
    for (r, row) in s.a.chunks_exact_mut(c).enumerate() {
        for ch in 0..c {
            let xh = (row[ch] - s.mean[ch]) / std[ch];
            if mode == Mode::Batch {
                s.xhat[r * c + ch] = xh;
            }
            row[ch] = (xh * gamma[ch] + beta[ch]).max(0.0);
        }
    }
    if b.pool {
        let conv = &b.conv;
        pool_forward(conv.out_h, conv.out_w, c, n, s.a, s.pooled, s.idx);
    }
}

/// The mean and biased variance of each column of `z` (rows of `mean.len()`
/// values), accumulated in `f64`.
fn batch_statistics(z: &[f32], mean: &mut [f32], var: &mut [f32]) {
    let c = mean.len();
    let rows = (z.len() / c.max(1)).max(1) as f64;
    let mut acc = vec![0.0f64; c];
    for row in z.chunks_exact(c) {
        for (a, v) in acc.iter_mut().zip(row) {
            *a += f64::from(*v);
        }
    }
    for (m, a) in mean.iter_mut().zip(&acc) {
        *m = (a / rows) as f32;
    }
    acc.fill(0.0);
    for row in z.chunks_exact(c) {
        for ((a, v), m) in acc.iter_mut().zip(row).zip(mean.iter()) {
            let d = f64::from(*v) - f64::from(*m);
            *a += d * d;
        }
    }
    for (s, a) in var.iter_mut().zip(&acc) {
        *s = (a / rows) as f32;
    }
}

/// The backward pass of a block run forward in training mode: `dout` is the
/// loss's gradient at the block's output; writes the gradients of the
/// filters, the scale and the shift into `grad` (the running statistics'
/// entries are left alone) and, when `dx` is given, the gradient at the
/// block's input `x`. `cols` and `dz` are scratch.
#[allow(clippy::too_many_arguments)]
pub(super) fn backward(
    b: &Block,
    params: &[f32],
    x: &[f32],
    n: usize,
    s: &Saved<'_>,
    dout: &[f32],
    grad: &mut [f32],
    cols: &mut [f32],
    dz: &mut [f32],
    dx: Option<&mut [f32]>,
) {
    let rows = n * b.conv.positions();
    let dz = &mut dz[..rows * b.cout];
    if b.pool {
        pool_relu_backward(dout, s.idx, s.pooled, dz);
    } else {
        dz.copy_from_slice(dout);
        relu_backward(dz, s.a);
    }
    let (dgamma, rest) = grad[b.vector(0).start..b.vector(2).start].split_at_mut(b.cout);
    norm_backward(dz, s.xhat, &params[b.vector(0)], s.var, dgamma, rest);
    let (w, gw) = (&params[b.filters()], &mut grad[b.filters()]);
    b.path.backward(&b.conv, x, dz, w, n, 1.0, cols, gw, dx);
}

/// Batch normalisation's backward pass in place: `d` holds the gradient at
/// its output `y = γ x̂ + β` and becomes the gradient at its input `z`;
/// writes the gradients of `γ` and `β`.
fn norm_backward(
    d: &mut [f32],
    xhat: &[f32],
    gamma: &[f32],
    var: &[f32],
    dgamma: &mut [f32],
    dbeta: &mut [f32],
) {
    let c = gamma.len();
    let rows = (d.len() / c.max(1)).max(1);
    let (mut sum_d, mut sum_dx) = (vec![0.0f64; c], vec![0.0f64; c]);
    for (row, xrow) in d.chunks_exact(c).zip(xhat.chunks_exact(c)) {
        for ch in 0..c {
            sum_d[ch] += f64::from(row[ch]);
            sum_dx[ch] += f64::from(row[ch]) * f64::from(xrow[ch]);
        }
    }
    let inv_rows = 1.0 / rows as f64;
    let mut k = vec![0.0f32; c];
    let (mut mean_d, mut mean_dx) = (vec![0.0f32; c], vec![0.0f32; c]);
    for ch in 0..c {
        dbeta[ch] = sum_d[ch] as f32;
        dgamma[ch] = sum_dx[ch] as f32;
        k[ch] = gamma[ch] / (var[ch] + BN_EPS).sqrt();
        mean_d[ch] = (sum_d[ch] * inv_rows) as f32;
        mean_dx[ch] = (sum_dx[ch] * inv_rows) as f32;
    }
    for (row, xrow) in d.chunks_exact_mut(c).zip(xhat.chunks_exact(c)) {
        for ch in 0..c {
            row[ch] = k[ch] * (row[ch] - mean_d[ch] - xrow[ch] * mean_dx[ch]);
        }
    }
}

/// The new running statistics of a block after a training step whose batch
/// of `rows` positions had `mean` and biased variance `var`: `(1 − m) r +
/// m b`, towards the mean and the unbiased variance.
pub(super) fn running_update(
    b: &Block,
    params: &mut [f32],
    mean: &[f32],
    var: &[f32],
    rows: usize,
) {
    let unbiased = rows as f32 / (rows.max(2) - 1) as f32;
    let keep = 1.0 - BN_MOMENTUM;
    for (r, m) in params[b.vector(2)].iter_mut().zip(mean) {
        *r = *r * keep + m * BN_MOMENTUM;
    }
    for (r, v) in params[b.vector(3)].iter_mut().zip(var) {
        *r = *r * keep + (v * unbiased) * BN_MOMENTUM;
    }
}
