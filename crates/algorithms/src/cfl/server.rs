//! The CFL server: FedAvg inside each cluster, and bi-partitions when a
//! cluster's members agree on average but not individually.

use std::sync::Arc;

use serde::{Deserialize, Serialize};

use fedcluster_core::params::{all_finite, dot, norm};
use fedcluster_core::{
    AlgoError, ClientId, Model, Purpose, Rng, RoundCtx, ServerHalf, Snapshot, stream,
};

use super::bipartition::optimal_bipartition;
use crate::common::aggregate::{LossMeter, ModelSums};
use crate::common::checked::{Checked, FieldError, Validate, at_least_one, positive};
use crate::common::init::InitScheme;
use crate::common::messages::{ClusterModel, ModelReply};
use crate::common::round_schedule::{self, RoundSchedule};
use crate::common::sampling::members_for_round;
use crate::common::trainer::Optimizer;

/// CFL parameters.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// Local step size.
    pub lr: f32,
    /// Local full-batch gradient steps per round.
    #[serde(default = "default_local_steps")]
    pub local_steps: usize,
    /// Split only when the cluster's mean update norm is below this.
    pub eps1: f64,
    /// ... and its largest client update norm is above this.
    pub eps2: f64,
    /// No split before this round.
    #[serde(default = "default_warmup")]
    pub warmup_rounds: usize,
    /// Only clusters of more than this many clients are split.
    #[serde(default = "default_min_split_size")]
    pub min_split_size: usize,
    /// How the first model is drawn.
    #[serde(default)]
    pub init: InitScheme,
    /// Local optimizer: full-batch GD (default) or Adam on minibatches.
    #[serde(default)]
    pub optimizer: Optimizer,
    /// Partial participation, per cluster: each round every cluster sends its
    /// model to this many of its members, drawn uniformly without replacement
    /// (all of them when it has no more), as the SR-FCA public code's CFL does
    /// (`num_clients_per_round`); absent (default): every client every round.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clients_per_round: Option<usize>,
    /// The local step size over the rounds (`crate::common::round_schedule`):
    /// absent (default), `lr` every round.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub round_schedule: Option<RoundSchedule>,
}

fn default_local_steps() -> usize {
    10
}
fn default_warmup() -> usize {
    20
}
fn default_min_split_size() -> usize {
    2
}

impl Validate for Config {
    fn validate(&self) -> Result<(), FieldError> {
        positive("lr", f64::from(self.lr))?;
        at_least_one("local_steps", self.local_steps)?;
        positive("eps1", self.eps1)?;
        positive("eps2", self.eps2)?;
        at_least_one("min_split_size", self.min_split_size)?;
        if let Some(count) = self.clients_per_round {
            at_least_one("clients_per_round", count)?;
        }
        self.optimizer.validate("optimizer")?;
        round_schedule::validate(self.round_schedule, "round_schedule")?;
        self.init.validate("init")
    }
}

/// The server half of CFL.
#[derive(Debug, serde::Serialize, serde::Deserialize)]
pub struct CflServer {
    config: Checked<Config>,
    p: usize,
    /// Cluster models, back to back.
    models: Vec<f32>,
    assignment: Vec<Option<usize>>,
    /// The latest update `Δθ_i` of every client, `m x p` (zero before its
    /// first round; from an earlier round for a member not drawn in this one).
    updates: Vec<f32>,
    samples: Vec<usize>,
    sums: ModelSums,
    loss: LossMeter,
    train_loss: Option<f64>,
    /// The round of every split and the sizes of its two halves.
    pub splits: Vec<(usize, usize, usize)>,
}

impl CflServer {
    /// Starts its one cluster from `given` (one model) instead.
    pub fn start_from(&mut self, given: &[Vec<f32>]) -> Result<(), FieldError> {
        crate::common::init::start_from(&mut self.models, self.p, given, "name")
    }

    /// One cluster of all `m` clients; its model from the stream `(seed, Init, 0)`.
    pub fn new(config: Checked<Config>, model: &dyn Model, m: usize, seed: u64) -> Self {
        let p = model.num_params();
        let mut models = vec![0.0; p];
        config
            .init
            .fill(model, &mut stream(seed, Purpose::Init, 0, 0), &mut models);
        Self {
            config,
            p,
            models,
            assignment: vec![Some(0); m],
            updates: vec![0.0; m * p],
            samples: vec![0; m],
            sums: ModelSums::default(),
            loss: LossMeter::default(),
            train_loss: None,
            splits: Vec::new(),
        }
    }

    /// Number of clusters now.
    pub fn clusters(&self) -> usize {
        self.models.len() / self.p
    }

    /// Each cluster's members, in client-id order.
    pub(super) fn members(&self) -> Vec<Vec<ClientId>> {
        let mut members = vec![Vec::new(); self.clusters()];
        for (i, a) in self.assignment.iter().enumerate() {
            members[a.expect("every CFL client is in a cluster")].push(i);
        }
        members
    }

    fn update(&self, i: usize) -> &[f32] {
        &self.updates[i * self.p..(i + 1) * self.p]
    }

    /// Step 4 for cluster `c` (before averaging): whether to split it.
    fn should_split(&self, members: &[usize]) -> bool {
        if members.len() <= self.config.min_split_size {
            return false;
        }
        let total: f64 = members.iter().map(|&i| self.samples[i] as f64).sum();
        let mut mean = vec![0.0f64; self.p];
        let mut max_norm = 0.0f64;
        for &i in members {
            let w = self.samples[i] as f64 / total.max(1.0);
            for (m, u) in mean.iter_mut().zip(self.update(i)) {
                *m += w * f64::from(*u);
            }
            max_norm = max_norm.max(norm(self.update(i)));
        }
        let mean_norm = mean.iter().map(|v| v * v).sum::<f64>().sqrt();
        mean_norm < self.config.eps1 && max_norm > self.config.eps2
    }

    /// Splits cluster `c` by the cosine similarity of its members' updates.
    fn split(&mut self, c: usize, members: &[usize]) -> (usize, usize) {
        let n = members.len();
        let norms: Vec<f64> = members
            .iter()
            .map(|&i| norm(self.update(i)).max(f64::MIN_POSITIVE))
            .collect();
        let mut sim = vec![0.0f64; n * n];
        for a in 0..n {
            for b in 0..n {
                sim[a * n + b] =
                    dot(self.update(members[a]), self.update(members[b])) / (norms[a] * norms[b]);
            }
        }
        let (_, second) = optimal_bipartition(&sim, n);
        let new = self.clusters();
        let model = self.models[c * self.p..(c + 1) * self.p].to_vec();
        self.models.extend_from_slice(&model);
        for &b in &second {
            self.assignment[members[b]] = Some(new);
        }
        (n - second.len(), second.len())
    }
}

impl ServerHalf for CflServer {
    type Down = ClusterModel;
    type Up = ModelReply;

    fn plan(
        &mut self,
        _ctx: &RoundCtx,
        rng: &mut Rng,
    ) -> Result<Vec<(ClientId, ClusterModel)>, AlgoError> {
        self.sums.reset(self.clusters(), self.p);
        let models = Arc::new(self.models.clone());
        let mut chosen: Vec<ClientId> = match self.config.clients_per_round {
            None => (0..self.assignment.len()).collect(),
            Some(count) => self
                .members()
                .iter()
                .flat_map(|members| members_for_round(members, count, rng))
                .collect(),
        };
        chosen.sort_unstable();
        Ok(chosen
            .into_iter()
            .map(|i| {
                let cluster = self.assignment[i].expect("every CFL client is in a cluster") as u32;
                (
                    i,
                    ClusterModel {
                        models: Arc::clone(&models),
                        cluster,
                        p: self.p,
                    },
                )
            })
            .collect())
    }

    fn receive(&mut self, ctx: &RoundCtx, id: ClientId, up: ModelReply) -> Result<(), AlgoError> {
        let p = self.p;
        if up.payload.len() != p {
            return Err(AlgoError::malformed(ctx.round, id));
        }
        let Some(loss) = up.loss else {
            return Err(AlgoError::client_diverged(ctx.round, id));
        };
        let c = self.assignment[id].expect("every CFL client is in a cluster");
        let start = &self.models[c * p..(c + 1) * p];
        for ((u, new), old) in self.updates[id * p..(id + 1) * p]
            .iter_mut()
            .zip(&up.payload)
            .zip(start)
        {
            *u = new - old;
        }
        self.samples[id] = up.samples;
        self.sums.add(c, &up.payload, up.samples as f64);
        self.loss.add(loss, up.samples);
        Ok(())
    }

    fn finish(&mut self, ctx: &RoundCtx) -> Result<(), AlgoError> {
        let k = self.clusters();
        let members = self.members();
        let to_split: Vec<usize> = if ctx.round >= self.config.warmup_rounds {
            (0..k).filter(|&c| self.should_split(&members[c])).collect()
        } else {
            Vec::new()
        };
        self.sums.finish(&mut self.models);
        for c in to_split {
            let (a, b) = self.split(c, &members[c]);
            self.splits.push((ctx.round, a, b));
        }
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
