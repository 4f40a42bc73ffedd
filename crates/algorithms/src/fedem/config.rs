//! FedEM configuration (FedRC takes the same keys).

use serde::{Deserialize, Serialize};

use crate::common::checked::{FieldError, Validate, at_least_one, at_most, fraction, positive};
use crate::common::init::InitScheme;
use crate::common::trainer::Optimizer;

/// FedEM (and FedRC) parameters.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// Number of mixture components `M` (shared models).
    pub clusters: usize,
    /// Local step size.
    pub lr: f32,
    /// Local steps per component per round (full-batch GD steps, or
    /// minibatches under SGD and Adam).
    #[serde(default = "default_local_steps")]
    pub local_steps: usize,
    /// Fraction of clients per round.
    #[serde(default = "default_participation")]
    pub participation: f64,
    /// How the components are drawn (independently).
    #[serde(default)]
    pub init: InitScheme,
    /// The local optimizer: full-batch GD (default), SGD or Adam on
    /// minibatches drawn in proportion to the responsibilities.
    #[serde(default)]
    pub optimizer: Optimizer,
}

fn default_local_steps() -> usize {
    10
}
fn default_participation() -> f64 {
    1.0
}

impl Validate for Config {
    fn validate(&self) -> Result<(), FieldError> {
        at_least_one("clusters", self.clusters)?;
        at_most(
            "clusters",
            self.clusters,
            fedcluster_core::limits::MAX_CLUSTERS,
        )?;
        positive("lr", f64::from(self.lr))?;
        at_least_one("local_steps", self.local_steps)?;
        fraction("participation", self.participation)?;
        self.optimizer.validate("optimizer")?;
        self.init.validate("init")
    }
}
