//! The one minibatch loop every CPU minibatch training runs: [`run_steps`]
//! over a [`MinibatchPass`], the model-specific part of a step.
//!
//! The loop owns what all of them share: the optimizer state made ready, no
//! step on an empty batch or for zero steps (the whole batch's loss then),
//! the visiting order ([`next_rows`]: a fresh shuffle first, a reshuffle at
//! each epoch's end), the gather buffers lent from the [`Workspace`] (so a
//! step allocates nothing), the first minibatch's loss as the result, the
//! stop at the first non-finite loss or gradient (`params` left at the last
//! finite iterate) and the final finite check. The pass gathers a
//! minibatch's rows and computes its loss and gradient (the flat loop's
//! [`Model::loss_grad`](crate::Model::loss_grad), a model's own staged or
//! state-carrying pass) and, where the default does not fit, takes the
//! optimizer step (batch normalisation's running statistics stepped apart).

use super::{next_rows, update};
use crate::model::train::{MinibatchSpec, OptimizerState, Pull};
use crate::model::{Batch, MinibatchScratch, Model, Workspace};
use crate::params::all_finite;
use crate::rng::Rng;

/// One minibatch to gather: its rows of the batch, in visiting order, and
/// the workspace's buffers to gather them into (`x` empty).
pub struct Gather<'s> {
    /// The minibatch's rows of the batch.
    pub rows: &'s [usize],
    /// Gathered feature rows (empty on entry).
    pub x: &'s mut Vec<f32>,
    /// Gathered real targets, or any other float scratch the pass needs.
    pub y_real: &'s mut Vec<f32>,
    /// Gathered class targets.
    pub y_class: &'s mut Vec<u32>,
}

/// The model-specific part of [`run_steps`]'s steps.
pub trait MinibatchPass {
    /// The model and the batch the minibatches are drawn from (with no step
    /// to take, [`run_steps`] returns the model's loss on the whole batch).
    fn source(&self) -> (&dyn Model, Batch<'_>);

    /// Gathers `mini`'s rows (any augmentation drawn from `rng`, in row
    /// order) and returns their mean loss at `params`, its gradient written
    /// into `grad`.
    fn loss_grad(
        &mut self,
        params: &[f32],
        mini: Gather<'_>,
        rng: &mut Rng,
        grad: &mut [f32],
        ws: &mut Workspace,
    ) -> f64;

    /// One optimizer step along `grad` (the proximal pull not yet in it),
    /// after a minibatch of `rows` rows: by default the pull on every
    /// coordinate, then [`update`] of them all.
    fn step(
        &mut self,
        spec: &MinibatchSpec<'_>,
        params: &mut [f32],
        grad: &mut [f32],
        state: &mut OptimizerState,
        rows: usize,
        ws: &mut Workspace,
    ) {
        let _ = (rows, ws);
        add_pull(spec, 0..params.len(), params, grad);
        update(spec, params, grad, state);
    }
}

/// Adds the proximal pull of `spec`, if any (`mu · (w − centre)`), to
/// `grad` on the coordinates `range`.
pub fn add_pull(
    spec: &MinibatchSpec<'_>,
    range: std::ops::Range<usize>,
    params: &[f32],
    grad: &mut [f32],
) {
    if let Some(Pull { mu, centre }) = spec.pull {
        let (g, w) = (&mut grad[range.clone()], &params[range.clone()]);
        for ((g, w), c) in g.iter_mut().zip(w).zip(centre.iter().skip(range.start)) {
            *g += mu * (w - c);
        }
    }
}

/// `steps` minibatch steps of `spec` through `pass` from `params`,
/// continuing `state`. Returns the mean loss of the first minibatch (the
/// model's alone), non-finite (and `params` left at the last finite iterate)
/// if training diverged; with no step to take (no points, or `steps` 0),
/// the model's loss on the whole batch.
pub fn run_steps(
    pass: &mut impl MinibatchPass,
    params: &mut [f32],
    spec: &MinibatchSpec<'_>,
    steps: usize,
    state: &mut OptimizerState,
    rng: &mut Rng,
    ws: &mut Workspace,
) -> f64 {
    let (model, batch) = pass.source();
    let (n, p) = (batch.len(), params.len());
    state.ready(spec.optimizer, p);
    if n == 0 || steps == 0 {
        return model.loss(params, batch, ws);
    }
    let size = spec.batch_size.clamp(1, n);
    let mut scratch = std::mem::take(&mut ws.minibatch);
    let MinibatchScratch {
        order,
        x,
        y_real,
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
        let m = rows.len();
        x.clear();
        let mini = Gather {
            rows,
            x,
            y_real,
            y_class,
        };
        let loss = pass.loss_grad(params, mini, rng, &mut grad, ws);
        if step == 0 {
            first = loss;
        }
        if !loss.is_finite() || !all_finite(&grad) {
            first = f64::NAN;
            break;
        }
        pass.step(spec, params, &mut grad, state, m, ws);
    }
    ws.grad = grad;
    ws.minibatch = scratch;
    if all_finite(params) { first } else { f64::NAN }
}

#[cfg(test)]
mod tests;
