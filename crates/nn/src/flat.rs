//! A network's parameters: its layout (one [`ParamSpec`] per tensor, in the
//! order of the flat vector) and the tensors built from a flat vector.
//!
//! The flat vector crosses to the backend once per call in each direction: it
//! is uploaded as one tensor and sliced into the layout's leaves
//! ([`Params::load`]), and read back by concatenating them ([`Params::write`]).
//! Training loops keep the leaves on the device between steps.

use burn::tensor::backend::{AutodiffBackend, Backend};
use burn::tensor::{Tensor, TensorData};

use fedcluster_core::Rng;
use fedcluster_models::init::uniform_fan_in;
use rand_distr::{Distribution, StandardNormal};

/// How a parameter tensor is initialised.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Init {
    /// `U(±1/√fan_in)`, PyTorch's default for linear, convolution and LSTM
    /// weights and biases.
    FanIn(usize),
    /// `N(0, 1)`, PyTorch's `nn.Embedding`.
    Normal,
    /// A constant (batch-norm scale 1, shift 0, running mean 0, variance 1).
    Const(f32),
}

/// One parameter tensor of a network.
#[derive(Debug, Clone, PartialEq)]
pub struct ParamSpec {
    /// Its name (PyTorch's, e.g. `conv1.weight`).
    pub name: String,
    /// Its shape.
    pub shape: Vec<usize>,
    /// Its initialisation.
    pub init: Init,
    /// Whether training moves it (batch-norm running statistics do not: they are
    /// updated by the forward pass and averaged with the rest by the server).
    pub trainable: bool,
}

impl ParamSpec {
    /// A trainable tensor.
    pub fn new(name: impl Into<String>, shape: &[usize], init: Init) -> Self {
        Self {
            name: name.into(),
            shape: shape.to_vec(),
            init,
            trainable: true,
        }
    }

    /// A running statistic (not trained).
    pub fn running(name: impl Into<String>, len: usize, value: f32) -> Self {
        Self {
            trainable: false,
            ..Self::new(name, &[len], Init::Const(value))
        }
    }

    /// Number of values.
    pub fn len(&self) -> usize {
        self.shape.iter().product()
    }

    /// Whether it holds no value.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Total length of `layout`.
pub fn num_params(layout: &[ParamSpec]) -> usize {
    layout.iter().map(ParamSpec::len).sum()
}

/// Writes `layout`'s initial values into `out`, tensor by tensor, from `rng`.
pub fn init(layout: &[ParamSpec], rng: &mut Rng, out: &mut [f32]) {
    let mut at = 0;
    for spec in layout {
        let dst = &mut out[at..at + spec.len()];
        match spec.init {
            Init::FanIn(fan_in) => uniform_fan_in(rng, fan_in, dst),
            Init::Normal => dst.iter_mut().for_each(|v| *v = StandardNormal.sample(rng)),
            Init::Const(c) => dst.fill(c),
        }
        at += spec.len();
    }
}

/// A network's parameter tensors on one backend, one 1-D leaf per layout
/// entry (the forward pass reshapes them).
pub struct Params<B: Backend> {
    /// The leaves, in layout order.
    pub tensors: Vec<Tensor<B, 1>>,
}

impl<B: Backend> Params<B> {
    /// The tensors of `flat` (one upload, then slices).
    pub fn load(layout: &[ParamSpec], flat: &[f32], device: &B::Device) -> Self {
        let data = TensorData::new(flat.to_vec(), [flat.len()]).convert::<B::FloatElem>();
        let all = Tensor::<B, 1>::from_data(data, device);
        let mut at = 0;
        let tensors = layout
            .iter()
            .map(|spec| {
                let t = all.clone().slice(at..at + spec.len());
                at += spec.len();
                t
            })
            .collect();
        Self { tensors }
    }

    /// Writes the tensors into `out` (one concatenation, one download).
    pub fn write(&self, out: &mut [f32]) {
        write_cat(self.tensors.clone(), out);
    }
}

impl<B: AutodiffBackend> Params<B> {
    /// The tensors of `flat` as autodiff leaves; the trainable ones track
    /// gradients.
    pub fn load_leaves(layout: &[ParamSpec], flat: &[f32], device: &B::Device) -> Self {
        let inner = Params::<B::InnerBackend>::load(layout, flat, device);
        Self::leaves(layout, inner)
    }

    /// Autodiff leaves of `inner` (the trainable ones tracking gradients).
    pub fn leaves(layout: &[ParamSpec], inner: Params<B::InnerBackend>) -> Self {
        let tensors = inner
            .tensors
            .into_iter()
            .zip(layout)
            .map(|(t, spec)| {
                let leaf = Tensor::from_inner(t);
                if spec.trainable {
                    leaf.require_grad()
                } else {
                    leaf
                }
            })
            .collect();
        Self { tensors }
    }

    /// The values without the autodiff graph.
    pub fn inner(&self) -> Params<B::InnerBackend> {
        Params {
            tensors: self.tensors.iter().map(|t| t.clone().inner()).collect(),
        }
    }

    /// The gradient of every tensor, zeros for those without one (running
    /// statistics), in layout order.
    pub fn grads(&self, grads: &B::Gradients) -> Params<B::InnerBackend> {
        Params {
            tensors: self
                .tensors
                .iter()
                .map(|t| {
                    t.grad(grads)
                        .unwrap_or_else(|| t.clone().inner().zeros_like())
                })
                .collect(),
        }
    }
}

/// Concatenates `tensors` and copies them into `out`.
pub fn write_cat<B: Backend>(tensors: Vec<Tensor<B, 1>>, out: &mut [f32]) {
    let data = Tensor::cat(tensors, 0).into_data();
    match data.as_slice::<f32>() {
        Ok(values) => out.copy_from_slice(values),
        Err(_) => {
            let values = data.convert::<f32>();
            out.copy_from_slice(values.as_slice::<f32>().unwrap_or(&[]));
        }
    }
}
