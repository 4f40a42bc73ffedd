//! The [`Model`] trait: an architecture that is stateless and keeps its parameters
//! in one flat `&[f32]`, plus [`Batch`] views of local data and per-thread
//! [`Workspace`]s that keep hot loops free of allocation. Its local training
//! loops are in [`train`].

pub mod train;

use crate::error::{CoreError, Result};
use crate::rng::Rng;
use train::full_batch::{gradient_descent, momentum_descent};
use train::{Augmentation, MinibatchSpec, OptimizerState};

/// Targets of a batch: real values (regression) or class indices.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Targets<'a> {
    /// One real target per sample.
    Real(&'a [f32]),
    /// One class index per sample.
    Class(&'a [u32]),
}

impl Targets<'_> {
    /// Number of targets.
    pub fn len(&self) -> usize {
        match self {
            Targets::Real(y) => y.len(),
            Targets::Class(y) => y.len(),
        }
    }

    /// Whether there are no targets.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// A borrowed batch of samples: `n` rows of `dim` features, row-major.
#[derive(Clone, Copy, Debug)]
pub struct Batch<'a> {
    /// Features, `n * dim` values, row-major.
    pub x: &'a [f32],
    /// Targets, `n` of them.
    pub y: Targets<'a>,
    /// Number of features per sample.
    pub dim: usize,
}

impl<'a> Batch<'a> {
    /// A checked batch view.
    pub fn new(x: &'a [f32], y: Targets<'a>, dim: usize) -> Result<Self> {
        if dim == 0 || x.len() != y.len() * dim {
            return Err(CoreError::Shape {
                what: "batch features",
                expected: y.len() * dim,
                got: x.len(),
            });
        }
        Ok(Self { x, y, dim })
    }

    /// Number of samples.
    pub fn len(&self) -> usize {
        self.y.len()
    }

    /// Whether the batch is empty.
    pub fn is_empty(&self) -> bool {
        self.y.is_empty()
    }

    /// Rows `start..end` as a batch (no copy).
    pub fn rows(&self, start: usize, end: usize) -> Batch<'a> {
        let y = match self.y {
            Targets::Real(y) => Targets::Real(&y[start..end]),
            Targets::Class(y) => Targets::Class(&y[start..end]),
        };
        Batch {
            x: &self.x[start * self.dim..end * self.dim],
            y,
            dim: self.dim,
        }
    }
}

/// Scratch buffers owned by one worker thread and reused across clients and rounds.
#[derive(Debug, Default)]
pub struct Workspace {
    /// Scratch buffers for models; a model documents which it uses.
    pub bufs: Vec<Vec<f32>>,
    /// A gradient buffer for training loops; models never touch it.
    pub grad: Vec<f32>,
    /// Minibatch training loops' buffers; models never touch them.
    pub minibatch: MinibatchScratch,
}

/// A minibatch loop's reusable buffers: the visiting order and the gathered
/// rows and targets.
#[derive(Debug, Default)]
pub struct MinibatchScratch {
    /// Point indices in visiting order.
    pub order: Vec<usize>,
    /// Gathered feature rows.
    pub x: Vec<f32>,
    /// Gathered real targets.
    pub y_real: Vec<f32>,
    /// Gathered class targets.
    pub y_class: Vec<u32>,
}

impl Workspace {
    /// `N` scratch slices of the requested lengths (buffers `0..N`), grown on
    /// first use only.
    pub fn slices<const N: usize>(&mut self, lens: [usize; N]) -> [&mut [f32]; N] {
        if self.bufs.len() < N {
            self.bufs.resize_with(N, Vec::new);
        }
        let mut bufs = self.bufs.iter_mut();
        std::array::from_fn(|i| {
            let b = bufs.next().expect("at least N buffers");
            if b.len() < lens[i] {
                b.resize(lens[i], 0.0);
            }
            &mut b[..lens[i]]
        })
    }

    /// Runs `f` with the training loops' gradient buffer, `len` long, and the
    /// rest of the workspace: the buffer is lent out and put back, so it grows
    /// on first use only.
    pub fn with_grad<R>(&mut self, len: usize, f: impl FnOnce(&mut [f32], &mut Self) -> R) -> R {
        let mut grad = std::mem::take(&mut self.grad);
        grad.resize(len, 0.0);
        let out = f(&mut grad, self);
        self.grad = grad;
        out
    }
}

/// One named tensor of a model's flat parameter vector: its values are the
/// next `shape.iter().product()` coordinates, row-major.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TensorSpec {
    /// Its name (PyTorch's where the model mirrors a PyTorch module, e.g.
    /// `fc1.weight`).
    pub name: String,
    /// Its shape.
    pub shape: Vec<usize>,
}

impl TensorSpec {
    /// A tensor `name` of `shape`.
    pub fn new(name: &str, shape: &[usize]) -> Self {
        Self {
            name: name.to_string(),
            shape: shape.to_vec(),
        }
    }
}

/// An architecture over flat parameters. Implementations hold only shapes and
/// hyperparameters, never parameters or data, so one instance serves every client.
pub trait Model: Send + Sync {
    /// Short name for reports (`linear`, `logistic`, ...).
    fn name(&self) -> &'static str;

    /// Length of the flat parameter vector.
    fn num_params(&self) -> usize;

    /// Number of input features a sample must have.
    fn input_dim(&self) -> usize;

    /// The flat parameter vector as named tensors, in order; their sizes add
    /// up to [`Model::num_params`] (tested for every model). The default is
    /// one tensor `params`.
    fn tensors(&self) -> Vec<TensorSpec> {
        vec![TensorSpec::new("params", &[self.num_params()])]
    }

    /// Writes freshly initialised parameters into `out`.
    fn init(&self, rng: &mut Rng, out: &mut [f32]);

    /// Mean loss over the batch.
    fn loss(&self, params: &[f32], batch: Batch<'_>, ws: &mut Workspace) -> f64;

    /// Mean loss over the batch; writes its gradient into `grad`.
    fn loss_grad(
        &self,
        params: &[f32],
        batch: Batch<'_>,
        grad: &mut [f32],
        ws: &mut Workspace,
    ) -> f64;

    /// Number of correctly classified samples, or `None` for a regression model.
    fn count_correct(
        &self,
        _params: &[f32],
        _batch: Batch<'_>,
        _ws: &mut Workspace,
    ) -> Option<usize> {
        None
    }

    /// [`Model::loss`] and [`Model::count_correct`] of the same batch, as
    /// evaluation asks for both: a model whose forward pass yields both
    /// overrides it so the batch runs through the network once (the
    /// char-LSTM, the burn networks). Must equal the two calls exactly.
    fn loss_and_correct(
        &self,
        params: &[f32],
        batch: Batch<'_>,
        ws: &mut Workspace,
    ) -> (f64, Option<usize>) {
        (
            self.loss(params, batch, ws),
            self.count_correct(params, batch, ws),
        )
    }

    /// Floating-point operations of one forward pass over one sample (for
    /// throughput reports); the backward pass is counted as twice this.
    fn forward_flops_per_sample(&self) -> u64;

    /// Where the last layer's parameters start: `[0, head_start)` are the layers
    /// IFCA's weight sharing shares across clusters, `[head_start, num_params)`
    /// the per-cluster head. A single-layer model has no shared part (0).
    fn head_start(&self) -> usize {
        0
    }

    /// The model's input images and the augmentation its local training
    /// applies to them, if any.
    fn augmentation(&self) -> Option<Augmentation> {
        None
    }

    /// `steps` minibatch steps of `spec` from `params`, continuing `state`,
    /// with minibatches (and augmentations) drawn from `rng`, carried out by
    /// the model itself; returns the loss of the first minibatch (non-finite if
    /// training diverged). `None` leaves it to the caller's flat loop over
    /// [`Model::loss_grad`] ([`train::minibatch::steps`]), which a
    /// model overriding this must match. A model whose parameters live on a
    /// device overrides it to copy parameters and state in and out once per
    /// call instead of once per step.
    #[allow(clippy::too_many_arguments)]
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
        None
    }

    /// Mean losses of several models on the same batch. `models` holds
    /// `out.len()` parameter vectors back to back. Models with a batched kernel
    /// override this with one pass over the data.
    fn losses(&self, models: &[f32], batch: Batch<'_>, out: &mut [f64], ws: &mut Workspace) {
        let p = self.num_params();
        for (o, m) in out.iter_mut().zip(models.chunks_exact(p)) {
            *o = self.loss(m, batch, ws);
        }
    }

    /// `steps` full-batch gradient-descent steps from `params` with step size
    /// `lr` (see [`gradient_descent`] for the handling of non-finite values);
    /// returns the loss at the starting point. From finite parameters, a finite
    /// value means every parameter ends finite (what callers rely on instead
    /// of scanning them again). Models may override this with an exact
    /// algebraic shortcut.
    fn train(
        &self,
        params: &mut [f32],
        batch: Batch<'_>,
        lr: f32,
        steps: usize,
        ws: &mut Workspace,
    ) -> f64 {
        ws.with_grad(self.num_params(), |grad, ws| {
            gradient_descent(self, params, batch, lr, steps, grad, ws)
        })
    }

    /// `steps` steps of Polyak momentum gradient descent from `params` with the
    /// momentum buffer `velocity`: `u <- beta u + ∇L(θ)`, `θ <- θ - lr u` (CFL-MGD's
    /// LocalUpdate). Returns the loss at the start; non-finite values stop the
    /// loop as in [`gradient_descent`].
    #[allow(clippy::too_many_arguments)]
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
        ws.with_grad(self.num_params(), |grad, ws| {
            momentum_descent(self, params, velocity, batch, lr, beta, steps, grad, ws)
        })
    }

    /// The IFCA model-averaging client step (LocalUpdate), batched over replicas:
    /// `models` holds replicas of `group` models each. Writes every model's loss
    /// into `losses`, each replica's lowest-loss model index into `chosen`, and
    /// into the replica's slot of `out` that model after `steps` gradient steps
    /// with the replica's step size `lrs[r]`. Returns, per replica, the value
    /// [`Model::train`] returned (non-finite when training diverged).
    #[allow(clippy::too_many_arguments)]
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
        let p = self.num_params();
        self.losses(models, batch, losses, ws);
        let mut trained = Vec::with_capacity(chosen.len());
        for (r, (c, slot)) in chosen.iter_mut().zip(out.chunks_exact_mut(p)).enumerate() {
            *c = argmin_f64(&losses[r * group..(r + 1) * group]);
            slot.copy_from_slice(&models[(r * group + *c) * p..(r * group + *c + 1) * p]);
            trained.push(self.train(slot, batch, lrs[r], steps, ws));
        }
        trained
    }

    /// The IFCA client step, batched over replicas: `models` holds replicas of
    /// `group` models each, back to back. Writes every model's mean loss into
    /// `losses`, the index (within its replica) of each replica's lowest-loss model
    /// into `chosen`, and the gradient at that model into the replica's slot of
    /// `grads`. Models with a batched kernel override this to share the forward
    /// pass between the assignment and the gradient.
    #[allow(clippy::too_many_arguments)]
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
        let p = self.num_params();
        self.losses(models, batch, losses, ws);
        for (r, (c, g)) in chosen.iter_mut().zip(grads.chunks_exact_mut(p)).enumerate() {
            *c = argmin_f64(&losses[r * group..(r + 1) * group]);
            let m = &models[(r * group + *c) * p..(r * group + *c + 1) * p];
            self.loss_grad(m, batch, g, ws);
        }
    }
}

/// Index of the smallest loss; ties go to the lowest index; NaN never wins
/// (an all-NaN slice gives 0).
pub fn argmin_f64(values: &[f64]) -> usize {
    let mut best: Option<(usize, f64)> = None;
    for (i, v) in values.iter().enumerate() {
        if !v.is_nan() && best.is_none_or(|(_, b)| *v < b) {
            best = Some((i, *v));
        }
    }
    best.map_or(0, |(i, _)| i)
}
