//! The local optimizer as configs name it: full-batch gradient descent, SGD
//! or Adam on minibatches, each with its keys (`lr_decay`, `keep_state`,
//! `batch_size`, momentum, weight decay), its validation, and the
//! [`MinibatchSpec`](fedcluster_core::train::MinibatchSpec) optimizer it maps
//! to. [`super::trainer::LocalTrainer`] runs it.

use serde::{Deserialize, Serialize};

use fedcluster_core::train::MinibatchOptimizer;

use super::checked::{FieldError, at_least_one};

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
                ..
            } => {
                at_least_one(&format!("{field}.batch_size"), batch_size)?;
                decay(lr_decay)
            }
            Optimizer::Sgd {
                batch_size,
                momentum,
                weight_decay,
                lr_decay,
                ..
            } => {
                at_least_one(&format!("{field}.batch_size"), batch_size)?;
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
    pub(super) fn minibatch(&self) -> Option<(MinibatchOptimizer, usize)> {
        match *self {
            Optimizer::Gd { .. } => None,
            Optimizer::Adam { batch_size, .. } => Some((MinibatchOptimizer::Adam, batch_size)),
            Optimizer::Sgd {
                batch_size,
                momentum,
                weight_decay,
                ..
            } => Some((
                MinibatchOptimizer::Sgd {
                    momentum,
                    weight_decay,
                },
                batch_size,
            )),
        }
    }
}
