//! [`TfCifarCnn`]'s minibatch step, [`StagedPass`], for
//! `fedcluster_core::train::minibatch`'s loop ([`run_steps`]: its order,
//! draws and update, the schedule and the decay of chosen tensors included):
//! each gathered raw image goes through the training stage
//! ([`InputStage::train`]: the augmentation's offset and flip, a drawn
//! window, the jitter on the window, the standardisation) before the network
//! sees it. With the window the whole image and no augmentation it takes the
//! flat loop's steps exactly (tested).
//!
//! [`InputStage::train`]: fedcluster_core::train::InputStage::train
//! [`run_steps`]: fedcluster_core::train::minibatch::run_steps

use fedcluster_core::train::minibatch::{Gather, MinibatchPass, gather_classes};
use fedcluster_core::{Batch, Model, Rng, Workspace};

use super::TfCifarCnn;
use super::pass::Images;

/// The network's step on a batch whose labels fit it.
pub(super) struct StagedPass<'m, 'b> {
    model: &'m TfCifarCnn,
    batch: Batch<'b>,
    y: &'b [u32],
}

impl<'m, 'b> StagedPass<'m, 'b> {
    /// The step on `batch`; `None` if the batch does not fit the network.
    pub(super) fn new(model: &'m TfCifarCnn, batch: Batch<'b>) -> Option<Self> {
        let y = model.targets(batch)?;
        Some(Self { model, batch, y })
    }
}

impl MinibatchPass for StagedPass<'_, '_> {
    fn source(&self) -> (&dyn Model, Batch<'_>) {
        (self.model, self.batch)
    }

    /// The raw images staged into `x` (`y_real` the stage's scratch).
    fn loss_grad(
        &mut self,
        params: &[f32],
        mini: Gather<'_>,
        rng: &mut Rng,
        grad: &mut [f32],
        ws: &mut Workspace,
    ) -> f64 {
        let Gather {
            rows,
            x,
            y_real: raw,
            y_class,
        } = mini;
        let (model, d) = (self.model, self.batch.dim);
        for &r in rows {
            let src = &self.batch.x[r * d..(r + 1) * d];
            model
                .stage
                .train(src, model.augmentation.as_ref(), rng, raw, x);
        }
        gather_classes(self.y, rows, y_class);
        model
            .pass(params, Images::Staged(x), y_class, Some(grad), ws)
            .0
    }
}
