//! ResNet9's local training: [`fedcluster_core::train`]'s full-batch
//! gradient descent, and its minibatch loop run with [`NormPass`] (the same
//! minibatches and augmentation draws, the same update formulas), with what batch
//! normalisation adds, as the burn tier's loops do: the optimizer moves the
//! trainable tensors only, and after each step every running statistic moves
//! towards the step's batch statistics.

use std::ops::Range;

use fedcluster_core::params::{all_finite, axpy};
use fedcluster_core::train::minibatch::{
    Gather, MinibatchPass, add_pull, gather_classes, gather_features, update_coordinates,
};
use fedcluster_core::train::{MinibatchSpec, OptimizerState};
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

/// ResNet9's minibatch step, for [`run_steps`]: the flat loop's gather
/// (the same augmentation draws) through the training pass, the optimizer
/// (and the proximal pull) on the trainable tensors only, then every running
/// statistic moved towards the step's batch statistics.
///
/// [`run_steps`]: fedcluster_core::train::minibatch::run_steps
pub(super) struct NormPass<'m, 'b> {
    model: &'m ResNet9,
    batch: Batch<'b>,
    y: &'b [u32],
    trainable: Vec<Range<usize>>,
}

impl<'m, 'b> NormPass<'m, 'b> {
    /// The step on `batch`; `None` if the batch does not fit the network.
    pub(super) fn new(model: &'m ResNet9, batch: Batch<'b>) -> Option<Self> {
        let y = model.targets(batch)?;
        let trainable = trainable(model);
        Some(Self {
            model,
            batch,
            y,
            trainable,
        })
    }
}

impl MinibatchPass for NormPass<'_, '_> {
    fn source(&self) -> (&dyn Model, Batch<'_>) {
        (self.model, self.batch)
    }

    fn loss_grad(
        &mut self,
        params: &[f32],
        mini: Gather<'_>,
        rng: &mut Rng,
        grad: &mut [f32],
        ws: &mut Workspace,
    ) -> f64 {
        let augmentation = self.model.augmentation.as_ref();
        gather_features(self.batch, mini.rows, augmentation, rng, mini.x);
        gather_classes(self.y, mini.rows, mini.y_class);
        self.model
            .batch_pass(params, mini.x, mini.y_class, Some(grad), ws)
    }

    fn step(
        &mut self,
        spec: &MinibatchSpec<'_>,
        params: &mut [f32],
        grad: &mut [f32],
        state: &mut OptimizerState,
        rows: usize,
        ws: &mut Workspace,
    ) {
        for r in &self.trainable {
            add_pull(spec, r.clone(), params, grad);
        }
        state.t += 1;
        for r in &self.trainable {
            update_coordinates(spec, state, r.clone(), params, grad);
        }
        self.model.update_running(params, rows, ws);
    }
}
