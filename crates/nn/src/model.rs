//! [`NetModel`] as a [`fedcluster_core::Model`]. Evaluation runs on the
//! backend without autodiff, in chunks of [`EVAL_CHUNK`] samples; gradients
//! and training on the autodiff backend. Local training ([`Model::train`],
//! [`Model::train_minibatch`]) loads the parameters and the optimizer's state
//! once per call and keeps them on the device between steps (see
//! [`crate::train`]).

use burn::tensor::ElementConversion;
use burn::tensor::backend::AutodiffBackend;

use fedcluster_core::train::{Augmentation, MinibatchSpec, OptimizerState};
use fedcluster_core::{Batch, Model, Rng, Workspace};

use crate::flat::{self, Params};
use crate::layers::{Norm, correct, cross_entropy};
use crate::net::{Architecture, NetModel};

/// Samples per forward pass when evaluating (bounds the activations' memory).
pub const EVAL_CHUNK: usize = 256;

impl<A: Architecture, B: AutodiffBackend> NetModel<A, B> {
    /// Sum of the per-sample losses and the number correct over `batch`, in
    /// chunks, with the running statistics.
    fn evaluate(&self, params: &[f32], batch: Batch<'_>, y: &[u32]) -> (f64, usize) {
        let p = Params::<B::InnerBackend>::load(&self.layout, params, &self.device);
        let d = batch.dim;
        let (mut loss, mut hits) = (0.0, 0);
        for start in (0..y.len()).step_by(EVAL_CHUNK) {
            let end = (start + EVAL_CHUNK).min(y.len());
            let (x, t) = self.tensors::<B::InnerBackend>(
                &batch.x[start * d..end * d],
                &y[start..end],
                &self.device,
            );
            let logits = self.arch.forward(&p.tensors, x, &mut Norm::Running);
            hits += correct(logits.clone(), t.clone());
            let mean: f64 = cross_entropy(logits, t).into_scalar().elem();
            loss += mean * (end - start) as f64;
        }
        (loss, hits)
    }
}

impl<A: Architecture, B: AutodiffBackend> Model for NetModel<A, B>
where
    B::Device: Send + Sync,
{
    fn name(&self) -> &'static str {
        self.arch.name()
    }

    fn num_params(&self) -> usize {
        flat::num_params(&self.layout)
    }

    /// The layout's tensors, PyTorch's names and shapes (convolution filters
    /// channels-last, `[out, ky, kx, in]`).
    fn tensors(&self) -> Vec<fedcluster_core::TensorSpec> {
        self.layout
            .iter()
            .map(|p| fedcluster_core::TensorSpec::new(&p.name, &p.shape))
            .collect()
    }

    fn input_dim(&self) -> usize {
        self.arch.input_dim()
    }

    fn init(&self, rng: &mut Rng, out: &mut [f32]) {
        flat::init(&self.layout, rng, out);
    }

    fn loss(&self, params: &[f32], batch: Batch<'_>, _ws: &mut Workspace) -> f64 {
        assert_eq!(
            params.len(),
            self.num_params(),
            "{}: parameter length",
            self.name()
        );
        match self.targets(batch) {
            Some(y) if !y.is_empty() => self.evaluate(params, batch, y).0 / y.len() as f64,
            Some(_) => 0.0,
            None => f64::NAN,
        }
    }

    fn loss_grad(
        &self,
        params: &[f32],
        batch: Batch<'_>,
        grad: &mut [f32],
        _ws: &mut Workspace,
    ) -> f64 {
        assert_eq!(
            params.len(),
            self.num_params(),
            "{}: parameter length",
            self.name()
        );
        let Some(y) = self.targets(batch).filter(|y| !y.is_empty()) else {
            grad.fill(f32::NAN);
            return f64::NAN;
        };
        let p = Params::<B>::load_leaves(&self.layout, params, &self.device);
        let (x, t) = self.tensors::<B>(batch.x, y, &self.device);
        let logits = self.arch.forward(&p.tensors, x, &mut Norm::BatchOnly);
        let loss = cross_entropy(logits, t);
        let value: f64 = loss.clone().into_scalar().elem();
        let grads = loss.backward();
        p.grads(&grads).write(grad);
        value
    }

    fn count_correct(
        &self,
        params: &[f32],
        batch: Batch<'_>,
        _ws: &mut Workspace,
    ) -> Option<usize> {
        let y = self.targets(batch)?;
        Some(self.evaluate(params, batch, y).1)
    }

    /// One forward pass for both numbers (what `loss` and `count_correct`
    /// each compute).
    fn loss_and_correct(
        &self,
        params: &[f32],
        batch: Batch<'_>,
        ws: &mut Workspace,
    ) -> (f64, Option<usize>) {
        match self.targets(batch) {
            Some(y) if !y.is_empty() && params.len() == self.num_params() => {
                let (sum, correct) = self.evaluate(params, batch, y);
                (sum / y.len() as f64, Some(correct))
            }
            _ => (
                self.loss(params, batch, ws),
                self.count_correct(params, batch, ws),
            ),
        }
    }

    fn forward_flops_per_sample(&self) -> u64 {
        self.arch.flops_per_sample()
    }

    fn head_start(&self) -> usize {
        self.arch.head_start()
    }

    fn augmentation(&self) -> Option<Augmentation> {
        self.augmentation
    }

    fn train(
        &self,
        params: &mut [f32],
        batch: Batch<'_>,
        lr: f32,
        steps: usize,
        _ws: &mut Workspace,
    ) -> f64 {
        crate::train::full_batch(self, params, batch, lr, steps)
    }

    fn train_minibatch(
        &self,
        params: &mut [f32],
        batch: Batch<'_>,
        spec: &MinibatchSpec<'_>,
        steps: usize,
        state: &mut OptimizerState,
        rng: &mut Rng,
        ws: &mut Workspace,
    ) -> Option<f64> {
        Some(crate::train::minibatch(
            self, params, batch, spec, steps, state, rng, ws,
        ))
    }
}
