//! FedAvg configuration (shared by the global and oracle baselines).

use serde::{Deserialize, Serialize};

use crate::common::aggregate::{Aggregation, Weighting};
use crate::common::checked::{FieldError, Validate, at_least_one, fraction, positive};
use crate::common::init::InitScheme;
use crate::common::round_schedule::{self, RoundSchedule};
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
    /// Model averaging: each model weighted by its client's samples (default)
    /// or all alike (`"uniform"`, the SR-FCA public code's plain mean).
    #[serde(default, skip_serializing_if = "Weighting::is_samples")]
    pub weighting: Weighting,
    /// The round's participants train side by side from the round's model
    /// (`"parallel"`, default) or one after another (`"sequential"`), each
    /// from where the previous one stopped, as the SR-FCA public code's
    /// `ClusterTrainer` does (see [`Clients::Sequential`]).
    #[serde(default, skip_serializing_if = "Clients::is_parallel")]
    pub clients: Clients,
    /// The step size over the rounds (`crate::common::round_schedule`):
    /// absent (default), `lr` every round.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub round_schedule: Option<RoundSchedule>,
}

/// How a round's participants train (model averaging).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Clients {
    /// Every participant from the round's model, in parallel (FedAvg).
    #[default]
    Parallel,
    /// Emulates the SR-FCA public code (`src/trainers.py`, `ClusterTrainer`
    /// at commit a1b418f): it hands every sampled client the round model's own
    /// tensors (`param.data = wts[name]`), so the clients of a cluster train
    /// one after another, each from where the last stopped, in the sampled
    /// (random) order; on a GPU each client's `model.cpu()` keeps a copy of
    /// the shared weights as they were when it finished, and the round's model
    /// is the mean of these checkpoints. Here a round of `c` participants per
    /// cluster takes `c` engine rounds, one link of the chain each (set
    /// `rounds` to `c` times the paper's rounds); the cluster's model changes
    /// when its chain ends, to the average of the checkpoints (`weighting`).
    Sequential,
}

impl Clients {
    /// Whether this is the default (configs leave it unwritten).
    pub fn is_parallel(&self) -> bool {
        *self == Clients::Parallel
    }
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

impl Config {
    /// Plain FedAvg (sample-weighted, clients in parallel): the FedAvg stage
    /// of a multi-phase algorithm (one-shot, FL+HC, PACFL).
    pub(crate) fn stage(
        aggregation: Aggregation,
        lr: f32,
        local_steps: usize,
        participation: f64,
        init: InitScheme,
        optimizer: Optimizer,
    ) -> Self {
        Config {
            aggregation,
            lr,
            local_steps,
            participation,
            init,
            optimizer,
            weighting: Weighting::Samples,
            clients: Default::default(),
            round_schedule: None,
        }
    }
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
        round_schedule::validate(self.round_schedule, "round_schedule")?;
        if self.clients == Clients::Sequential && self.aggregation != Aggregation::Model {
            return Err(FieldError::new(
                "clients",
                "\"sequential\" chains local trainings; it needs aggregation = \"model\"",
            ));
        }
        Ok(())
    }
}
