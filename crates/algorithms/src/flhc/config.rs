//! FL+HC configuration.

use serde::{Deserialize, Serialize};

use crate::common::agglomerative::{Cut, Linkage, Metric};
use crate::common::aggregate::Aggregation;
use crate::common::checked::{FieldError, Validate, at_least_one, at_most, fraction, positive};
use crate::common::init::InitScheme;
use crate::common::trainer::Optimizer;

/// FL+HC parameters.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// Local step size.
    pub lr: f32,
    /// Local steps per round.
    #[serde(default = "default_local_steps")]
    pub local_steps: usize,
    /// Fraction of clients taking part in each FedAvg round (the clustering
    /// round takes every client).
    #[serde(default = "default_participation")]
    pub participation: f64,
    /// `n`: FedAvg rounds of one global model before the clustering round,
    /// which is round `n` (from 0).
    #[serde(default = "default_cluster_round")]
    pub cluster_round: usize,
    /// Where the dendrogram is cut: a distance threshold (the paper) or a
    /// number of clusters.
    pub cut: Cut,
    /// The distance between two clients' updates.
    #[serde(default)]
    pub metric: Metric,
    /// The linkage (Ward needs the Euclidean metric).
    #[serde(default = "default_linkage")]
    pub linkage: Linkage,
    /// How the global model is drawn.
    #[serde(default)]
    pub init: InitScheme,
    /// Local optimizer: full-batch GD (default) or SGD/Adam on minibatches.
    #[serde(default)]
    pub optimizer: Optimizer,
}

fn default_local_steps() -> usize {
    10
}
fn default_participation() -> f64 {
    1.0
}
fn default_cluster_round() -> usize {
    10
}
fn default_linkage() -> Linkage {
    Linkage::Ward
}

impl Validate for Config {
    fn validate(&self) -> Result<(), FieldError> {
        positive("lr", f64::from(self.lr))?;
        at_least_one("local_steps", self.local_steps)?;
        fraction("participation", self.participation)?;
        at_most(
            "cluster_round",
            self.cluster_round,
            fedcluster_core::limits::MAX_ROUNDS,
        )?;
        self.cut.validate("cut")?;
        if self.linkage == Linkage::Ward && self.metric != Metric::Euclidean {
            return Err(FieldError::new(
                "linkage",
                "\"ward\" merges by variance, which needs metric = \"euclidean\"",
            ));
        }
        self.init.validate("init")?;
        self.optimizer.validate("optimizer")
    }
}

impl Config {
    /// FedAvg's parameters, for the global stage and for the clusters.
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
