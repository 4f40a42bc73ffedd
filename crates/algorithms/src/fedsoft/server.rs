//! The FedSoft server: importance-weighted centre updates.

use std::sync::Arc;

use serde::{Deserialize, Serialize};

use fedcluster_core::params::all_finite;
use fedcluster_core::{
    AlgoError, ClientId, Model, Purpose, Rng, RoundCtx, ServerHalf, Snapshot, stream,
};

use super::sampling::{Sampling, per_centre};
use super::{Centres, SoftReply};
use crate::common::aggregate::{LossMeter, ModelSums};
use crate::common::checked::{
    Checked, FieldError, Validate, at_least_one, at_most, fraction, positive,
};
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
    /// How participants are drawn: `"uniform"` (default), or per centre by
    /// importance weight (`"importance"`, the paper) or by importance weight
    /// times size (`"importance_size"`, the public code), `participation · m /
    /// S` clients per centre.
    #[serde(default, skip_serializing_if = "Sampling::is_uniform")]
    pub sampling: Sampling,
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
        at_most(
            "clusters",
            self.clusters,
            fedcluster_core::limits::MAX_CLUSTERS,
        )?;
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
    /// Each client's last importance weights, `m x S` (per-centre sampling
    /// only; empty under uniform sampling).
    #[serde(default)]
    importance: Vec<f64>,
    /// Each client's size `n_k` (`importance_size` sampling only).
    #[serde(default)]
    sizes: Vec<usize>,
}

impl FedSoftServer {
    /// Draws participants by importance, `sizes` the clients' `n_k` (needed
    /// by `importance_size` only); uniform sampling ignores it.
    pub fn with_sizes(mut self, sizes: Option<&[usize]>) -> Result<Self, FieldError> {
        let (m, k) = (self.assignment.len(), self.config.clusters);
        match self.config.sampling {
            Sampling::Uniform => return Ok(self),
            Sampling::Importance => {}
            Sampling::ImportanceSize => match sizes {
                Some(n) if n.len() == m => self.sizes = n.to_vec(),
                _ => {
                    return Err(FieldError::new(
                        "sampling",
                        "\"importance_size\" needs every client's size, which this run does not \
                         give the server",
                    ));
                }
            },
        }
        self.importance = vec![1.0 / k as f64; m * k];
        Ok(self)
    }

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
            importance: Vec::new(),
            sizes: Vec::new(),
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
        let m = self.assignment.len();
        let chosen = match self.config.sampling {
            Sampling::Uniform => participants(m, self.config.participation, rng),
            sampling => {
                let count = (self.config.participation * m as f64 / k as f64).round() as usize;
                let size = |i: usize| match sampling {
                    Sampling::ImportanceSize => self.sizes[i] as f64,
                    _ => 1.0,
                };
                let weight = |i: usize, s: usize| self.importance[i * k + s] * size(i);
                per_centre(m, k, count.max(1), weight, rng)
            }
        };
        Ok(chosen.into_iter().map(|i| (i, msg.clone())).collect())
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
        if let Some(row) = self.importance.get_mut(id * k..(id + 1) * k) {
            row.copy_from_slice(&up.importance);
        }
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
