//! One-shot clustering configuration.

use serde::{Deserialize, Serialize};

use crate::common::aggregate::Aggregation;
use crate::common::checked::{FieldError, Validate, at_least_one, at_most, fraction, positive};
use crate::common::init::InitScheme;
use crate::common::trainer::Optimizer;

/// One-shot clustering parameters.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// Number of clusters `k` for k-means.
    pub clusters: usize,
    /// Gradient steps of the local ERM.
    #[serde(default = "default_erm_steps")]
    pub erm_steps: usize,
    /// Step size of the local ERM.
    pub erm_lr: f32,
    /// Starting point of the local ERM (zeros gives the minimum-norm solution of
    /// an under-determined least-squares problem).
    #[serde(default = "default_erm_init")]
    pub erm_init: InitScheme,
    /// k-means restarts.
    #[serde(default = "default_kmeans_restarts")]
    pub kmeans_restarts: usize,
    /// FedAvg stage: gradient or model averaging.
    #[serde(default = "default_aggregation")]
    pub aggregation: Aggregation,
    /// FedAvg stage: step size.
    pub lr: f32,
    /// FedAvg stage: local steps (model averaging).
    #[serde(default = "default_local_steps")]
    pub local_steps: usize,
    /// FedAvg stage: fraction of clients per round.
    #[serde(default = "default_participation")]
    pub participation: f64,
    /// The local optimizer of the ERM and of the FedAvg stage (model
    /// averaging): full-batch GD (default) or Adam on minibatches.
    #[serde(default)]
    pub optimizer: Optimizer,
}

fn default_erm_steps() -> usize {
    200
}
fn default_erm_init() -> InitScheme {
    InitScheme::Zeros
}
fn default_kmeans_restarts() -> usize {
    10
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
        at_least_one("clusters", self.clusters)?;
        at_most(
            "clusters",
            self.clusters,
            fedcluster_core::limits::MAX_CLUSTERS,
        )?;
        at_most(
            "kmeans_restarts",
            self.kmeans_restarts,
            fedcluster_core::limits::MAX_REPLICAS,
        )?;
        at_least_one("erm_steps", self.erm_steps)?;
        positive("erm_lr", f64::from(self.erm_lr))?;
        at_least_one("kmeans_restarts", self.kmeans_restarts)?;
        positive("lr", f64::from(self.lr))?;
        if self.aggregation == Aggregation::Model {
            at_least_one("local_steps", self.local_steps)?;
        }
        fraction("participation", self.participation)?;
        self.optimizer.validate("optimizer")?;
        self.erm_init.validate("erm_init")
    }
}

impl Config {
    /// The FedAvg stage's parameters.
    pub(crate) fn fedavg(&self) -> crate::fedavg::Config {
        crate::fedavg::Config::stage(
            self.aggregation,
            self.lr,
            self.local_steps,
            self.participation,
            InitScheme::Zeros,
            self.optimizer,
        )
    }
}
