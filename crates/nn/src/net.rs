//! [`NetModel`]: any [`Architecture`] as a [`fedcluster_core::Model`] on a burn
//! backend. Evaluation runs on the backend without autodiff, in chunks of
//! [`EVAL_CHUNK`] samples; gradients and training on the autodiff backend.
//! Local training ([`Model::train`], [`Model::train_minibatch`]) loads the
//! parameters and the optimizer's state once per call and keeps them on the
//! device between steps (see [`crate::train`]).

use burn::tensor::backend::{AutodiffBackend, Backend};
use burn::tensor::{ElementConversion, Int, Tensor, TensorData};

use fedcluster_core::local::{Augmentation, ImageShape, MinibatchSpec, OptimizerState};
use fedcluster_core::{Batch, Model, Rng, Targets, Workspace};

use crate::flat::{self, ParamSpec, Params};
use crate::layers::{Norm, correct, cross_entropy};

/// Samples per forward pass when evaluating (bounds the activations' memory).
pub const EVAL_CHUNK: usize = 256;

/// A network's shapes and forward pass, over the parameter leaves of its
/// [`Architecture::layout`].
pub trait Architecture: Send + Sync + 'static {
    /// Short name for reports.
    fn name(&self) -> &'static str;
    /// The parameter tensors, in flat order.
    fn layout(&self) -> Vec<ParamSpec>;
    /// Features per sample.
    fn input_dim(&self) -> usize;
    /// Output classes.
    fn classes(&self) -> usize;
    /// Floating-point operations of one forward pass over one sample.
    fn flops_per_sample(&self) -> u64;
    /// Where the last layer starts in the flat vector (IFCA weight sharing).
    fn head_start(&self) -> usize;
    /// The input images' shape, for image networks.
    fn images(&self) -> Option<ImageShape> {
        None
    }
    /// The vocabulary, for networks whose inputs are token ids.
    fn vocab(&self) -> Option<usize> {
        None
    }
    /// The logits (`[n, classes]`) of the samples `x` (`[n, input_dim]`).
    fn forward<B: Backend>(
        &self,
        p: &[Tensor<B, 1>],
        x: Tensor<B, 2>,
        norm: &mut Norm<'_, B>,
    ) -> Tensor<B, 2>;
}

/// An architecture on the autodiff backend `B` (and its inner backend for
/// evaluation), on one device.
pub struct NetModel<A: Architecture, B: AutodiffBackend> {
    pub(crate) arch: A,
    pub(crate) layout: Vec<ParamSpec>,
    pub(crate) device: B::Device,
    augmentation: Option<Augmentation>,
}

impl<A: Architecture, B: AutodiffBackend> NetModel<A, B> {
    /// `arch` on `device`; `augmentation` applies to local training.
    pub fn new(arch: A, device: B::Device, augmentation: Option<Augmentation>) -> Self {
        Self {
            layout: arch.layout(),
            arch,
            device,
            augmentation,
        }
    }

    /// The parameter layout.
    pub fn layout(&self) -> &[ParamSpec] {
        &self.layout
    }

    /// The batch's class targets when its shape and values fit the network
    /// (`None` gives a NaN loss, as the native models do).
    pub(crate) fn targets<'a>(&self, batch: Batch<'a>) -> Option<&'a [u32]> {
        let Targets::Class(y) = batch.y else {
            return None;
        };
        let fits = batch.dim == self.arch.input_dim()
            && batch.x.len() == y.len() * batch.dim
            && y.iter().all(|&c| (c as usize) < self.arch.classes());
        let ids_fit = match self.arch.vocab() {
            None => true,
            Some(v) => batch
                .x
                .iter()
                .all(|&t| t >= 0.0 && t < v as f32 && t.fract() == 0.0),
        };
        (fits && ids_fit).then_some(y)
    }

    /// Rows `rows` of `x` and `y` as tensors on `device`.
    pub(crate) fn tensors<Bk: Backend>(
        &self,
        x: &[f32],
        y: &[u32],
        device: &Bk::Device,
    ) -> (Tensor<Bk, 2>, Tensor<Bk, 1, Int>) {
        let (n, d) = (y.len(), self.arch.input_dim());
        // In the backend's own element types (the CPU backends of different
        // precisions share one device, which otherwise keeps the data's type).
        let x = TensorData::new(x.to_vec(), [n, d]).convert::<Bk::FloatElem>();
        let y = TensorData::new(y.iter().map(|&c| i64::from(c)).collect::<Vec<_>>(), [n]);
        (
            Tensor::from_data(x, device),
            Tensor::from_data(y.convert::<Bk::IntElem>(), device),
        )
    }

    /// The mean loss with batch statistics (as in training, without updating
    /// the running ones): the loss [`Model::loss_grad`] differentiates.
    pub fn training_loss(&self, params: &[f32], batch: Batch<'_>) -> f64 {
        let Some(y) = self.targets(batch).filter(|y| !y.is_empty()) else {
            return f64::NAN;
        };
        let p = Params::<B::InnerBackend>::load(&self.layout, params, &self.device);
        let (x, t) = self.tensors::<B::InnerBackend>(batch.x, y, &self.device);
        let logits = self.arch.forward(&p.tensors, x, &mut Norm::BatchOnly);
        cross_entropy(logits, t).into_scalar().elem()
    }

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
