//! [`Architecture`], a network's shapes and forward pass, and [`NetModel`], an
//! architecture on a burn backend and one device, with what its evaluation
//! ([`crate::model`], where it is a [`fedcluster_core::Model`]) and its local
//! training ([`crate::train`]) share: the batch's targets and tensors.

use burn::tensor::backend::{AutodiffBackend, Backend};
use burn::tensor::{ElementConversion, Int, Tensor, TensorData};

use fedcluster_core::train::Augmentation;
use fedcluster_core::{Batch, ImageShape, Targets};

use crate::flat::{ParamSpec, Params};
use crate::layers::{Norm, cross_entropy};

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
    pub(crate) augmentation: Option<Augmentation>,
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
    /// the running ones): the loss [`fedcluster_core::Model::loss_grad`]
    /// differentiates.
    pub fn training_loss(&self, params: &[f32], batch: Batch<'_>) -> f64 {
        let Some(y) = self.targets(batch).filter(|y| !y.is_empty()) else {
            return f64::NAN;
        };
        let p = Params::<B::InnerBackend>::load(&self.layout, params, &self.device);
        let (x, t) = self.tensors::<B::InnerBackend>(batch.x, y, &self.device);
        let logits = self.arch.forward(&p.tensors, x, &mut Norm::BatchOnly);
        cross_entropy(logits, t).into_scalar().elem()
    }
}
