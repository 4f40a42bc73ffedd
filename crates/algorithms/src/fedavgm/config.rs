//! FedAvgM configuration.

use serde::{Deserialize, Serialize};

use crate::common::checked::{FieldError, Validate, at_least_one, fraction, positive};
use crate::common::init::InitScheme;
use crate::common::trainer::Optimizer;

/// FedAvgM parameters.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// The clients' local step size.
    pub lr: f32,
    /// Local steps per round.
    #[serde(default = "default_local_steps")]
    pub local_steps: usize,
    /// The server's step size `η` along the momentum.
    #[serde(default = "default_server_lr")]
    pub server_lr: f32,
    /// The server's momentum `β`, in `[0, 1)`.
    #[serde(default = "default_server_momentum")]
    pub server_momentum: f32,
    /// Fraction of clients taking part in each round.
    #[serde(default = "default_participation")]
    pub participation: f64,
    /// How the global model is drawn.
    #[serde(default)]
    pub init: InitScheme,
    /// The local optimizer: full-batch GD (default) or minibatch Adam.
    #[serde(default)]
    pub optimizer: Optimizer,
}

fn default_local_steps() -> usize {
    10
}
fn default_server_lr() -> f32 {
    1.0
}
fn default_server_momentum() -> f32 {
    0.9
}
fn default_participation() -> f64 {
    1.0
}

impl Validate for Config {
    fn validate(&self) -> Result<(), FieldError> {
        positive("lr", f64::from(self.lr))?;
        at_least_one("local_steps", self.local_steps)?;
        positive("server_lr", f64::from(self.server_lr))?;
        if !(0.0..1.0).contains(&self.server_momentum) {
            return Err(FieldError::new(
                "server_momentum",
                format!("must lie in [0, 1), got {}", self.server_momentum),
            ));
        }
        fraction("participation", self.participation)?;
        self.init.validate("init")?;
        self.optimizer.validate("optimizer")
    }
}
