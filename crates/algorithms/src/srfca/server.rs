//! The SR-FCA server: ONE_SHOT, then REFINE steps, then training of the final
//! clusters.

use std::sync::Arc;

use fedcluster_core::params::{axpy, dist, trimmed_mean_into};
use fedcluster_core::{
    AlgoError, ClientId, Model, Purpose, Rng, RoundCtx, ServerHalf, Snapshot, stream,
};

use super::clustering::{merge_with, one_shot_with, recluster, resolve_threshold};
use super::config::{AfterOneShot, Clustering, Config, Distance};
use super::messages::{Down, Up};
use super::pivot::Cut;
use crate::common::aggregate::{LossMeter, ModelSums};
use crate::common::checked::Checked;
use crate::common::sampling::members_for_round;

/// The most clients SR-FCA accepts (its distance matrix holds `m²` values).
pub const MAX_CLIENTS: usize = 10_000;

/// Where the protocol stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
enum Stage {
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
    config: Checked<Config>,
    /// The run's seed: the pivots of correlation clustering.
    #[serde(default)]
    seed: u64,
    p: usize,
    m: usize,
    w0: Arc<Vec<f32>>,
    stage: Stage,
    /// The clients' local models `w_i`, `m x p`.
    local: Vec<f32>,
    /// Local sample counts `n_i`.
    samples: Vec<usize>,
    /// `f_j(w_i)` at `[j * m + i]` (cross-loss only).
    pair_losses: Vec<f64>,
    /// `λ`, once ONE_SHOT has resolved it.
    lambda: Option<f64>,
    /// Cluster models `ω_c`, back to back.
    models: Vec<f32>,
    /// Each client's cluster (`None`: unassigned).
    assignment: Vec<Option<usize>>,
    /// The identity assignment, for the snapshot of the local models.
    identity: Vec<Option<usize>>,
    /// `f_i(ω_c)` at `[i * k + c]` from the last evaluation round.
    cluster_losses: Vec<f64>,
    /// This round's gradients, per cluster, in client-id order.
    gradients: Vec<Vec<Vec<f32>>>,
    loss: LossMeter,
    train_loss: Option<f64>,
    /// ONE_SHOT-IFCA's running model sums.
    sums: ModelSums,
    /// With `local_rounds`: the part of ONE_SHOT's local training this
    /// round runs.
    #[serde(default)]
    local_part: usize,
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

    /// A part of ONE_SHOT's local training spread over `local_rounds`: the
    /// first sends `w_0` (and the server's view of every local model is
    /// `w_0` until the last part returns them), the others only the steps.
    fn local_part_plan(&mut self) -> Vec<(ClientId, Down)> {
        let part = self.local_part;
        let w0 = (part == 0).then(|| {
            for local in self.local.chunks_exact_mut(self.p) {
                local.copy_from_slice(&self.w0);
            }
            Arc::clone(&self.w0)
        });
        let steps = self.config.local_part_steps(part);
        let keep = part + 1 < self.config.local_rounds;
        (0..self.m)
            .map(|i| {
                let w0 = w0.clone();
                (i, Down::TrainLocalPart { w0, steps, keep })
            })
            .collect()
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

    fn model(&self, c: usize) -> &[f32] {
        &self.models[c * self.p..(c + 1) * self.p]
    }

    fn members(&self, k: usize) -> Vec<Vec<usize>> {
        let mut members = vec![Vec::new(); k];
        for (i, a) in self.assignment.iter().enumerate() {
            if let Some(c) = a {
                members[*c].push(i);
            }
        }
        members
    }

    /// Sample-weighted mean over `clients` of `loss(j)`.
    fn weighted(&self, clients: &[usize], loss: impl Fn(usize) -> f64) -> f64 {
        let (mut sum, mut n) = (0.0, 0.0);
        for &j in clients {
            let w = self.samples[j] as f64;
            sum += w * loss(j);
            n += w;
        }
        if n > 0.0 { sum / n } else { f64::INFINITY }
    }

    /// Where `round`'s graph is cut: components, or the pivot algorithm on
    /// the stream `(seed, Clustering, round)`.
    fn cut<T>(&self, round: usize, f: impl FnOnce(Cut<'_>) -> T) -> T {
        match self.config.clustering {
            Clustering::Components => f(Cut::Components),
            Clustering::Correlation => f(Cut::Pivot(&mut stream(
                self.seed,
                Purpose::Clustering,
                round as u64,
                0,
            ))),
        }
    }

    /// The distances between the clients' local models, `m x m`.
    fn local_distances(&self) -> Vec<f64> {
        let (m, p) = (self.m, self.p);
        let mut d = vec![0.0f64; m * m];
        for i in 0..m {
            for j in 0..m {
                d[i * m + j] = match self.config.distance {
                    Distance::L2 => dist(
                        &self.local[i * p..(i + 1) * p],
                        &self.local[j * p..(j + 1) * p],
                    ),
                    Distance::CrossLoss => {
                        0.5 * (self.pair_losses[i * m + j] + self.pair_losses[j * m + i])
                    }
                };
            }
        }
        d
    }

    /// ONE_SHOT's graph on the local models: `λ`, the initial clusters, `ω = w_0`.
    fn one_shot(&mut self, round: usize) -> Result<(), AlgoError> {
        let m = self.m;
        let d = self.local_distances();
        let lambda = resolve_threshold(self.config.threshold, &d, m);
        let t = self.config.min_size;
        let clusters = self.cut(round, |cut| one_shot_with(cut, &d, m, lambda, t));
        if clusters.is_empty() {
            return Err(AlgoError::Protocol(format!(
                "threshold: ONE_SHOT found no group of at least min_size = {} clients within λ = {lambda:.4}",
                self.config.min_size
            )));
        }
        self.lambda = Some(lambda);
        self.assignment.fill(None);
        for (c, members) in clusters.iter().enumerate() {
            for &i in members {
                self.assignment[i] = Some(c);
            }
        }
        self.models = self.w0.repeat(clusters.len());
        Ok(())
    }

    /// RECLUSTER then MERGE (Algorithms 2 and 4) on the current cluster models.
    fn recluster_and_merge(&mut self, round: usize) {
        let (k, p) = (self.clusters(), self.p);
        let before = self.members(k);
        let local = |i: usize| &self.local[i * p..(i + 1) * p];
        let assignment = match self.config.distance {
            Distance::L2 => recluster(self.m, k, |i, c| dist(local(i), self.model(c))),
            Distance::CrossLoss => recluster(self.m, k, |i, c| {
                // ½(f_i(ω_c) + f_c(w_i)); f_c is the loss of c's members.
                let f_c = self.weighted(&before[c], |j| self.pair_losses[j * self.m + i]);
                0.5 * (self.cluster_losses[i * k + c] + f_c)
            }),
        };
        self.assignment = assignment;
        let after = self.members(k);
        let lambda = self.lambda.expect("ONE_SHOT ran");
        let t = self.config.min_size;
        let groups = self.cut(round, |cut| match self.config.distance {
            Distance::L2 => merge_with(cut, &after, lambda, t, |c, d| {
                dist(self.model(c), self.model(d))
            }),
            Distance::CrossLoss => merge_with(cut, &after, lambda, t, |c, d| {
                let f_c = self.weighted(&after[c], |j| self.cluster_losses[j * k + d]);
                let f_d = self.weighted(&after[d], |j| self.cluster_losses[j * k + c]);
                0.5 * (f_c + f_d)
            }),
        });
        let mut models = vec![0.0f32; groups.len() * p];
        let mut new_of_old = vec![None; k];
        for (g, group) in groups.iter().enumerate() {
            let out = &mut models[g * p..(g + 1) * p];
            for &c in group {
                new_of_old[c] = Some(g);
                axpy(1.0 / group.len() as f32, self.model(c), out);
            }
        }
        for a in &mut self.assignment {
            *a = a.and_then(|c| new_of_old[c]);
        }
        self.models = models;
    }

    /// After ONE_SHOT: REFINE, or IFCA from the clusters' mean local models.
    fn after_one_shot(&mut self) {
        match self.config.then {
            AfterOneShot::Refine => self.start_refine(0),
            AfterOneShot::Ifca { .. } => {
                let (k, p) = (self.clusters(), self.p);
                let mut models = vec![0.0f32; k * p];
                for (c, members) in self.members(k).iter().enumerate() {
                    for &i in members {
                        axpy(
                            1.0 / members.len() as f32,
                            &self.local[i * p..(i + 1) * p],
                            &mut models[c * p..(c + 1) * p],
                        );
                    }
                }
                self.models = models;
                self.stage = Stage::Ifca;
            }
        }
    }

    /// Starts REFINE `refine` (TrimmedMeanGD from `w_0`, reset when its first
    /// round is planned, so that snapshots until then show the last REFINE's
    /// merged models), or the final training.
    fn start_refine(&mut self, refine: usize) {
        if refine == self.config.refine_steps {
            self.stage = Stage::Final;
        } else if self.config.resample {
            self.stage = Stage::RefineLocal { refine };
        } else {
            self.stage = Stage::Train { refine, round: 0 };
        }
    }

    fn after_training_round(&mut self, ctx_round: usize) {
        let Stage::Train { refine, round } = self.stage else {
            return;
        };
        if round + 1 < self.config.refine_rounds {
            self.stage = Stage::Train {
                refine,
                round: round + 1,
            };
        } else if self.config.distance == Distance::CrossLoss {
            self.stage = Stage::Evaluate { refine };
        } else {
            self.recluster_and_merge(ctx_round);
            self.start_refine(refine + 1);
        }
    }

    /// The clients that train this round, in client-id order: every assigned
    /// client, or `clients_per_round` members of each cluster drawn from `rng`.
    fn training_members(&self, rng: &mut Rng) -> Vec<ClientId> {
        let mut chosen: Vec<ClientId> = match self.config.clients_per_round {
            None => (0..self.m)
                .filter(|&i| self.assignment[i].is_some())
                .collect(),
            Some(count) => self
                .members(self.clusters())
                .iter()
                .flat_map(|members| members_for_round(members, count, rng))
                .collect(),
        };
        chosen.sort_unstable();
        chosen
    }

    /// TrimmedMeanGD's step (Algorithm 3): `ω_c -= lr · TrMean_β(gradients)`.
    fn trimmed_mean_step(&mut self) -> Result<(), AlgoError> {
        let p = self.p;
        let mut g = vec![0.0f32; p];
        for (c, grads) in self.gradients.iter().enumerate() {
            if grads.is_empty() {
                continue;
            }
            let refs: Vec<&[f32]> = grads.iter().map(Vec::as_slice).collect();
            trimmed_mean_into(&refs, self.config.trim, &mut g)?;
            axpy(-self.config.lr, &g, &mut self.models[c * p..(c + 1) * p]);
        }
        Ok(())
    }
}

impl ServerHalf for SrFcaServer {
    type Down = Down;
    type Up = Up;

    fn plan(&mut self, _ctx: &RoundCtx, rng: &mut Rng) -> Result<Vec<(ClientId, Down)>, AlgoError> {
        let p = self.p;
        Ok(match self.stage {
            Stage::Local if self.config.local_rounds > 1 => self.local_part_plan(),
            Stage::Local | Stage::RefineLocal { .. } => (0..self.m)
                .map(|i| (i, Down::TrainLocal(Arc::clone(&self.w0))))
                .collect(),
            Stage::PairLosses | Stage::RefinePairLosses { .. } => {
                let models = Arc::new(self.local.clone());
                (0..self.m)
                    .map(|i| {
                        (
                            i,
                            Down::Evaluate {
                                models: Arc::clone(&models),
                                p,
                            },
                        )
                    })
                    .collect()
            }
            Stage::Evaluate { .. } => {
                self.cluster_losses = vec![f64::INFINITY; self.m * self.clusters()];
                let models = Arc::new(self.models.clone());
                (0..self.m)
                    .map(|i| {
                        (
                            i,
                            Down::Evaluate {
                                models: Arc::clone(&models),
                                p,
                            },
                        )
                    })
                    .collect()
            }
            Stage::Ifca => {
                let AfterOneShot::Ifca { local_steps } = self.config.then else {
                    unreachable!("the IFCA stage follows ONE_SHOT only when configured");
                };
                self.sums.reset(self.clusters(), p);
                let models = Arc::new(self.models.clone());
                (0..self.m)
                    .map(|i| {
                        (
                            i,
                            Down::Ifca {
                                models: Arc::clone(&models),
                                p,
                                local_steps,
                            },
                        )
                    })
                    .collect()
            }
            Stage::Train { .. } | Stage::Final => {
                if let Stage::Train { round: 0, .. } = self.stage {
                    self.models = self.w0.repeat(self.clusters());
                }
                self.gradients = vec![Vec::new(); self.clusters()];
                let models = Arc::new(self.models.clone());
                self.training_members(rng)
                    .into_iter()
                    .map(|i| {
                        let c = self.assignment[i].expect("a member is assigned") as u32;
                        (
                            i,
                            Down::Gradient {
                                models: Arc::clone(&models),
                                cluster: c,
                                p,
                                local_steps: self.config.refine_local_steps,
                            },
                        )
                    })
                    .collect()
            }
        })
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
        match self.stage {
            Stage::Local if self.local_part + 1 < self.config.local_rounds => self.local_part += 1,
            Stage::Local => match self.config.distance {
                Distance::L2 => {
                    self.one_shot(ctx.round)?;
                    self.after_one_shot();
                }
                Distance::CrossLoss => self.stage = Stage::PairLosses,
            },
            Stage::PairLosses => {
                self.one_shot(ctx.round)?;
                self.after_one_shot();
            }
            // Resampling: the new local models (and their pair losses) replace
            // ONE_SHOT's in RECLUSTER; the clusters and λ stay.
            Stage::RefineLocal { refine } => {
                self.stage = match self.config.distance {
                    Distance::L2 => Stage::Train { refine, round: 0 },
                    Distance::CrossLoss => Stage::RefinePairLosses { refine },
                }
            }
            Stage::RefinePairLosses { refine } => self.stage = Stage::Train { refine, round: 0 },
            Stage::Evaluate { refine } => {
                self.recluster_and_merge(ctx.round);
                self.start_refine(refine + 1);
            }
            Stage::Train { .. } => {
                self.trimmed_mean_step()?;
                self.after_training_round(ctx.round);
            }
            Stage::Final => self.trimmed_mean_step()?,
            Stage::Ifca => self.sums.finish(&mut self.models),
        }
        Ok(())
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
