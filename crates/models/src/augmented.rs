//! [`Augmented`]: any model whose local training augments its input images
//! (the flat minibatch loop reads [`Model::augmentation`]); every other method
//! is the inner model's, fast paths included.

use fedcluster_core::local::{Augmentation, MinibatchSpec, OptimizerState};
use fedcluster_core::{Batch, Model, Rng, Workspace};

/// `inner`, training with `augmentation`.
pub struct Augmented {
    /// The model.
    pub inner: Box<dyn Model>,
    /// Its augmentation.
    pub augmentation: Augmentation,
}

impl Model for Augmented {
    fn name(&self) -> &'static str {
        self.inner.name()
    }
    fn num_params(&self) -> usize {
        self.inner.num_params()
    }
    fn input_dim(&self) -> usize {
        self.inner.input_dim()
    }
    fn init(&self, rng: &mut Rng, out: &mut [f32]) {
        self.inner.init(rng, out)
    }
    fn loss(&self, params: &[f32], batch: Batch<'_>, ws: &mut Workspace) -> f64 {
        self.inner.loss(params, batch, ws)
    }
    fn loss_grad(
        &self,
        params: &[f32],
        batch: Batch<'_>,
        grad: &mut [f32],
        ws: &mut Workspace,
    ) -> f64 {
        self.inner.loss_grad(params, batch, grad, ws)
    }
    fn count_correct(&self, params: &[f32], batch: Batch<'_>, ws: &mut Workspace) -> Option<usize> {
        self.inner.count_correct(params, batch, ws)
    }
    fn forward_flops_per_sample(&self) -> u64 {
        self.inner.forward_flops_per_sample()
    }
    fn head_start(&self) -> usize {
        self.inner.head_start()
    }
    fn augmentation(&self) -> Option<Augmentation> {
        Some(self.augmentation)
    }
    fn losses(&self, models: &[f32], batch: Batch<'_>, out: &mut [f64], ws: &mut Workspace) {
        self.inner.losses(models, batch, out, ws)
    }
    fn train(
        &self,
        params: &mut [f32],
        batch: Batch<'_>,
        lr: f32,
        steps: usize,
        ws: &mut Workspace,
    ) -> f64 {
        self.inner.train(params, batch, lr, steps, ws)
    }
    fn train_momentum(
        &self,
        params: &mut [f32],
        velocity: &mut [f32],
        batch: Batch<'_>,
        lr: f32,
        beta: f32,
        steps: usize,
        ws: &mut Workspace,
    ) -> f64 {
        self.inner
            .train_momentum(params, velocity, batch, lr, beta, steps, ws)
    }
    fn assign_and_train(
        &self,
        models: &[f32],
        group: usize,
        batch: Batch<'_>,
        lrs: &[f32],
        steps: usize,
        losses: &mut [f64],
        chosen: &mut [usize],
        out: &mut [f32],
        ws: &mut Workspace,
    ) -> Vec<f64> {
        self.inner
            .assign_and_train(models, group, batch, lrs, steps, losses, chosen, out, ws)
    }
    fn assign_and_grad(
        &self,
        models: &[f32],
        group: usize,
        batch: Batch<'_>,
        losses: &mut [f64],
        chosen: &mut [usize],
        grads: &mut [f32],
        ws: &mut Workspace,
    ) {
        self.inner
            .assign_and_grad(models, group, batch, losses, chosen, grads, ws)
    }
    fn train_minibatch(
        &self,
        _params: &mut [f32],
        _batch: Batch<'_>,
        _spec: &MinibatchSpec<'_>,
        _steps: usize,
        _state: &mut OptimizerState,
        _rng: &mut Rng,
        _ws: &mut Workspace,
    ) -> Option<f64> {
        // The flat loop, which reads this wrapper's augmentation.
        None
    }
}
