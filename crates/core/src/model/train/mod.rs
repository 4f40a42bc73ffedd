//! Local training: the loops that move a model's flat parameters on one
//! client's data, and what they run with.
//!
//! - [`full_batch`]: gradient descent, Polyak momentum, and gradient descent
//!   with a proximal pull, each step over the whole batch (the plain loops
//!   behind [`Model::train`] and [`Model::train_momentum`], which a model may
//!   replace with an exact shortcut).
//! - [`minibatch`]: SGD (momentum, weight decay) and Adam on shuffled
//!   minibatches, with image augmentation: the flat loop over
//!   [`Model::loss_grad`], or the model's own ([`Model::train_minibatch`]).
//! - [`prox`]: the FedProx local problem, solved to a tolerance.
//! - [`augment`]: image augmentation ([`Augmentation`]: crop, flip, and the
//!   [`Jitter`] of brightness, contrast and Cutout) and the CIFAR-10 recipes'
//!   deterministic image ops (crop to size, per-image standardisation,
//!   normalisation).
//! - [`decay`]: weight decay on the tensors named (IFCA's L2 on its hidden
//!   layers).
//! - [`schedule`]: step-size schedules by step (the SR-FCA code's triangular
//!   one).
//! - [`smoothing`]: cross-entropy against label-smoothed targets, with its
//!   gradient.
//! - [`stage`]: a network's input stage ([`InputStage`]: a crop to a smaller
//!   size, drawn in training and central at evaluation, per-image
//!   standardisation, mean/std normalisation), applied at training and
//!   evaluation alike.
//! - [`weighted`]: training on a per-sample weighted loss `(1/n) Σ w_i ℓ_i`
//!   (FedEM's and FedRC's components): full-batch, or on minibatches drawn in
//!   proportion to the weights.
//!
//! This file holds what a minibatch training is: the optimizer with its
//! hyperparameters ([`MinibatchSpec`]), its state kept by the client between
//! rounds ([`OptimizerState`]) and a proximal pull ([`Pull`]). Configs name an optimizer in
//! `fedcluster_algorithms::common::trainer`, which maps them onto this module.
//!
//! Divergence is the caller's to detect and handle: the loops never panic on
//! non-finite numbers; they stop and report a non-finite loss, and a finite
//! loss vouches for finite parameters.
//!
//! The module sits under [`crate::model`] (and is re-exported as
//! `fedcluster_core::train`) because the two need each other: [`Model`]'s
//! provided training methods run these loops, and the loops run on [`Model`].
//!
//! [`Model`]: crate::Model
//! [`Model::train`]: crate::Model::train
//! [`Model::train_momentum`]: crate::Model::train_momentum
//! [`Model::loss_grad`]: crate::Model::loss_grad
//! [`Model::train_minibatch`]: crate::Model::train_minibatch

pub mod augment;
pub mod decay;
pub mod full_batch;
pub mod minibatch;
pub mod prox;
pub mod schedule;
pub mod smoothing;
pub mod stage;
pub mod weighted;

pub use augment::{Augmentation, Jitter};
pub use schedule::Triangular;
pub use stage::{InputStage, Normalize};

/// A minibatch optimizer and its hyperparameters.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum MinibatchOptimizer {
    /// SGD: `u ← μ u + (g + λ w)`, `w ← w − lr u` (PyTorch's `SGD` with
    /// momentum `μ` and weight decay `λ`; `μ = 0` is plain SGD).
    Sgd {
        /// Momentum `μ`.
        momentum: f32,
        /// Weight decay `λ` (an L2 penalty's gradient added to the loss's).
        weight_decay: f32,
    },
    /// Adam with PyTorch's defaults `β₁ = 0.9`, `β₂ = 0.999`, `ε = 1e-8`.
    Adam,
}

/// Adam's `β₁`.
pub const ADAM_BETA1: f32 = 0.9;
/// Adam's `β₂`.
pub const ADAM_BETA2: f32 = 0.999;
/// Adam's `ε`.
pub const ADAM_EPS: f32 = 1e-8;

/// One call's minibatch training: the optimizer, the step size, the minibatch
/// size and an optional proximal pull.
#[derive(Debug, Clone, Copy)]
pub struct MinibatchSpec<'a> {
    /// The optimizer.
    pub optimizer: MinibatchOptimizer,
    /// The step size of this call (already decayed for the round).
    pub lr: f32,
    /// Points per minibatch (the whole client when larger).
    pub batch_size: usize,
    /// `(μ/2)‖w − centre‖²` added to the loss (FedSoft).
    pub pull: Option<Pull<'a>>,
    /// The step size's schedule, by optimizer step counted from when the
    /// state last started (`OptimizerState::t − 1`): `lr · factor(t − 1)`.
    pub schedule: Option<Triangular>,
    /// Weight decay on chosen coordinates only (`weight · w` added to the
    /// gradient there, before the optimizer's own step).
    pub decay: Option<LayerDecay<'a>>,
}

/// Weight decay on the coordinate ranges of chosen tensors
/// ([`decay::tensor_ranges`]), as an L2 penalty `weight/2 · ‖w‖²` on them.
#[derive(Debug, Clone, Copy)]
pub struct LayerDecay<'a> {
    /// The decayed coordinate ranges of the flat vector.
    pub ranges: &'a [std::ops::Range<usize>],
    /// The penalty's weight.
    pub weight: f32,
}

impl MinibatchSpec<'_> {
    /// The step size at optimizer step `t` (from 1, as `OptimizerState::t`
    /// after the caller advanced it): `lr`, times the schedule's factor at
    /// step `t − 1` when there is one.
    pub fn lr_at_step(&self, t: u32) -> f32 {
        match self.schedule {
            None => self.lr,
            Some(s) => self.lr * s.factor(t.saturating_sub(1) as usize),
        }
    }
}

/// A proximal pull `(μ/2)‖w − centre‖²` added to the loss (FedProx, FedSoft).
#[derive(Debug, Clone, Copy)]
pub struct Pull<'a> {
    /// `μ`.
    pub mu: f32,
    /// The point pulled towards.
    pub centre: &'a [f32],
}

/// An optimizer's state, kept by the client between rounds: Adam's moments
/// and step count, or SGD's momentum buffer (`first`). Empty until the first
/// step, which sizes it.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct OptimizerState {
    /// Adam's first moment `m`, or SGD's momentum buffer `u`.
    pub first: Vec<f32>,
    /// Adam's second moment `v` (empty for SGD).
    pub second: Vec<f32>,
    /// Steps taken.
    pub t: u32,
}

impl OptimizerState {
    /// Back to the state before the first step, keeping the buffers' memory.
    pub fn restart(&mut self) {
        self.first.fill(0.0);
        self.second.fill(0.0);
        self.t = 0;
    }

    /// Sizes the state for `p` parameters under `optimizer` (fresh when the
    /// size changes).
    pub fn ready(&mut self, optimizer: MinibatchOptimizer, p: usize) {
        let second = match optimizer {
            MinibatchOptimizer::Adam => p,
            MinibatchOptimizer::Sgd { .. } => 0,
        };
        if self.first.len() != p || self.second.len() != second {
            *self = OptimizerState {
                first: vec![0.0; p],
                second: vec![0.0; second],
                t: 0,
            };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_state_is_sized_for_the_optimizer() {
        let mut s = OptimizerState::default();
        s.ready(MinibatchOptimizer::Adam, 3);
        assert_eq!((s.first.len(), s.second.len()), (3, 3));
        s.t = 5;
        s.ready(MinibatchOptimizer::Adam, 3);
        assert_eq!(s.t, 5, "kept while the size fits");
        s.ready(
            MinibatchOptimizer::Sgd {
                momentum: 0.9,
                weight_decay: 0.0,
            },
            3,
        );
        assert_eq!((s.first.len(), s.second.len(), s.t), (3, 0, 0));
    }
}
