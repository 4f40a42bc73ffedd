//! A model's head as a model of its own, its trunk frozen: IFCA's frozen
//! trunk (`freeze_trunk`), where clients train only the last layer.
//!
//! [`HeadOnly`] wraps a model and fixed values of its first `trunk.len()`
//! parameters (`[0, Model::head_start)`); its own parameters are the rest, and
//! its gradient is the wrapped model's restricted to them. Any local training
//! over it ([`crate::common::trainer::LocalTrainer`], the flat loops of
//! `fedcluster_core::train`) therefore moves the head alone, on the same
//! minibatch draws as over the whole model.

use fedcluster_core::train::Augmentation;
use fedcluster_core::{Batch, Model, Rng, Workspace};

/// `inner` with its first `trunk.len()` parameters fixed to `trunk`.
pub struct HeadOnly<'a> {
    inner: &'a dyn Model,
    trunk: &'a [f32],
}

impl<'a> HeadOnly<'a> {
    /// The head of `inner` behind the fixed `trunk` (no longer than the
    /// model's parameters).
    pub fn new(inner: &'a dyn Model, trunk: &'a [f32]) -> Self {
        let trunk = &trunk[..trunk.len().min(inner.num_params())];
        Self { inner, trunk }
    }

    /// The whole parameter vector: the trunk, then `head`.
    fn whole(&self, head: &[f32]) -> Vec<f32> {
        let mut whole = Vec::with_capacity(self.trunk.len() + head.len());
        whole.extend_from_slice(self.trunk);
        whole.extend_from_slice(head);
        whole
    }
}

impl Model for HeadOnly<'_> {
    fn name(&self) -> &'static str {
        self.inner.name()
    }

    fn num_params(&self) -> usize {
        self.inner.num_params() - self.trunk.len()
    }

    fn input_dim(&self) -> usize {
        self.inner.input_dim()
    }

    fn init(&self, rng: &mut Rng, out: &mut [f32]) {
        let mut whole = vec![0.0; self.inner.num_params()];
        self.inner.init(rng, &mut whole);
        out.copy_from_slice(&whole[self.trunk.len()..]);
    }

    fn loss(&self, params: &[f32], batch: Batch<'_>, ws: &mut Workspace) -> f64 {
        self.inner.loss(&self.whole(params), batch, ws)
    }

    fn loss_grad(
        &self,
        params: &[f32],
        batch: Batch<'_>,
        grad: &mut [f32],
        ws: &mut Workspace,
    ) -> f64 {
        let mut whole_grad = vec![0.0; self.inner.num_params()];
        let loss = self
            .inner
            .loss_grad(&self.whole(params), batch, &mut whole_grad, ws);
        grad.copy_from_slice(&whole_grad[self.trunk.len()..]);
        loss
    }

    fn count_correct(&self, params: &[f32], batch: Batch<'_>, ws: &mut Workspace) -> Option<usize> {
        self.inner.count_correct(&self.whole(params), batch, ws)
    }

    fn forward_flops_per_sample(&self) -> u64 {
        self.inner.forward_flops_per_sample()
    }

    fn augmentation(&self) -> Option<Augmentation> {
        self.inner.augmentation()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use fedcluster_core::{Purpose, Targets, stream};
    use fedcluster_models::Mlp;

    #[test]
    fn the_heads_loss_and_gradient_are_the_whole_models_at_the_fixed_trunk() {
        let model = Mlp::new(3, 4, 2).unwrap();
        let mut whole = vec![0.0; model.num_params()];
        model.init(&mut stream(1, Purpose::Init, 0, 0), &mut whole);
        let h = model.head_start();
        assert!(h > 0 && h < whole.len());
        let x = [0.5, -1.0, 2.0, 1.0, 0.0, -0.5];
        let y = [1, 0];
        let batch = Batch::new(&x, Targets::Class(&y), 3).unwrap();
        let mut ws = Workspace::default();
        let head = HeadOnly::new(&model, &whole[..h]);
        assert_eq!(head.num_params(), whole.len() - h);
        let mut full_grad = vec![0.0; whole.len()];
        let want = model.loss_grad(&whole, batch, &mut full_grad, &mut ws);
        let mut grad = vec![0.0; head.num_params()];
        assert_eq!(head.loss_grad(&whole[h..], batch, &mut grad, &mut ws), want);
        assert_eq!(grad, full_grad[h..]);
        assert_eq!(
            head.loss(&whole[h..], batch, &mut ws),
            model.loss(&whole, batch, &mut ws)
        );
    }
}
