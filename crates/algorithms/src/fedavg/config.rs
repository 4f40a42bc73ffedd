//! FedAvg configuration (shared by the global and oracle baselines).

use serde::{Deserialize, Serialize};

use crate::common::aggregate::Aggregation;
use crate::common::checked::{FieldError, Validate, at_least_one, fraction, positive};
use crate::common::init::InitScheme;
use crate::common::trainer::Optimizer;

/// FedAvg parameters.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// Gradient averaging or model averaging.
    #[serde(default = "default_aggregation")]
    pub aggregation: Aggregation,
    /// Step size.
    pub lr: f32,
    /// Local steps per round (model averaging only).
    #[serde(default = "default_local_steps")]
    pub local_steps: usize,
    /// Fraction of clients taking part in each round.
    #[serde(default = "default_participation")]
    pub participation: f64,
    /// How the initial models are drawn.
    #[serde(default)]
    pub init: InitScheme,
    /// Local optimizer (model averaging): full-batch GD (default) or Adam on
    /// minibatches, its state kept by each client.
    #[serde(default)]
    pub optimizer: Optimizer,
}

fn default_aggregation() -> Aggregation {
    Aggregation::Model
}
fn default_local_steps() -> usize {
    10
}
fn default_participation() -> f64 {
    1.0
}

impl Validate for Config {
    fn validate(&self) -> Result<(), FieldError> {
        positive("lr", f64::from(self.lr))?;
        if self.aggregation == Aggregation::Model {
            at_least_one("local_steps", self.local_steps)?;
        }
        fraction("participation", self.participation)?;
        self.init.validate("init")?;
        self.optimizer.validate("optimizer")?;
        Ok(())
    }
}
