//! The FedSoft server: importance-weighted centre updates.

use std::sync::Arc;

use serde::{Deserialize, Serialize};

use fedcluster_core::params::all_finite;
use fedcluster_core::{
    AlgoError, ClientId, Model, Purpose, Rng, RoundCtx, ServerHalf, Snapshot, stream,
};

use super::{Centres, SoftReply};
use crate::common::aggregate::{LossMeter, ModelSums};
use crate::common::checked::{Checked, FieldError, Validate, at_least_one, fraction, positive, at_most};
use crate::common::init::InitScheme;
use crate::common::sampling::participants;
use crate::common::trainer::Optimizer;

/// FedSoft parameters.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// Number of centres `S`.
    pub clusters: usize,
    /// Local step size.
    pub lr: f32,
    /// Proximal weight `μ`.
    #[serde(default = "default_mu")]
    pub mu: f32,
    /// Local gradient steps per round.
    #[serde(default = "default_local_steps")]
    pub local_steps: usize,
    /// Re-estimate the importance weights every this many rounds.
    #[serde(default = "default_estimate_every")]
    pub estimate_every: usize,
    /// Floor `σ` of every importance weight.
    #[serde(default = "default_smoothing")]
    pub smoothing: f64,
    /// Fraction of clients per round.
    #[serde(default = "default_participation")]
    pub participation: f64,
    /// How the centres are drawn (independently).
    #[serde(default)]
    pub init: InitScheme,
    /// The local optimizer: full-batch GD (default) or Adam on minibatches.
    #[serde(default)]
    pub optimizer: Optimizer,
}

fn default_mu() -> f32 {
    0.1
}
fn default_local_steps() -> usize {
    10
}
fn default_estimate_every() -> usize {
    5
}
fn default_smoothing() -> f64 {
    1e-4
}
fn default_participation() -> f64 {
    1.0
}

impl Validate for Config {
    fn validate(&self) -> Result<(), FieldError> {
        at_least_one("clusters", self.clusters)?;
        at_most("clusters", self.clusters, fedcluster_core::limits::MAX_CLUSTERS)?;
        positive("lr", f64::from(self.lr))?;
        if !(self.mu >= 0.0 && self.mu.is_finite()) {
            return Err(FieldError::new(
                "mu",
                format!("must be a finite number >= 0, got {}", self.mu),
            ));
        }
        at_least_one("local_steps", self.local_steps)?;
        at_least_one("estimate_every", self.estimate_every)?;
        if !(0.0..1.0 / self.clusters as f64).contains(&self.smoothing) {
            return Err(FieldError::new(
                "smoothing",
                format!("must lie in [0, 1/clusters), got {}", self.smoothing),
            ));
        }
        fraction("participation", self.participation)?;
        self.optimizer.validate("optimizer")?;
        self.init.validate("init")
    }
}

/// The server half of FedSoft.
#[derive(Debug, serde::Serialize, serde::Deserialize)]
pub struct FedSoftServer {
    config: Checked<Config>,
    p: usize,
    models: Vec<f32>,
    /// Each client's largest importance weight.
    assignment: Vec<Option<usize>>,
    /// Importance-weighted sums of the round's models, per centre.
    sums: ModelSums,
    loss: LossMeter,
    train_loss: Option<f64>,
}

impl FedSoftServer {
    /// Starts from `given` (one model per centre) instead of the drawn centres.
    pub fn start_from(&mut self, given: &[Vec<f32>]) -> Result<(), FieldError> {
        crate::common::init::start_from(&mut self.models, self.p, given, "clusters")
    }

    /// `S` centres drawn from the stream `(seed, Init, 0)` for `m` clients.
    pub fn new(config: Checked<Config>, model: &dyn Model, m: usize, seed: u64) -> Self {
        let p = model.num_params();
        let mut rng = stream(seed, Purpose::Init, 0, 0);
        let mut models = vec![0.0; config.clusters * p];
        for c in models.chunks_exact_mut(p) {
            config.init.fill(model, &mut rng, c);
        }
        Self {
            config,
            p,
            models,
            assignment: vec![None; m],
            sums: ModelSums::default(),
            loss: LossMeter::default(),
            train_loss: None,
        }
    }
}

impl ServerHalf for FedSoftServer {
    type Down = Centres;
    type Up = SoftReply;

    fn plan(
        &mut self,
        ctx: &RoundCtx,
        rng: &mut Rng,
    ) -> Result<Vec<(ClientId, Centres)>, AlgoError> {
        let k = self.config.clusters;
        self.sums.reset(k, self.p);
        let msg = Centres {
            models: Arc::new(self.models.clone()),
            estimate: ctx.round.is_multiple_of(self.config.estimate_every),
        };
        Ok(
            participants(self.assignment.len(), self.config.participation, rng)
                .into_iter()
                .map(|i| (i, msg.clone()))
                .collect(),
        )
    }

    fn receive(&mut self, ctx: &RoundCtx, id: ClientId, up: SoftReply) -> Result<(), AlgoError> {
        let (p, k) = (self.p, self.config.clusters);
        if up.model.len() != p || up.importance.len() != k {
            return Err(AlgoError::malformed(ctx.round, id));
        }
        let Some(loss) = up.loss else {
            return Err(AlgoError::client_diverged(ctx.round, id));
        };
        let n = up.samples as f64;
        for (s, u) in up.importance.iter().enumerate() {
            self.sums.add(s, &up.model, u * n);
        }
        let best = (0..k)
            .max_by(|&a, &b| up.importance[a].total_cmp(&up.importance[b]))
            .unwrap_or(0);
        self.assignment[id] = Some(best);
        self.loss.add(loss, up.samples);
        Ok(())
    }

    fn finish(&mut self, ctx: &RoundCtx) -> Result<(), AlgoError> {
        self.sums.finish(&mut self.models);
        self.train_loss = self.loss.take_mean();
        if !all_finite(&self.models) {
            return Err(AlgoError::models_diverged(ctx.round));
        }
        Ok(())
    }

    fn snapshot(&self) -> Snapshot<'_> {
        Snapshot::single(&self.models, self.p, &self.assignment, self.train_loss)
    }
}
