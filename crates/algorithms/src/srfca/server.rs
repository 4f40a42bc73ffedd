//! The SR-FCA server: ONE_SHOT, then REFINE steps, then training of the final
//! clusters. This file holds the server's state, its stage and the round's
//! calls; the round plans are in `plan`, the moves between the stages in
//! `transitions`, ONE_SHOT, RECLUSTER and MERGE on the server's state in
//! `server_clustering` and TrimmedMeanGD in `trimmed_mean_gd`.

use std::sync::Arc;

use fedcluster_core::{
    AlgoError, ClientId, Model, Purpose, Rng, RoundCtx, ServerHalf, Snapshot, stream,
};

use super::config::Config;
use super::messages::{Down, Up};
use crate::common::aggregate::{LossMeter, ModelSums};
use crate::common::checked::Checked;

/// The most clients SR-FCA accepts (its distance matrix holds `m²` values).
pub const MAX_CLIENTS: usize = 10_000;

/// Where the protocol stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub(super) enum Stage {
    /// ONE_SHOT: the clients train their local models.
    Local,
    /// ONE_SHOT, cross-loss distance: every client scores every local model.
    PairLosses,
    /// REFINE `refine` with `resample`: the clients train their local models
    /// again, on the step's block of their data.
    RefineLocal { refine: usize },
    /// REFINE `refine` with `resample`, cross-loss distance: every client
    /// scores every new local model.
    RefinePairLosses { refine: usize },
    /// REFINE `refine`: TrimmedMeanGD round `round`.
    Train { refine: usize, round: usize },
    /// REFINE `refine`, cross-loss distance: every client scores every cluster model.
    Evaluate { refine: usize },
    /// After the last REFINE: TrimmedMeanGD on the final clusters.
    Final,
    /// ONE_SHOT-IFCA: IFCA rounds from ONE_SHOT's clusters.
    Ifca,
}

/// The server half of SR-FCA.
#[derive(Debug, serde::Serialize, serde::Deserialize)]
pub struct SrFcaServer {
    pub(super) config: Checked<Config>,
    /// The run's seed: the pivots of correlation clustering.
    #[serde(default)]
    pub(super) seed: u64,
    pub(super) p: usize,
    pub(super) m: usize,
    pub(super) w0: Arc<Vec<f32>>,
    pub(super) stage: Stage,
    /// The clients' local models `w_i`, `m x p`.
    pub(super) local: Vec<f32>,
    /// Local sample counts `n_i`.
    pub(super) samples: Vec<usize>,
    /// `f_j(w_i)` at `[j * m + i]` (cross-loss only).
    pub(super) pair_losses: Vec<f64>,
    /// `λ`, once ONE_SHOT has resolved it.
    pub(super) lambda: Option<f64>,
    /// Cluster models `ω_c`, back to back.
    pub(super) models: Vec<f32>,
    /// Each client's cluster (`None`: unassigned).
    pub(super) assignment: Vec<Option<usize>>,
    /// The identity assignment, for the snapshot of the local models.
    pub(super) identity: Vec<Option<usize>>,
    /// `f_i(ω_c)` at `[i * k + c]` from the last evaluation round.
    pub(super) cluster_losses: Vec<f64>,
    /// This round's gradients, per cluster, in client-id order.
    pub(super) gradients: Vec<Vec<Vec<f32>>>,
    pub(super) loss: LossMeter,
    pub(super) train_loss: Option<f64>,
    /// ONE_SHOT-IFCA's running model sums.
    pub(super) sums: ModelSums,
    /// With `local_rounds`: the part of ONE_SHOT's local training this
    /// round runs.
    #[serde(default)]
    pub(super) local_part: usize,
}

impl SrFcaServer {
    /// A server for `m` clients (at most [`MAX_CLIENTS`]: ONE_SHOT keeps all
    /// `m²` pairwise distances); `w_0` comes from the stream `(seed, Init, 0)`.
    pub fn new(
        config: Checked<Config>,
        model: &dyn Model,
        m: usize,
        seed: u64,
    ) -> Result<Self, AlgoError> {
        if m > MAX_CLIENTS {
            return Err(AlgoError::Protocol(format!(
                "SR-FCA's ONE_SHOT compares all pairs of clients: {m} clients need {m}² distances; at most {MAX_CLIENTS} are supported"
            )));
        }
        let p = model.num_params();
        let mut w0 = vec![0.0; p];
        config
            .init
            .fill(model, &mut stream(seed, Purpose::Init, 0, 0), &mut w0);
        Ok(Self {
            config,
            seed,
            p,
            m,
            w0: Arc::new(w0),
            stage: Stage::Local,
            local: vec![0.0; m * p],
            samples: vec![0; m],
            pair_losses: Vec::new(),
            lambda: None,
            models: Vec::new(),
            assignment: vec![None; m],
            identity: (0..m).map(Some).collect(),
            cluster_losses: Vec::new(),
            gradients: Vec::new(),
            loss: LossMeter::default(),
            train_loss: None,
            sums: ModelSums::default(),
            local_part: 0,
        })
    }

    /// Number of clusters now.
    pub fn clusters(&self) -> usize {
        self.models.len() / self.p
    }

    /// Whether the clustering (ONE_SHOT and the REFINE steps) is still running.
    #[cfg(test)]
    pub(super) fn clustering(&self) -> bool {
        !matches!(self.stage, Stage::Final | Stage::Ifca)
    }

    /// `λ` once ONE_SHOT has run.
    pub fn threshold(&self) -> Option<f64> {
        self.lambda
    }

    /// Cluster `c`'s model `ω_c`.
    pub(super) fn model(&self, c: usize) -> &[f32] {
        &self.models[c * self.p..(c + 1) * self.p]
    }

    /// The members of each of `k` clusters, in client-id order.
    pub(super) fn members(&self, k: usize) -> Vec<Vec<usize>> {
        let mut members = vec![Vec::new(); k];
        for (i, a) in self.assignment.iter().enumerate() {
            if let Some(c) = a {
                members[*c].push(i);
            }
        }
        members
    }
}

impl ServerHalf for SrFcaServer {
    type Down = Down;
    type Up = Up;

    fn plan(&mut self, _ctx: &RoundCtx, rng: &mut Rng) -> Result<Vec<(ClientId, Down)>, AlgoError> {
        Ok(self.plan_stage(rng))
    }

    fn receive(&mut self, ctx: &RoundCtx, id: ClientId, up: Up) -> Result<(), AlgoError> {
        let malformed = || AlgoError::malformed(ctx.round, id);
        let diverged = || AlgoError::client_diverged(ctx.round, id);
        let (p, m, k) = (self.p, self.m, self.clusters());
        match (self.stage, up) {
            (Stage::Local | Stage::RefineLocal { .. }, Up::Local(r)) if r.payload.len() == p => {
                let loss = r.loss.ok_or_else(diverged)?;
                self.local[id * p..(id + 1) * p].copy_from_slice(&r.payload);
                self.samples[id] = r.samples;
                self.loss.add(loss, r.samples);
            }
            (Stage::Local, Up::Progress { loss, samples }) => {
                self.loss.add(loss.ok_or_else(diverged)?, samples);
            }
            (Stage::PairLosses | Stage::RefinePairLosses { .. }, Up::Losses(l)) if l.len() == m => {
                if self.pair_losses.len() != m * m {
                    self.pair_losses = vec![f64::INFINITY; m * m];
                }
                self.pair_losses[id * m..(id + 1) * m].copy_from_slice(&l);
            }
            (Stage::Evaluate { .. }, Up::Losses(l)) if l.len() == k => {
                self.cluster_losses[id * k..(id + 1) * k].copy_from_slice(&l);
            }
            (Stage::Train { .. } | Stage::Final, Up::Gradient(r)) if r.payload.len() == p => {
                let loss = r.loss.ok_or_else(diverged)?;
                let c = self.assignment[id].ok_or_else(malformed)?;
                self.gradients[c].push(r.payload);
                self.loss.add(loss, r.samples);
            }
            (Stage::Ifca, Up::Trained { cluster, reply })
                if reply.payload.len() == p && (cluster as usize) < k =>
            {
                let loss = reply.loss.ok_or_else(diverged)?;
                let w = reply.samples as f64;
                self.sums.add(cluster as usize, &reply.payload, w);
                self.assignment[id] = Some(cluster as usize);
                self.loss.add(loss, reply.samples);
            }
            _ => return Err(malformed()),
        }
        Ok(())
    }

    fn finish(&mut self, ctx: &RoundCtx) -> Result<(), AlgoError> {
        // A round without training replies (evaluations) keeps the last loss.
        if let Some(loss) = self.loss.take_mean() {
            self.train_loss = Some(loss);
        }
        self.advance(ctx.round)
    }

    fn snapshot(&self) -> Snapshot<'_> {
        let one_shot = matches!(self.stage, Stage::Local | Stage::PairLosses);
        let started = self.local_part > 0 || self.samples.iter().any(|n| *n > 0);
        if one_shot && self.lambda.is_none() && started {
            Snapshot::single(&self.local, self.p, &self.identity, self.train_loss)
        } else {
            Snapshot::single(&self.models, self.p, &self.assignment, self.train_loss)
        }
    }
}
