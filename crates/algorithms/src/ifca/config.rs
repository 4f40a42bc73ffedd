//! IFCA configuration.

use serde::{Deserialize, Serialize};

use crate::common::aggregate::{Aggregation, Weighting};
use crate::common::checked::{FieldError, Validate, at_least_one, at_most, fraction, positive};
use crate::common::init::InitScheme;
use crate::common::round_schedule::{self, RoundSchedule, scheduled};
use crate::common::trainer::Optimizer;
use crate::fedavg::Clients;
use fedcluster_core::limits::{MAX_CLUSTERS, MAX_REPLICAS};

use super::local_step::LocalStep;

/// IFCA parameters.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// Number of cluster models `k`.
    pub clusters: usize,
    /// Option I (`gradient`) or option II (`model`).
    #[serde(default = "default_aggregation")]
    pub aggregation: Aggregation,
    /// Step size `γ`, or a list of step sizes swept side by side: the replicas
    /// are then every restart with every step size (restart-major within a step
    /// size), and the lowest final training loss selects among all of them.
    pub lr: StepSizes,
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
    /// Weight sharing (Section IV-C, Fig. 2): every layer but the last is shared by
    /// the clusters and averaged over all clients; only the heads are per cluster.
    #[serde(default)]
    pub weight_sharing: bool,
    /// Polyak momentum `β` of CFL-MGD (0: plain IFCA): clients update with
    /// `u <- β u + ∇`, `θ <- θ - γ u`, starting from their cluster's momentum
    /// buffer, which the server averages per cluster like the models.
    #[serde(default)]
    pub momentum: f32,
    /// Local optimizer of model averaging: full-batch GD (default), or SGD or
    /// Adam on minibatches, its state kept by each client (per restart); each
    /// with a per-round step-size decay. With `momentum`, GD or SGD (its
    /// `momentum` left 0): CFL-MGD's heavy-ball steps, full-batch or on
    /// minibatches.
    #[serde(default)]
    pub optimizer: Optimizer,
    /// Redraw a replica's initial models (up to [`super::redraw::MAX_REDRAWS`]
    /// times) until every cluster is chosen by at least this share of its
    /// first round's participants; 0 (default) keeps the first draw.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub min_share: f64,
    /// Rounds of FedAvg before the clustering (the IFCA code's FEMNIST
    /// protocol, `fedavg_pretrain`): every participant trains cluster 0's
    /// model, without an assignment; at the end every cluster model takes its
    /// layers but the last (`[0, Model::head_start)`, the trunk) and keeps its
    /// own initial head. 0 (default): none.
    #[serde(default, skip_serializing_if = "is_zero_rounds")]
    pub pretrain_rounds: usize,
    /// After pretraining, clients train only the last layer (the head); the
    /// trunk stays as it is (the IFCA code's FEMNIST `USE_PARTIAL_TRAINING`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub freeze_trunk: bool,
    /// Model averaging: each model weighted by its client's samples (default)
    /// or all alike (`"uniform"`, the SR-FCA public code's plain mean).
    #[serde(default, skip_serializing_if = "Weighting::is_samples")]
    pub weighting: Weighting,
    /// The round's participants train side by side from the round's models
    /// (`"parallel"`, default) or, emulating the SR-FCA public code's IFCA,
    /// one after another within each cluster (`"sequential"`, see the
    /// module `ifca::sequential`).
    #[serde(default, skip_serializing_if = "Clients::is_parallel")]
    pub clients: Clients,
    /// `clients = "sequential"`: each cluster's participants of a round, drawn
    /// from its members (all of them when it has no more; the SR-FCA code's
    /// `num_clients_per_round`); absent: the round's `participation` share of
    /// all clients, each in its cluster.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clients_per_round: Option<usize>,
    /// The step size over the rounds (`crate::common::round_schedule`), of
    /// every replica: absent (default), its `lr` every round.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub round_schedule: Option<RoundSchedule>,
}

fn is_zero_rounds(v: &usize) -> bool {
    *v == 0
}

fn is_zero(v: &f64) -> bool {
    *v == 0.0
}

/// One step size or several swept side by side (a number or a list of
/// numbers in the config).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum StepSizes {
    /// A single step size.
    One(f32),
    /// Several step sizes, each run with every restart.
    Sweep(Vec<f32>),
}

impl StepSizes {
    /// The step sizes, in order.
    pub fn values(&self) -> &[f32] {
        match self {
            StepSizes::One(lr) => std::slice::from_ref(lr),
            StepSizes::Sweep(lrs) => lrs,
        }
    }
}

impl<'de> Deserialize<'de> for StepSizes {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(StepSizesVisitor)
    }
}

/// Reads a number or a list of numbers, with an error saying so otherwise
/// (serde's untagged enums say only "did not match any variant").
struct StepSizesVisitor;

impl<'de> serde::de::Visitor<'de> for StepSizesVisitor {
    type Value = StepSizes;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a step size (a number, e.g. 0.1) or a list of step sizes (e.g. [0.1, 0.3])")
    }

    fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<StepSizes, E> {
        Ok(StepSizes::One(v as f32))
    }

    fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<StepSizes, E> {
        Ok(StepSizes::One(v as f32))
    }

    fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<StepSizes, E> {
        Ok(StepSizes::One(v as f32))
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<StepSizes, A::Error> {
        let mut values = Vec::new();
        while let Some(v) = seq.next_element::<f32>()? {
            values.push(v);
        }
        Ok(StepSizes::Sweep(values))
    }
}

impl From<f32> for StepSizes {
    fn from(lr: f32) -> Self {
        StepSizes::One(lr)
    }
}

impl Config {
    /// The local step the `aggregation`, `momentum` and `optimizer` keys select;
    /// their other combinations are errors naming the field.
    pub fn local_step(&self) -> Result<LocalStep, FieldError> {
        if !(0.0..1.0).contains(&self.momentum) {
            return Err(FieldError::new(
                "momentum",
                format!("must lie in [0, 1), got {}", self.momentum),
            ));
        }
        if self.momentum > 0.0 && self.weight_sharing {
            return Err(FieldError::new(
                "weight_sharing",
                "is not supported together with momentum yet",
            ));
        }
        self.optimizer.validate("optimizer")?;
        let momentum = self.momentum > 0.0;
        let plain_gd = self.optimizer == Optimizer::default();
        Ok(match (self.aggregation, momentum, self.optimizer) {
            (Aggregation::Gradient, false, _) if plain_gd => LocalStep::Gradient,
            (Aggregation::Gradient, true, _) if plain_gd => LocalStep::GradientWithMomentum {
                beta: self.momentum,
            },
            (Aggregation::Model, false, optimizer) => LocalStep::Train {
                steps: self.local_steps,
                optimizer,
            },
            (
                Aggregation::Model,
                true,
                optimizer @ (Optimizer::Gd { .. } | Optimizer::Sgd { .. }),
            ) => {
                momentum_optimizer(optimizer)?;
                LocalStep::TrainWithMomentum {
                    steps: self.local_steps,
                    beta: self.momentum,
                    optimizer,
                }
            }
            _ => {
                return Err(FieldError::new(
                    "optimizer",
                    "a local optimizer (Adam, SGD, a step-size decay) applies to model \
                     averaging only, and with momentum only SGD or GD",
                ));
            }
        })
    }

    /// Number of replicas: restarts times step sizes.
    pub fn replicas(&self) -> usize {
        self.restarts * self.lr.values().len()
    }

    /// Step size of replica `r`.
    pub fn replica_lr(&self, r: usize) -> f32 {
        self.lr.values()[r / self.restarts]
    }

    /// Step size of replica `r` at `round`, under `round_schedule`.
    pub fn round_lr(&self, r: usize, round: usize) -> f32 {
        scheduled(self.round_schedule, self.replica_lr(r), round)
    }
}

/// With CFL-MGD's momentum the buffer is the cluster's (or the client's own,
/// `buffer`) and `β` is the `momentum` key: SGD's own momentum and
/// `keep_state` must be left alone.
fn momentum_optimizer(optimizer: Optimizer) -> Result<(), FieldError> {
    if let Optimizer::Sgd {
        momentum,
        keep_state,
        ..
    } = optimizer
    {
        if momentum != 0.0 {
            return Err(FieldError::new(
                "optimizer.momentum",
                "with CFL-MGD's momentum, β is the `momentum` key; leave the optimizer's at 0",
            ));
        }
        if !keep_state {
            return Err(FieldError::new(
                "optimizer.keep_state",
                "with CFL-MGD's momentum the buffer comes with the cluster model (or the \
                 client's own, `buffer`); keep_state does not apply",
            ));
        }
    }
    Ok(())
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
        let lrs = self.lr.values();
        if lrs.is_empty() {
            return Err(FieldError::new("lr", "needs at least one step size"));
        }
        for (i, lr) in lrs.iter().enumerate() {
            let field = if lrs.len() == 1 {
                "lr".to_string()
            } else {
                format!("lr[{i}]")
            };
            positive(&field, f64::from(*lr))?;
        }
        if self.aggregation == Aggregation::Model {
            at_least_one("local_steps", self.local_steps)?;
        }
        fraction("participation", self.participation)?;
        at_least_one("restarts", self.restarts)?;
        at_most("clusters", self.clusters, MAX_CLUSTERS)?;
        at_most("lr", lrs.len(), MAX_REPLICAS)?;
        at_most(
            "restarts",
            self.restarts.saturating_mul(lrs.len()),
            MAX_REPLICAS,
        )?;
        self.init.validate("init")?;
        round_schedule::validate(self.round_schedule, "round_schedule")?;
        if !(0.0..=1.0 / self.clusters as f64).contains(&self.min_share) {
            return Err(FieldError::new(
                "min_share",
                format!(
                    "must lie in [0, 1/clusters] (every cluster can hold it), got {}",
                    self.min_share
                ),
            ));
        }
        self.local_step()?;
        if self.freeze_trunk && self.momentum > 0.0 {
            return Err(FieldError::new(
                "freeze_trunk",
                "is not supported together with momentum",
            ));
        }
        validate_sequential(self)?;
        if self.pretrain_rounds > 0 && self.min_share > 0.0 {
            return Err(FieldError::new(
                "min_share",
                "checks the first round's clusters; with pretrain_rounds there is none to check",
            ));
        }
        Ok(())
    }
}

/// The options `clients = "sequential"` cannot be combined with, and
/// `clients_per_round` without it; errors name the field.
fn validate_sequential(config: &Config) -> Result<(), FieldError> {
    if config.clients == Clients::Parallel {
        if config.clients_per_round.is_some() {
            return Err(FieldError::new(
                "clients_per_round",
                "draws each cluster's chain; it needs clients = \"sequential\"",
            ));
        }
        return Ok(());
    }
    if let Some(count) = config.clients_per_round {
        at_least_one("clients_per_round", count)?;
    }
    let conflicts = [
        (
            config.aggregation != Aggregation::Model,
            "aggregation",
            "needs aggregation = \"model\"",
        ),
        (
            config.replicas() > 1,
            "restarts",
            "runs one replica: one restart and one step size",
        ),
        (config.momentum > 0.0, "momentum", "is not supported"),
        (config.weight_sharing, "weight_sharing", "is not supported"),
        (
            config.pretrain_rounds > 0,
            "pretrain_rounds",
            "is not supported",
        ),
        (config.freeze_trunk, "freeze_trunk", "is not supported"),
        (config.min_share > 0.0, "min_share", "is not supported"),
        (
            config.stable_rounds > 0,
            "stable_rounds",
            "is not supported",
        ),
    ];
    match conflicts.into_iter().find(|(bad, ..)| *bad) {
        Some((_, field, why)) => Err(FieldError::new(
            field,
            format!("with clients = \"sequential\" {field} {why}"),
        )),
        None => Ok(()),
    }
}
