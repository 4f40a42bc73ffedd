//! [`TfCifarCnn`]'s minibatch loop: `fedcluster_core::train::minibatch`'s
//! order, draws and update ([`next_rows`], [`update_coordinates`]: the
//! schedule and the decay of chosen tensors included), with each gathered
//! raw image put through the training stage ([`InputStage::train`]: the
//! augmentation's offset and flip, a drawn window, the jitter on the window,
//! the standardisation) before the network sees it. With the window the
//! whole image and no augmentation it takes the flat loop's steps exactly
//! (tested).
//!
//! [`InputStage::train`]: fedcluster_core::train::InputStage::train

use fedcluster_core::params::all_finite;
use fedcluster_core::train::minibatch::{next_rows, update_coordinates};
use fedcluster_core::train::{MinibatchSpec, OptimizerState, Pull};
use fedcluster_core::{Batch, MinibatchScratch, Model, Rng, Workspace};

use super::TfCifarCnn;
use super::pass::Images;

/// `steps` minibatch steps of `spec` from `params`, continuing `state`;
/// returns the loss of the first minibatch, non-finite (and `params` left at
/// the last finite iterate) if training diverged.
#[allow(clippy::too_many_arguments)]
pub(super) fn minibatch(
    model: &TfCifarCnn,
    params: &mut [f32],
    batch: Batch<'_>,
    spec: &MinibatchSpec<'_>,
    steps: usize,
    state: &mut OptimizerState,
    rng: &mut Rng,
    ws: &mut Workspace,
) -> f64 {
    let (n, p, d) = (batch.len(), params.len(), batch.dim);
    state.ready(spec.optimizer, p);
    let Some(y) = model.targets(batch) else {
        return f64::NAN;
    };
    if n == 0 || steps == 0 {
        return model.loss(params, batch, ws);
    }
    let size = spec.batch_size.clamp(1, n);
    let mut scratch = std::mem::take(&mut ws.minibatch);
    let MinibatchScratch {
        order,
        x,
        y_real: raw,
        y_class,
    } = &mut scratch;
    order.clear();
    order.extend(0..n);
    let mut cursor = n; // start with a fresh shuffle
    let mut grad = std::mem::take(&mut ws.grad);
    grad.resize(p, 0.0);
    let mut first = f64::NAN;
    for step in 0..steps {
        let rows = next_rows(order, &mut cursor, size, rng);
        x.clear();
        for &r in rows {
            let src = &batch.x[r * d..(r + 1) * d];
            model
                .stage
                .train(src, model.augmentation.as_ref(), rng, raw, x);
        }
        y_class.clear();
        y_class.extend(rows.iter().map(|&r| y[r]));
        let (loss, _) = model.pass(params, Images::Staged(x), y_class, Some(&mut grad), ws);
        if step == 0 {
            first = loss;
        }
        if !loss.is_finite() || !all_finite(&grad) {
            first = f64::NAN;
            break;
        }
        if let Some(Pull { mu, centre }) = spec.pull {
            for ((g, w), c) in grad.iter_mut().zip(params.iter()).zip(centre) {
                *g += mu * (w - c);
            }
        }
        state.t += 1;
        update_coordinates(spec, state, 0..p, params, &grad);
    }
    ws.grad = grad;
    ws.minibatch = scratch;
    if all_finite(params) { first } else { f64::NAN }
}
