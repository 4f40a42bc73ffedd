//! Training on a per-sample weighted loss `L_w(θ) = (1/n) Σ_i w_i ℓ_i(θ)`,
//! the loss FedEM's and FedRC's clients train each mixture component on (`w_i`
//! the sample's responsibility for the component; Marfoq et al.'s code
//! `(loss_vec @ weights) / n`).
//!
//! - [`descent`]: full-batch gradient descent on `L_w`. [`Model::loss_grad`]
//!   gives a batch's mean only, so the weighted gradient is summed one sample
//!   at a time (samples of weight 0 are skipped): exact, at the price of a
//!   per-sample pass.
//! - [`minibatch_steps`]: SGD or Adam on minibatches whose rows are drawn with
//!   replacement in proportion to `w_i`; each minibatch's mean gradient times
//!   `Σ_i w_i / n` is an unbiased estimate of `∇L_w`, and it runs on the
//!   model's ordinary batched [`Model::loss_grad`]. It is always the flat loop
//!   (a model's own device loop, [`Model::train_minibatch`], draws uniform
//!   minibatches and is not used).
//!
//! The unweighted loops are untouched: nothing here is on their path.
//! Weights must be finite and `>= 0`; otherwise the loops return NaN and leave
//! `params` as they were (divergence is the caller's to report).
//!
//! [`Model::loss_grad`]: crate::Model::loss_grad
//! [`Model::train_minibatch`]: crate::Model::train_minibatch

use rand::Rng as _;

use super::minibatch::{gather_features, gather_targets, update};
use super::{MinibatchSpec, OptimizerState, Pull};
use crate::model::{Batch, MinibatchScratch, Model, Workspace};
use crate::params::{all_finite, axpy};
use crate::rng::Rng;

/// Whether every weight is finite and `>= 0`, and there is one per sample.
fn valid(weights: &[f32], batch: Batch<'_>) -> bool {
    weights.len() == batch.len() && weights.iter().all(|w| w.is_finite() && *w >= 0.0)
}

/// `L_w(θ)`: the weighted loss, one sample at a time.
pub fn weighted_loss(
    model: &dyn Model,
    params: &[f32],
    batch: Batch<'_>,
    weights: &[f32],
    ws: &mut Workspace,
) -> f64 {
    if !valid(weights, batch) {
        return f64::NAN;
    }
    let mut sum = 0.0f64;
    for (i, &w) in weights.iter().enumerate() {
        if w > 0.0 {
            sum += f64::from(w) * model.loss(params, batch.rows(i, i + 1), ws);
        }
    }
    sum / batch.len().max(1) as f64
}

/// `L_w(θ)` and its gradient into `grad`, summed one sample at a time with
/// `row_grad` as scratch (both `num_params` long).
pub fn weighted_loss_grad(
    model: &dyn Model,
    params: &[f32],
    batch: Batch<'_>,
    weights: &[f32],
    grad: &mut [f32],
    row_grad: &mut [f32],
    ws: &mut Workspace,
) -> f64 {
    grad.fill(0.0);
    if !valid(weights, batch) {
        return f64::NAN;
    }
    let n = batch.len().max(1) as f32;
    let mut sum = 0.0f64;
    for (i, &w) in weights.iter().enumerate() {
        if w > 0.0 {
            let loss = model.loss_grad(params, batch.rows(i, i + 1), row_grad, ws);
            if !loss.is_finite() {
                return loss;
            }
            sum += f64::from(w) * loss;
            axpy(w / n, row_grad, grad);
        }
    }
    sum / f64::from(n)
}

/// `steps` full-batch gradient-descent steps `θ ← θ − lr · ∇L_w(θ)`, with
/// `grad` as scratch. Returns `L_w` at the start; non-finite values stop the
/// loop as in [`super::full_batch::gradient_descent`], so a finite return
/// vouches for finite parameters.
#[allow(clippy::too_many_arguments)]
pub fn descent(
    model: &dyn Model,
    params: &mut [f32],
    batch: Batch<'_>,
    weights: &[f32],
    lr: f32,
    steps: usize,
    grad: &mut [f32],
    ws: &mut Workspace,
) -> f64 {
    if steps == 0 || !valid(weights, batch) {
        return weighted_loss(model, params, batch, weights, ws);
    }
    let mut row_grad = vec![0.0f32; params.len()];
    let mut start = f64::NAN;
    for step in 0..steps {
        let loss = weighted_loss_grad(model, params, batch, weights, grad, &mut row_grad, ws);
        if !loss.is_finite() {
            return loss;
        }
        if !all_finite(grad) {
            return f64::NAN;
        }
        if step == 0 {
            start = loss;
        }
        axpy(-lr, grad, params);
    }
    if all_finite(params) { start } else { f64::NAN }
}

/// `size` row indices drawn with replacement, row `i` with probability
/// `w_i / Σ w` (`cumulative` holds the running sums of the weights), into
/// `rows`.
pub fn draw_rows(cumulative: &[f64], size: usize, rng: &mut Rng, rows: &mut Vec<usize>) {
    rows.clear();
    let Some(&total) = cumulative.last() else {
        return;
    };
    let last = cumulative.len() - 1;
    rows.extend((0..size).map(|_| {
        let u = rng.random::<f64>() * total;
        cumulative.partition_point(|&c| c <= u).min(last)
    }));
}

/// `steps` minibatch steps of `spec` on `L_w`, continuing `state`: each
/// minibatch's `spec.batch_size` rows drawn in proportion to the weights
/// ([`draw_rows`], augmented as in the unweighted loop), its mean gradient
/// scaled by `Σ w / n`. Returns the first minibatch's loss times that scale
/// (an estimate of `L_w` at the start), non-finite (and `params` left at the
/// last finite iterate) if training diverged. All weights zero: no step, and
/// the loss 0.
#[allow(clippy::too_many_arguments)]
pub fn minibatch_steps(
    model: &dyn Model,
    params: &mut [f32],
    batch: Batch<'_>,
    weights: &[f32],
    spec: &MinibatchSpec<'_>,
    steps: usize,
    state: &mut OptimizerState,
    rng: &mut Rng,
    ws: &mut Workspace,
) -> f64 {
    let (n, p, d) = (batch.len(), params.len(), batch.dim);
    state.ready(spec.optimizer, p);
    if !valid(weights, batch) {
        return f64::NAN;
    }
    let cumulative: Vec<f64> = weights
        .iter()
        .scan(0.0f64, |sum, &w| {
            *sum += f64::from(w);
            Some(*sum)
        })
        .collect();
    let total = cumulative.last().copied().unwrap_or(0.0);
    if n == 0 || steps == 0 || total <= 0.0 {
        return weighted_loss(model, params, batch, weights, ws);
    }
    let scale = (total / n as f64) as f32;
    let augmentation = model.augmentation();
    let size = spec.batch_size.clamp(1, n);
    let mut scratch = std::mem::take(&mut ws.minibatch);
    let MinibatchScratch {
        order: rows,
        x,
        y_real,
        y_class,
    } = &mut scratch;
    let mut grad = std::mem::take(&mut ws.grad);
    grad.resize(p, 0.0);
    let mut first = f64::NAN;
    for step in 0..steps {
        draw_rows(&cumulative, size, rng, rows);
        x.clear();
        gather_features(batch, rows, augmentation.as_ref(), rng, x);
        let targets = gather_targets(batch.y, rows, y_real, y_class);
        let mini = Batch {
            x,
            y: targets,
            dim: d,
        };
        let loss = model.loss_grad(params, mini, &mut grad, ws);
        if step == 0 {
            first = loss * f64::from(scale);
        }
        if !loss.is_finite() || !all_finite(&grad) {
            first = f64::NAN;
            break;
        }
        grad.iter_mut().for_each(|g| *g *= scale);
        if let Some(Pull { mu, centre }) = spec.pull {
            for ((g, w), c) in grad.iter_mut().zip(params.iter()).zip(centre) {
                *g += mu * (w - c);
            }
        }
        update(spec, params, &grad, state);
    }
    ws.grad = grad;
    ws.minibatch = scratch;
    if all_finite(params) { first } else { f64::NAN }
}

#[cfg(test)]
mod tests;
