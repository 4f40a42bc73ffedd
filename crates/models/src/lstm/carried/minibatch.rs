//! [`CarriedLstm`]'s minibatch step, [`CarriedPass`], for
//! `fedcluster_core::train::minibatch`'s loop (the flat loop's minibatches,
//! augmentation-free draws and update formulas): each minibatch's windows
//! start from the last states of the previous minibatch's (zeros at the
//! first and after a change of size; detached).

use fedcluster_core::train::minibatch::{Gather, MinibatchPass, gather_classes, gather_features};
use fedcluster_core::{Batch, Model, Rng, Workspace};

use super::CarriedLstm;
use super::state::Carry;

/// The carried-state step on a batch whose labels fit, over one local
/// training's [`Carry`] (lent by `with_carry` around the whole loop; with no
/// step to take, the loop's whole-batch evaluation lends itself a buffer of
/// its own).
pub(super) struct CarriedPass<'a, 'b> {
    model: &'a CarriedLstm,
    batch: Batch<'b>,
    y: &'b [u32],
    carry: &'a mut Carry,
}

impl<'a, 'b> CarriedPass<'a, 'b> {
    /// The step on `batch` (labels `y`), carrying the state in `carry`.
    pub(super) fn new(
        model: &'a CarriedLstm,
        batch: Batch<'b>,
        y: &'b [u32],
        carry: &'a mut Carry,
    ) -> Self {
        Self {
            model,
            batch,
            y,
            carry,
        }
    }
}

impl MinibatchPass for CarriedPass<'_, '_> {
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
        gather_features(self.batch, mini.rows, None, rng, mini.x);
        gather_classes(self.y, mini.rows, mini.y_class);
        let start = self.carry.for_batch(mini.rows.len());
        let net = self.model.net();
        net.batch_loss_grad(params, mini.x, mini.y_class, grad, ws, Some(start))
    }
}
