//! PACFL configuration.

use serde::{Deserialize, Serialize};

use crate::common::agglomerative::{Cut, Linkage};
use crate::common::aggregate::Aggregation;
use crate::common::checked::{FieldError, Validate, at_least_one, at_most, fraction, positive};
use crate::common::init::InitScheme;
use crate::common::trainer::Optimizer;

/// PACFL parameters.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// `p`: principal vectors each client sends (per class with
    /// `per_class`); the code's `n_basis`.
    #[serde(default = "default_basis")]
    pub basis: usize,
    /// One subspace per class, side by side (the code's label-skew
    /// experiments), instead of one for all the client's data.
    #[serde(default)]
    pub per_class: bool,
    /// The proximity of two clients' subspaces, in degrees.
    #[serde(default)]
    pub proximity: Proximity,
    /// Where the dendrogram is cut: `β`, an angle in degrees (the code's
    /// `cluster_alpha`), or a number of clusters.
    pub cut: Cut,
    /// The linkage; `"weighted"` is the code's `average`.
    #[serde(default = "default_linkage")]
    pub linkage: Linkage,
    /// FedAvg stage: local step size.
    pub lr: f32,
    /// FedAvg stage: local steps per round.
    #[serde(default = "default_local_steps")]
    pub local_steps: usize,
    /// FedAvg stage: fraction of clients per round (the code's `frac`).
    #[serde(default = "default_participation")]
    pub participation: f64,
    /// How the model every cluster starts from is drawn.
    #[serde(default)]
    pub init: InitScheme,
    /// FedAvg stage: full-batch GD (default) or SGD/Adam on minibatches.
    #[serde(default)]
    pub optimizer: Optimizer,
}

/// How close two clients' data subspaces are.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Proximity {
    /// The smallest principal angle between the two subspaces (the paper).
    #[default]
    SmallestAngle,
    /// The smallest angle between a principal vector of one client and one
    /// of the other, `acos(max |⟨u_i, v_j⟩|)` (the public code's
    /// `calculating_adjacency`, with the sign taken off).
    MinPairwise,
}

fn default_basis() -> usize {
    3
}
fn default_linkage() -> Linkage {
    Linkage::Weighted
}
fn default_local_steps() -> usize {
    10
}
fn default_participation() -> f64 {
    1.0
}

impl Validate for Config {
    fn validate(&self) -> Result<(), FieldError> {
        at_least_one("basis", self.basis)?;
        at_most("basis", self.basis, fedcluster_core::limits::MAX_CLUSTERS)?;
        self.cut.validate("cut")?;
        positive("lr", f64::from(self.lr))?;
        at_least_one("local_steps", self.local_steps)?;
        fraction("participation", self.participation)?;
        self.init.validate("init")?;
        self.optimizer.validate("optimizer")
    }
}

impl Config {
    /// The FedAvg stage's parameters.
    pub(crate) fn fedavg(&self) -> crate::fedavg::Config {
        crate::fedavg::Config::stage(
            Aggregation::Model,
            self.lr,
            self.local_steps,
            self.participation,
            self.init,
            self.optimizer,
        )
    }
}
