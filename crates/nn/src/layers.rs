//! Layers as functions of tensors and parameter leaves, in the layouts of the
//! native models and of PyTorch: dense weights `[out, in]`; images
//! channels-last (`[n, height, width, channels]`); convolution filters
//! `[out, ky, kx, in]`, computed as im2col and one matmul (burn's own CPU
//! convolution backward is about 15x slower); LSTM gates in PyTorch's order
//! `i, f, g, o` with its two biases.

use burn::tensor::activation::{log_softmax, relu, tanh};
use burn::tensor::backend::Backend;
use burn::tensor::{ElementConversion, Int, Tensor};
use fedcluster_core::ImageShape;

/// `x · Wᵀ + b` for `x` of shape `[n, in]` and `w` holding `[out, in]`.
pub fn dense<B: Backend>(
    x: Tensor<B, 2>,
    w: &Tensor<B, 1>,
    b: Option<&Tensor<B, 1>>,
) -> Tensor<B, 2> {
    let [_, input] = x.dims();
    let out = w.dims()[0] / input.max(1);
    let y = x.matmul(w.clone().reshape([out, input]).transpose());
    match b {
        Some(b) => y + b.clone().reshape([1, out]),
        None => y,
    }
}

/// The rows of `x` (`[n, h·w·c]`) as channels-last images `[n, h, w, c]`.
pub fn images<B: Backend>(x: Tensor<B, 2>, shape: ImageShape) -> Tensor<B, 4> {
    let [n, _] = x.dims();
    x.reshape([n, shape.height, shape.width, shape.channels])
}

/// Zero padding of `pad` rows and columns on every side of channels-last images.
fn pad_images<B: Backend>(x: Tensor<B, 4>, pad: usize) -> Tensor<B, 4> {
    if pad == 0 {
        return x;
    }
    let [n, h, w, c] = x.dims();
    // Zeros of the input's own type and device.
    let rows = x
        .clone()
        .slice([0..n, 0..1, 0..w, 0..c])
        .zeros_like()
        .repeat_dim(1, pad);
    let x = Tensor::cat(vec![rows.clone(), x, rows], 1);
    let cols = x
        .clone()
        .slice([0..n, 0..h + 2 * pad, 0..1, 0..c])
        .zeros_like()
        .repeat_dim(2, pad);
    Tensor::cat(vec![cols.clone(), x, cols], 2)
}

/// A `k x k` convolution, stride 1, zero padding `pad`, of channels-last images
/// `x` (`[n, h, w, c]`) with filters `w` (`[out, k, k, c]`, patches in `(ky, kx,
/// c)` order as the native CNN's) and an optional bias: im2col, then one matmul.
pub fn conv2d<B: Backend>(
    x: Tensor<B, 4>,
    w: &Tensor<B, 1>,
    b: Option<&Tensor<B, 1>>,
    k: usize,
    pad: usize,
) -> Tensor<B, 4> {
    let x = pad_images(x, pad);
    let [n, h, wd, c] = x.dims();
    let (ho, wo) = (h + 1 - k, wd + 1 - k);
    let mut cols = Vec::with_capacity(k * k);
    for ky in 0..k {
        for kx in 0..k {
            cols.push(x.clone().slice([0..n, ky..ky + ho, kx..kx + wo, 0..c]));
        }
    }
    let cols = Tensor::cat(cols, 3).reshape([n * ho * wo, k * k * c]);
    let y = dense(cols, w, b);
    let out = y.dims()[1];
    y.reshape([n, ho, wo, out])
}

/// 2x2 max-pooling, stride 2, of channels-last images (an odd last row or
/// column is dropped, as PyTorch's `MaxPool2d(2)` does).
pub fn max_pool2<B: Backend>(x: Tensor<B, 4>) -> Tensor<B, 4> {
    let [n, h, w, c] = x.dims();
    let (h2, w2) = (h / 2, w / 2);
    let x = if h % 2 == 1 || w % 2 == 1 {
        x.slice([0..n, 0..2 * h2, 0..2 * w2, 0..c])
    } else {
        x
    };
    let x: Tensor<B, 6> = x.reshape([n, h2, 2, w2, 2, c]);
    x.max_dim(4).max_dim(2).reshape([n, h2, w2, c])
}

/// Max over all positions of channels-last images: `[n, c]`.
pub fn global_max_pool<B: Backend>(x: Tensor<B, 4>) -> Tensor<B, 2> {
    let [n, h, w, c] = x.dims();
    x.reshape([n, h * w, c]).max_dim(1).reshape([n, c])
}

/// What batch normalisation does with its statistics.
pub enum Norm<'a, B: Backend> {
    /// Normalise with the batch's statistics (training) and push the updated
    /// running statistics, `(running-mean index, mean, unbiased variance)`, for
    /// the caller to apply.
    Batch(&'a mut Vec<(usize, Tensor<B, 1>, Tensor<B, 1>)>),
    /// Normalise with the batch's statistics, keep no update (gradients).
    BatchOnly,
    /// Normalise with the running statistics (evaluation).
    Running,
}

/// PyTorch's batch-norm `ε`.
pub const BN_EPS: f64 = 1e-5;
/// PyTorch's batch-norm running-statistics momentum.
pub const BN_MOMENTUM: f32 = 0.1;

/// Batch normalisation over every axis but the last (channels-last) of `x`:
/// scale `params[at]`, shift `params[at + 1]`, running mean and variance
/// `params[at + 2]` and `params[at + 3]`.
pub fn batch_norm<B: Backend, const D: usize>(
    x: Tensor<B, D>,
    params: &[Tensor<B, 1>],
    at: usize,
    mode: &mut Norm<'_, B>,
) -> Tensor<B, D> {
    let dims = x.dims();
    let c = dims[D - 1];
    let rows = x.shape().num_elements() / c.max(1);
    let flat: Tensor<B, 2> = x.reshape([rows, c]);
    let (mean, var) = match mode {
        Norm::Running => (
            params[at + 2].clone().reshape([1, c]),
            params[at + 3].clone().reshape([1, c]),
        ),
        Norm::Batch(_) | Norm::BatchOnly => {
            let mean = flat.clone().mean_dim(0);
            let centred = flat.clone() - mean.clone();
            let var = (centred.clone() * centred).mean_dim(0);
            if let Norm::Batch(updates) = mode {
                let unbiased = rows as f32 / (rows.max(2) - 1) as f32;
                updates.push((
                    at + 2,
                    mean.clone().detach().reshape([c]),
                    (var.clone().detach() * unbiased).reshape([c]),
                ));
            }
            (mean, var)
        }
    };
    let normed = (flat - mean) / (var + BN_EPS).sqrt();
    let y = normed * params[at].clone().reshape([1, c]) + params[at + 1].clone().reshape([1, c]);
    y.reshape(dims)
}

/// The new running statistic: `(1 − m) running + m batch`.
pub fn running_update<B: Backend>(running: Tensor<B, 1>, batch: Tensor<B, 1>) -> Tensor<B, 1> {
    running * (1.0 - BN_MOMENTUM) + batch * BN_MOMENTUM
}

/// Rows `ids` (`[n, t]` token ids) of the embedding table `table` (`[vocab,
/// dim]`): `[n, t, dim]`.
pub fn embedding<B: Backend>(
    ids: Tensor<B, 2, Int>,
    table: &Tensor<B, 1>,
    dim: usize,
) -> Tensor<B, 3> {
    let [n, t] = ids.dims();
    let vocab = table.dims()[0] / dim.max(1);
    table
        .clone()
        .reshape([vocab, dim])
        .select(0, ids.reshape([n * t]))
        .reshape([n, t, dim])
}

/// One LSTM layer over the sequence `x` (`[n, t, in]`) with PyTorch's
/// parameters `weight_ih` (`[4H, in]`), `weight_hh` (`[4H, H]`), `bias_ih`,
/// `bias_hh` (`[4H]`), gates `i, f, g, o`, from zero states; returns every
/// step's hidden state, `[n, t, H]`.
pub fn lstm<B: Backend>(x: Tensor<B, 3>, p: &[Tensor<B, 1>], hidden: usize) -> Tensor<B, 3> {
    let [n, t, input] = x.dims();
    let h4 = 4 * hidden;
    // All input projections at once: [n, t, 4H].
    let xw = dense(x.reshape([n * t, input]), &p[0], Some(&p[2])).reshape([n, t, h4]);
    let w_hh = p[1].clone().reshape([h4, hidden]).transpose();
    let b_hh = p[3].clone().reshape([1, h4]);
    // Zero states of the input's own type and device.
    let mut h: Tensor<B, 2> = xw
        .clone()
        .slice([0..n, 0..1, 0..hidden])
        .reshape([n, hidden])
        .zeros_like();
    let mut c = h.clone();
    let mut outputs = Vec::with_capacity(t);
    for step in 0..t {
        let gates = xw
            .clone()
            .slice([0..n, step..step + 1, 0..h4])
            .reshape([n, h4])
            + h.matmul(w_hh.clone())
            + b_hh.clone();
        let gate = |g: usize| gates.clone().slice([0..n, g * hidden..(g + 1) * hidden]);
        let (i, f, g, o) = (
            sigmoid(gate(0)),
            sigmoid(gate(1)),
            tanh(gate(2)),
            sigmoid(gate(3)),
        );
        c = f * c + i * g;
        h = o * tanh(c.clone());
        outputs.push(h.clone().reshape([n, 1, hidden]));
    }
    Tensor::cat(outputs, 1)
}

/// The logistic function `1 / (1 + e^{−x})`, from `exp` (burn 0.21's own
/// `sigmoid` loses precision on its f64 backend, which the exact gradient
/// checks need).
fn sigmoid<B: Backend, const D: usize>(x: Tensor<B, D>) -> Tensor<B, D> {
    (x.neg().exp() + 1.0).recip()
}

/// Mean cross-entropy of `logits` (`[n, classes]`) against class indices.
pub fn cross_entropy<B: Backend>(logits: Tensor<B, 2>, targets: Tensor<B, 1, Int>) -> Tensor<B, 1> {
    let [n, _] = logits.dims();
    let picked = log_softmax(logits, 1).gather(1, targets.reshape([n, 1]));
    picked.mean().neg()
}

/// How many rows of `logits` put their largest value on the target class.
pub fn correct<B: Backend>(logits: Tensor<B, 2>, targets: Tensor<B, 1, Int>) -> usize {
    let [n, _] = logits.dims();
    let hits = logits.argmax(1).reshape([n]).equal(targets).int().sum();
    hits.into_scalar().elem::<i64>().max(0) as usize
}

/// ReLU.
pub fn act<B: Backend, const D: usize>(x: Tensor<B, D>) -> Tensor<B, D> {
    relu(x)
}
