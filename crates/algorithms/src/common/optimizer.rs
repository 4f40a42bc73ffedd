//! The local optimizer as configs name it: full-batch gradient descent, SGD
//! or Adam on minibatches, each with its keys (`lr_decay`, `keep_state`,
//! `batch_size`, momentum, weight decay, and the recipe keys `schedule` and
//! `decay_layers` of [`super::recipe`]), its validation, and the
//! [`MinibatchSpec`](fedcluster_core::train::MinibatchSpec) optimizer it maps
//! to. [`super::trainer::LocalTrainer`] runs it.

use serde::{Deserialize, Serialize};

use std::ops::Range;

use fedcluster_core::Model;
use fedcluster_core::train::{MinibatchOptimizer, Triangular};

use super::checked::{FieldError, at_least_one};
use super::recipe::{LayerNames, Schedule};

/// The local optimizer, as written in configs. Each takes `lr_decay`: round
/// `t` (from 0) trains with `lr · lr_decay^t`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields, tag = "kind")]
pub enum Optimizer {
    /// Full-batch gradient descent.
    Gd {
        /// Per-round step-size decay.
        #[serde(default = "one", skip_serializing_if = "is_one")]
        lr_decay: f32,
    },
    /// SGD on shuffled minibatches of `batch_size`, with optional momentum and
    /// weight decay (PyTorch's `SGD`); the momentum buffer is kept by the
    /// client unless `keep_state = false`.
    Sgd {
        /// Points per minibatch.
        batch_size: usize,
        /// Keep the momentum buffer from one local training to the next.
        #[serde(default = "yes", skip_serializing_if = "is_yes")]
        keep_state: bool,
        /// Momentum `μ` in `[0, 1)`.
        #[serde(default)]
        momentum: f32,
        /// Weight decay `λ >= 0`.
        #[serde(default)]
        weight_decay: f32,
        /// Per-round step-size decay.
        #[serde(default = "one", skip_serializing_if = "is_one")]
        lr_decay: f32,
        /// The step size's schedule within a local training.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        schedule: Option<Schedule>,
        /// The tensors `weight_decay` applies to (all of them when absent).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        decay_layers: Option<LayerNames>,
    },
    /// Adam (PyTorch's β and ε) on shuffled minibatches of `batch_size`; its
    /// moments and step count are kept by the client unless `keep_state = false`.
    Adam {
        /// Points per minibatch.
        batch_size: usize,
        /// Keep the moments and step count from one local training to the next.
        #[serde(default = "yes", skip_serializing_if = "is_yes")]
        keep_state: bool,
        /// Per-round step-size decay.
        #[serde(default = "one", skip_serializing_if = "is_one")]
        lr_decay: f32,
        /// The step size's schedule within a local training.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        schedule: Option<Schedule>,
    },
}

fn one() -> f32 {
    1.0
}

fn yes() -> bool {
    true
}

fn is_yes(v: &bool) -> bool {
    *v
}

fn is_one(v: &f32) -> bool {
    *v == 1.0
}

impl Default for Optimizer {
    fn default() -> Self {
        Optimizer::Gd { lr_decay: 1.0 }
    }
}

impl Optimizer {
    /// Whether this is the default, full-batch gradient descent without decay
    /// (configs that added the key later leave it unwritten).
    pub fn is_plain_gd(&self) -> bool {
        *self == Optimizer::default()
    }

    /// Whether this is full-batch gradient descent.
    pub fn is_gd(&self) -> bool {
        matches!(self, Optimizer::Gd { .. })
    }

    /// The step size of round `round` for base step size `lr`.
    pub fn lr_at(&self, lr: f32, round: usize) -> f32 {
        let (Optimizer::Gd { lr_decay }
        | Optimizer::Sgd { lr_decay, .. }
        | Optimizer::Adam { lr_decay, .. }) = *self;
        if lr_decay == 1.0 {
            lr
        } else {
            lr * lr_decay.powi(round as i32)
        }
    }

    /// Checks the optimizer's parameters; `field` is its path in the config.
    pub fn validate(&self, field: &str) -> Result<(), FieldError> {
        let decay = |lr_decay: f32| {
            if lr_decay > 0.0 && lr_decay <= 1.0 {
                Ok(())
            } else {
                Err(FieldError::new(
                    format!("{field}.lr_decay"),
                    format!("must lie in (0, 1], got {lr_decay}"),
                ))
            }
        };
        match *self {
            Optimizer::Gd { lr_decay } => decay(lr_decay),
            Optimizer::Adam {
                batch_size,
                lr_decay,
                keep_state,
                schedule,
            } => {
                at_least_one(&format!("{field}.batch_size"), batch_size)?;
                check_schedule(field, schedule, keep_state)?;
                decay(lr_decay)
            }
            Optimizer::Sgd {
                batch_size,
                momentum,
                weight_decay,
                lr_decay,
                keep_state,
                schedule,
                decay_layers,
            } => {
                at_least_one(&format!("{field}.batch_size"), batch_size)?;
                check_schedule(field, schedule, keep_state)?;
                if decay_layers.is_some() && weight_decay == 0.0 {
                    return Err(FieldError::new(
                        format!("{field}.decay_layers"),
                        "names the tensors `weight_decay` applies to, but `weight_decay` is 0",
                    ));
                }
                if !(0.0..1.0).contains(&momentum) {
                    return Err(FieldError::new(
                        format!("{field}.momentum"),
                        format!("must lie in [0, 1), got {momentum}"),
                    ));
                }
                if !(weight_decay >= 0.0 && weight_decay.is_finite()) {
                    return Err(FieldError::new(
                        format!("{field}.weight_decay"),
                        format!("must be a finite number >= 0, got {weight_decay}"),
                    ));
                }
                decay(lr_decay)
            }
        }
    }

    /// Whether the optimizer's state carries over between local trainings.
    pub(super) fn keeps_state(&self) -> bool {
        match *self {
            Optimizer::Gd { .. } => true,
            Optimizer::Sgd { keep_state, .. } | Optimizer::Adam { keep_state, .. } => keep_state,
        }
    }

    /// The minibatch optimizer and batch size (`None` for full-batch GD).
    /// The schedule within a local training of `steps` minibatches on
    /// `points` points, if the optimizer has one.
    pub(super) fn schedule(&self, points: usize, steps: usize) -> Option<Triangular> {
        match *self {
            Optimizer::Gd { .. } => None,
            Optimizer::Sgd {
                schedule,
                batch_size,
                ..
            }
            | Optimizer::Adam {
                schedule,
                batch_size,
                ..
            } => schedule.and_then(|s| s.resolve(points, batch_size, steps)),
        }
    }

    /// The decayed tensors' ranges in `model` and the decay's weight, when
    /// the weight decay is restricted to chosen tensors; an unknown name is
    /// an error at `optimizer.decay_layers`.
    pub(super) fn layer_decay(
        &self,
        model: &dyn Model,
    ) -> Result<Option<DecayedTensors>, FieldError> {
        match *self {
            Optimizer::Sgd {
                decay_layers: Some(names),
                weight_decay,
                ..
            } => Ok(Some((
                names.ranges("optimizer.decay_layers", model)?,
                weight_decay,
            ))),
            _ => Ok(None),
        }
    }

    pub(super) fn minibatch(&self) -> Option<(MinibatchOptimizer, usize)> {
        match *self {
            Optimizer::Gd { .. } => None,
            Optimizer::Adam { batch_size, .. } => Some((MinibatchOptimizer::Adam, batch_size)),
            Optimizer::Sgd {
                batch_size,
                momentum,
                weight_decay,
                decay_layers,
                ..
            } => Some((
                MinibatchOptimizer::Sgd {
                    momentum,
                    // restricted to chosen tensors: `layer_decay` carries it
                    weight_decay: if decay_layers.is_some() {
                        0.0
                    } else {
                        weight_decay
                    },
                },
                batch_size,
            )),
        }
    }
}

/// The coordinate ranges of the decayed tensors and the decay's weight.
pub(super) type DecayedTensors = (Vec<Range<usize>>, f32);

/// A schedule counts steps from when the optimizer's state starts, so it
/// needs the state restarted at every local training.
fn check_schedule(
    field: &str,
    schedule: Option<Schedule>,
    keep_state: bool,
) -> Result<(), FieldError> {
    if schedule.is_some() && keep_state {
        return Err(FieldError::new(
            format!("{field}.schedule"),
            "counts the steps of each local training: it needs `keep_state = false`",
        ));
    }
    Ok(())
}
