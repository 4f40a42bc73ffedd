//! The FeSEM server: an E-step and an M-step on the clients' local models
//! every round, taking the replies one at a time.

use std::sync::Arc;

use fedcluster_core::params::{all_finite, sq_dist};
use fedcluster_core::{
    AlgoError, ClientId, Model, Purpose, Rng, RoundCtx, ServerHalf, Snapshot, stream,
};

use super::config::{Config, Seeding};
use crate::common::aggregate::{LossMeter, ModelSums};
use crate::common::checked::Checked;
use crate::common::kmeans::kmeans;
use crate::common::messages::{ClusterModel, ModelReply};
use crate::common::sampling::participants;

/// The server half of FeSEM.
#[derive(Debug, serde::Serialize, serde::Deserialize)]
pub struct FeSemServer {
    config: Checked<Config>,
    p: usize,
    seed: u64,
    /// The warm-up's common starting model `θ_0`.
    start: Vec<f32>,
    /// The centres `W̃_1..W̃_K`, back to back; empty until k-means++ seeds them.
    centres: Vec<f32>,
    /// `r_i`: the centre each client was last assigned to (`None` before it
    /// first replies).
    assignment: Vec<Option<usize>>,
    /// Whether the warm-up round is done.
    warm: bool,
    /// The warm-up's local models while k-means++ waits for all of them.
    warmup: Vec<(ClientId, Vec<f32>)>,
    /// M-step: the round's models summed per centre (every client alike).
    sums: ModelSums,
    loss: LossMeter,
    train_loss: Option<f64>,
}

impl FeSemServer {
    /// A server for `m` clients: `θ_0` (and with random seeding the `K`
    /// centres after it) drawn from the stream `(seed, Init, 0, 0)`.
    pub fn new(config: Checked<Config>, model: &dyn Model, m: usize, seed: u64) -> Self {
        let p = model.num_params();
        let mut rng = stream(seed, Purpose::Init, 0, 0);
        let mut start = vec![0.0; p];
        config.init.fill(model, &mut rng, &mut start);
        let mut centres = Vec::new();
        if config.seeding == Seeding::Random {
            centres = vec![0.0; config.clusters * p];
            for c in centres.chunks_exact_mut(p) {
                config.init.fill(model, &mut rng, c);
            }
        }
        Self {
            config,
            p,
            seed,
            start,
            centres,
            assignment: vec![None; m],
            warm: false,
            warmup: Vec::new(),
            sums: ModelSums::default(),
            loss: LossMeter::default(),
            train_loss: None,
        }
    }

    /// The current centres, back to back.
    pub fn centres(&self) -> &[f32] {
        &self.centres
    }

    /// The E-step for one local model: its nearest centre (lowest index on ties).
    fn nearest(&self, model: &[f32]) -> usize {
        let mut best = (0, f64::INFINITY);
        for (k, c) in self.centres.chunks_exact(self.p).enumerate() {
            let d = sq_dist(model, c);
            if d < best.1 {
                best = (k, d);
            }
        }
        best.0
    }

    /// k-means++ seeding among the warm-up's local models, then one E-step and
    /// one M-step (one Lloyd iteration).
    fn seed_centres(&mut self, ctx: &RoundCtx) -> Result<(), AlgoError> {
        let warmup = std::mem::take(&mut self.warmup);
        if warmup.len() != self.assignment.len() {
            return Err(AlgoError::Protocol(format!(
                "round {}: FeSEM's k-means++ seeding needs every client's warm-up model, got {} of {}",
                ctx.round,
                warmup.len(),
                self.assignment.len()
            )));
        }
        let points: Vec<&[f32]> = warmup.iter().map(|(_, m)| m.as_slice()).collect();
        let mut rng = stream(self.seed, Purpose::Clustering, 0, 0);
        let km = kmeans(&points, self.config.clusters, 1, 1, &mut rng)?;
        self.centres = km.centroids.concat();
        for ((id, _), label) in warmup.iter().zip(km.labels) {
            self.assignment[*id] = Some(label);
        }
        Ok(())
    }
}

impl ServerHalf for FeSemServer {
    type Down = ClusterModel;
    type Up = ModelReply;

    fn plan(
        &mut self,
        _ctx: &RoundCtx,
        rng: &mut Rng,
    ) -> Result<Vec<(ClientId, ClusterModel)>, AlgoError> {
        let m = self.assignment.len();
        self.sums.reset(self.config.clusters, self.p);
        let chosen: Vec<ClientId> = if self.warm {
            participants(m, self.config.participation, rng)
        } else {
            (0..m).collect()
        };
        let start = Arc::new(self.start.clone());
        let centres = Arc::new(self.centres.clone());
        Ok(chosen
            .into_iter()
            .map(|id| {
                // A client without a local model yet (the warm-up, or absent
                // from it) trains from θ_0; the others from their centre.
                let (models, cluster) = match self.assignment[id] {
                    Some(c) if self.warm => (Arc::clone(&centres), c as u32),
                    _ => (Arc::clone(&start), 0),
                };
                (
                    id,
                    ClusterModel {
                        models,
                        cluster,
                        p: self.p,
                    },
                )
            })
            .collect())
    }

    fn receive(&mut self, ctx: &RoundCtx, id: ClientId, up: ModelReply) -> Result<(), AlgoError> {
        if up.payload.len() != self.p || id >= self.assignment.len() {
            return Err(AlgoError::malformed(ctx.round, id));
        }
        let Some(loss) = up.loss else {
            return Err(AlgoError::client_diverged(ctx.round, id));
        };
        self.loss.add(loss, up.samples);
        if self.centres.is_empty() {
            // k-means++ seeds from every warm-up model at once.
            self.warmup.push((id, up.payload));
            return Ok(());
        }
        // E-step against the centres the round started from, then the M-step's sum.
        let k = self.nearest(&up.payload);
        self.assignment[id] = Some(k);
        self.sums.add(k, &up.payload, 1.0);
        Ok(())
    }

    fn finish(&mut self, ctx: &RoundCtx) -> Result<(), AlgoError> {
        if self.centres.is_empty() {
            self.seed_centres(ctx)?;
        } else {
            // M-step: each centre the plain mean of its members' models; a
            // centre without members this round keeps its place.
            self.sums.finish(&mut self.centres);
        }
        self.warm = true;
        self.train_loss = self.loss.take_mean();
        if !all_finite(&self.centres) {
            return Err(AlgoError::models_diverged(ctx.round));
        }
        Ok(())
    }

    fn snapshot(&self) -> Snapshot<'_> {
        Snapshot::single(&self.centres, self.p, &self.assignment, self.train_loss)
    }
}
