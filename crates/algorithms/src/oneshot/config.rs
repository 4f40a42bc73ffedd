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
    /// Whether the clients start their ERM from their own draw of `erm_init`
    /// or from one draw the server sends them all (see [`ErmStart`]).
    #[serde(default, skip_serializing_if = "ErmStart::is_own")]
    pub erm_start: ErmStart,
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

/// Where each client's local ERM starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ErmStart {
    /// Each client draws its own start from `erm_init` on its own stream:
    /// the paper's setting (convex losses, where the start does not matter).
    #[default]
    Own,
    /// The server draws one start `w_0` from `erm_init` on its `(seed, Init)`
    /// stream and sends it with the ERM request, so every local model starts
    /// from the same point (as SR-FCA's ONE_SHOT does): a neural network's
    /// local models are only comparable coordinate by coordinate, as k-means
    /// compares them, when they share their start.
    Shared,
}

impl ErmStart {
    fn is_own(&self) -> bool {
        *self == ErmStart::Own
    }
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
