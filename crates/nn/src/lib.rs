//! fedcluster-nn: networks on a tensor/autodiff backend behind fedcluster's
//! flat-parameter [`fedcluster_core::Model`] trait, so algorithms,
//! aggregation, distances and the wire treat them like the hand-written
//! models of `fedcluster-models`.
//!
//! The backend is burn 0.21: its CPU backends (`ndarray` and `flex`, in the
//! default build) and, behind the `cuda` feature, its CUDA backend. A network is an
//! [`Architecture`]: a parameter layout ([`flat::ParamSpec`], in PyTorch's
//! layouts, images channels-last) and a forward pass over one tensor per layout
//! entry; [`NetModel`] makes any architecture a `Model`. The flat vector is
//! uploaded once and read back once per call; local training keeps the
//! parameters and the optimizer's state on the device for all its steps.
//!
//! - [`nets`]: [`nets::Mlp`], [`nets::Cnn`] (IFCA's CNN, its CIFAR variant, LEAF's
//!   FEMNIST CNN), [`nets::ResNet9`], [`nets::CharLstm`], each with its `[model]`
//!   config, whose `build` picks the native model or the network on burn.
//! - [`config`]: what those configs share: [`ModelBackend`], [`AugmentConfig`].
//! - [`layers`]: dense, channels-last convolution (im2col), pooling, batch norm,
//!   embedding, LSTM, cross-entropy.
//! - [`device`]: the backends and the CUDA probe.
//!
//! Why burn 0.21: its CUDA backend builds from crates.io alone (kernels are
//! compiled at run time by NVRTC), so the `cuda` feature compiles on a machine
//! without a GPU or a CUDA toolkit; burn 0.22's CUDA backend downloads an LLVM
//! bundle at build time, and candle's CUDA kernels need `nvcc` at build time.
//! The CPU backend is the correctness path and the home of the networks with
//! no hand-written implementation; their speed has to come from the GPU.

pub mod config;
pub mod device;
pub mod flat;
pub mod layers;
mod model;
mod net;
pub mod nets;
mod train;

pub use config::{AugmentConfig, ModelBackend};
pub use model::EVAL_CHUNK;
pub use net::{Architecture, NetModel};

use fedcluster_core::Model;
use fedcluster_core::train::Augmentation;
use fedcluster_models::ModelError;
use thiserror::Error;

/// Errors building a network.
#[derive(Debug, Error, PartialEq)]
pub enum NnError {
    /// A shape key that cannot work, relative to `[model]`.
    #[error("field `model.{field}`: {why}")]
    Invalid {
        /// The key.
        field: &'static str,
        /// Why.
        why: String,
    },
    /// The backend cannot run here.
    #[error("backend: {0}")]
    Backend(String),
    /// A hand-written model refused its sizes.
    #[error(transparent)]
    Native(#[from] ModelError),
    /// The hand-written CNN refused its shape (the error names the whole
    /// `[model]` table).
    #[error("field `model`: {0}")]
    NativeShape(ModelError),
}

/// Where a network runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    /// burn's CPU backend (`ndarray`).
    Cpu,
    /// burn's second CPU backend (`flex`: im2col + GEMM).
    Flex,
    /// burn's CUDA backend, device 0 (needs the `cuda` feature, a GPU, its
    /// driver and NVRTC).
    Cuda,
}

/// A network and its shape.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Net {
    /// [`nets::Mlp`].
    Mlp(nets::Mlp),
    /// [`nets::Cnn`].
    Cnn(nets::Cnn),
    /// [`nets::ResNet9`].
    ResNet9(nets::ResNet9),
    /// [`nets::CharLstm`].
    CharLstm(nets::CharLstm),
}

impl Net {
    /// Why the shape cannot be built, naming the `[model]` key.
    pub fn check(&self) -> Result<(), NnError> {
        let invalid = |(field, why)| NnError::Invalid { field, why };
        match self {
            Net::Mlp(m) if m.hidden == 0 => {
                Err(invalid(("hidden", "must be at least 1, got 0".into())))
            }
            Net::Mlp(_) => Ok(()),
            Net::Cnn(c) => c.check().map_err(invalid),
            Net::ResNet9(r) => r.check().map_err(invalid),
            Net::CharLstm(l) => l.check().map_err(invalid),
        }
    }

    /// The input images, for image networks.
    pub fn images(&self) -> Option<fedcluster_core::ImageShape> {
        match self {
            Net::Mlp(m) => m.images(),
            Net::Cnn(c) => c.images(),
            Net::ResNet9(r) => r.images(),
            Net::CharLstm(l) => l.images(),
        }
    }
}

/// Builds `net` on `backend`, with `augmentation` in local training.
pub fn build(
    net: Net,
    backend: Backend,
    augmentation: Option<Augmentation>,
) -> Result<Box<dyn Model>, NnError> {
    net.check()?;
    if augmentation.is_some() && net.images().is_none() {
        return Err(NnError::Invalid {
            field: "augment",
            why: "augmentation applies to image networks only".into(),
        });
    }
    match backend {
        Backend::Cpu => Ok(on::<device::Cpu>(net, Default::default(), augmentation)),
        Backend::Flex => Ok(on::<device::Flex>(net, Default::default(), augmentation)),
        Backend::Cuda => cuda(net, augmentation),
    }
}

fn on<B>(net: Net, device: B::Device, augmentation: Option<Augmentation>) -> Box<dyn Model>
where
    B: burn::tensor::backend::AutodiffBackend,
    B::Device: Send + Sync,
{
    match net {
        Net::Mlp(a) => Box::new(NetModel::<_, B>::new(a, device, augmentation)),
        Net::Cnn(a) => Box::new(NetModel::<_, B>::new(a, device, augmentation)),
        Net::ResNet9(a) => Box::new(NetModel::<_, B>::new(a, device, augmentation)),
        Net::CharLstm(a) => Box::new(NetModel::<_, B>::new(a, device, augmentation)),
    }
}

#[cfg(feature = "cuda")]
fn cuda(net: Net, augmentation: Option<Augmentation>) -> Result<Box<dyn Model>, NnError> {
    device::probe_cuda().map_err(NnError::Backend)?;
    let device = burn::backend::cuda::CudaDevice::new(0);
    Ok(on::<device::Gpu>(net, device, augmentation))
}

#[cfg(not(feature = "cuda"))]
fn cuda(_net: Net, _augmentation: Option<Augmentation>) -> Result<Box<dyn Model>, NnError> {
    Err(NnError::Backend(
        "this fedcluster was built without CUDA support: rebuild with `--features cuda`".into(),
    ))
}
