//! FeSEM configuration.

use serde::{Deserialize, Serialize};

use crate::common::checked::{FieldError, Validate, at_least_one, at_most, fraction, positive};
use crate::common::init::InitScheme;
use crate::common::trainer::Optimizer;

/// FeSEM parameters.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// `K`: the number of cluster centres.
    pub clusters: usize,
    /// Local step size.
    pub lr: f32,
    /// Local steps per round (the warm-up round's too).
    #[serde(default = "default_local_steps")]
    pub local_steps: usize,
    /// Fraction of clients taking part in each round after the warm-up.
    #[serde(default = "default_participation")]
    pub participation: f64,
    /// How the warm-up's common starting model is drawn (and, with
    /// `seeding = "random"`, the centres).
    #[serde(default)]
    pub init: InitScheme,
    /// Where the first centres come from.
    #[serde(default)]
    pub seeding: Seeding,
    /// Local optimizer: full-batch GD (default) or SGD/Adam on minibatches.
    #[serde(default)]
    pub optimizer: Optimizer,
}

/// The first centres.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub enum Seeding {
    /// k-means++ seeding among the warm-up's local models (D² sampling from
    /// the stream `(seed, Clustering, 0, 0)`), the usual start of an EM on
    /// distances.
    #[default]
    #[serde(rename = "kmeans++")]
    KmeansPlusPlus,
    /// `K` models drawn with `init`, as the paper's "randomly initialise the
    /// centres" (and the FlexCFL implementation's re-initialised models).
    #[serde(rename = "random")]
    Random,
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
        self.init.validate("init")?;
        self.optimizer.validate("optimizer")
    }
}
