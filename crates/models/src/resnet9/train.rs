//! ResNet9's local training: [`fedcluster_core::train`]'s full-batch
//! gradient descent and minibatch loop (the same minibatches and
//! augmentation draws, the same update formulas), with what batch
//! normalisation adds, as the burn tier's loops do: the optimizer moves the
//! trainable tensors only, and after each step every running statistic moves
//! towards the step's batch statistics.

use std::ops::Range;

use fedcluster_core::params::{all_finite, axpy};
use fedcluster_core::train::minibatch::{gather_features, next_rows, update_coordinates};
use fedcluster_core::train::{MinibatchSpec, OptimizerState, Pull};
use fedcluster_core::{Batch, Model, Rng, Workspace};

use super::ResNet9;

/// `steps` full-batch gradient steps of size `lr` (running statistics
/// updated after each); returns the loss at the start, non-finite (with
/// `params` at the last finite iterate) if training diverged.
pub(super) fn full_batch(
    model: &ResNet9,
    params: &mut [f32],
    batch: Batch<'_>,
    lr: f32,
    steps: usize,
    ws: &mut Workspace,
) -> f64 {
    let Some(y) = model.targets(batch) else {
        return f64::NAN;
    };
    if steps == 0 {
        return model.loss(params, batch, ws);
    }
    let mut grad = std::mem::take(&mut ws.grad);
    grad.resize(params.len(), 0.0);
    let mut first = f64::NAN;
    for step in 0..steps {
        let loss = model.batch_pass(params, batch.x, y, Some(&mut grad), ws);
        if !loss.is_finite() || !all_finite(&grad) {
            first = f64::NAN;
            break;
        }
        if step == 0 {
            first = loss;
        }
        axpy(-lr, &grad, params);
        model.update_running(params, y.len(), ws);
    }
    ws.grad = grad;
    if all_finite(params) { first } else { f64::NAN }
}

/// The ranges of the trainable tensors (all but the running statistics).
fn trainable(model: &ResNet9) -> Vec<Range<usize>> {
    let mut out: Vec<Range<usize>> = model
        .blocks()
        .iter()
        .map(|b| b.filters().start..b.vector(1).end)
        .collect();
    out.push(model.head_at()..model.num_params());
    out
}

/// `steps` minibatch steps of `spec`, as
/// [`fedcluster_core::train::minibatch::flat_steps`] draws and takes them.
#[allow(clippy::too_many_arguments)]
pub(super) fn minibatch(
    model: &ResNet9,
    params: &mut [f32],
    batch: Batch<'_>,
    spec: &MinibatchSpec<'_>,
    steps: usize,
    state: &mut OptimizerState,
    rng: &mut Rng,
    ws: &mut Workspace,
) -> f64 {
    let Some(y) = model.targets(batch) else {
        return f64::NAN;
    };
    let (n, d) = (y.len(), batch.dim);
    state.ready(spec.optimizer, params.len());
    if steps == 0 {
        return model.loss(params, batch, ws);
    }
    let ranges = trainable(model);
    let augmentation = model.augmentation;
    let size = spec.batch_size.clamp(1, n);
    let mut scratch = std::mem::take(&mut ws.minibatch);
    let mut grad = std::mem::take(&mut ws.grad);
    grad.resize(params.len(), 0.0);
    let order = &mut scratch.order;
    order.clear();
    order.extend(0..n);
    let mut cursor = n; // start with a fresh shuffle
    let mut first = f64::NAN;
    for step in 0..steps {
        let rows = next_rows(order, &mut cursor, size, rng);
        scratch.x.clear();
        gather_features(batch, rows, augmentation.as_ref(), rng, &mut scratch.x);
        scratch.y_class.clear();
        scratch.y_class.extend(rows.iter().map(|&r| y[r]));
        let m = rows.len();
        let loss = model.batch_pass(
            params,
            &scratch.x[..m * d],
            &scratch.y_class,
            Some(&mut grad),
            ws,
        );
        if step == 0 {
            first = loss;
        }
        if !loss.is_finite() || !all_finite(&grad) {
            first = f64::NAN;
            break;
        }
        if let Some(Pull { mu, centre }) = spec.pull {
            for r in &ranges {
                for i in r.clone() {
                    grad[i] += mu * (params[i] - centre[i]);
                }
            }
        }
        state.t += 1;
        for r in &ranges {
            update_coordinates(spec, state, r.clone(), params, &grad);
        }
        model.update_running(params, m, ws);
    }
    ws.grad = grad;
    ws.minibatch = scratch;
    if all_finite(params) { first } else { f64::NAN }
}
