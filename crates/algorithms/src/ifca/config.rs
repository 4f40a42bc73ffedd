//! IFCA configuration.

use serde::{Deserialize, Serialize};

use crate::common::aggregate::Aggregation;
use crate::common::checked::{FieldError, Validate, at_least_one, fraction, positive};
use crate::common::init::InitScheme;

/// IFCA parameters.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// Number of cluster models `k`.
    pub clusters: usize,
    /// Option I (`gradient`) or option II (`model`).
    #[serde(default = "default_aggregation")]
    pub aggregation: Aggregation,
    /// Step size `γ`.
    pub lr: f32,
    /// Local steps `τ` per round (model averaging only).
    #[serde(default = "default_local_steps")]
    pub local_steps: usize,
    /// Fraction of clients taking part in each round.
    #[serde(default = "default_participation")]
    pub participation: f64,
    /// Independent random initialisations run side by side.
    #[serde(default = "default_restarts")]
    pub restarts: usize,
    /// How the initial cluster models are drawn.
    #[serde(default)]
    pub init: InitScheme,
    /// Stable-identity saving: once a client's cluster has not changed for this
    /// many rounds, send it only its own cluster's model. 0 turns it off.
    #[serde(default)]
    pub stable_rounds: usize,
}

fn default_aggregation() -> Aggregation {
    Aggregation::Gradient
}
fn default_local_steps() -> usize {
    10
}
fn default_participation() -> f64 {
    1.0
}
fn default_restarts() -> usize {
    1
}

impl Validate for Config {
    fn validate(&self) -> Result<(), FieldError> {
        at_least_one("clusters", self.clusters)?;
        positive("lr", f64::from(self.lr))?;
        if self.aggregation == Aggregation::Model {
            at_least_one("local_steps", self.local_steps)?;
        }
        fraction("participation", self.participation)?;
        at_least_one("restarts", self.restarts)?;
        if let InitScheme::Gaussian { std } = self.init {
            positive("init.std", f64::from(std))?;
        }
        Ok(())
    }
}
