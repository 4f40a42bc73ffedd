//! The FL+HC server: FedAvg of one model, one round in which every client's
//! update is kept and clustered, then FedAvg inside each cluster.

use std::sync::Arc;

use fedcluster_core::params::{all_finite, axpy};
use fedcluster_core::{AlgoError, ClientId, Model, Rng, RoundCtx, ServerHalf, Snapshot};

use super::config::Config;
use crate::common::agglomerative::{agglomerate, pairwise};
use crate::common::aggregate::{LossMeter, ModelSums};
use crate::common::checked::Checked;
use crate::common::messages::{ClusterModel, ModelReply};
use crate::fedavg::FedAvgServer;

#[derive(Debug, serde::Serialize, serde::Deserialize)]
enum Phase {
    /// FedAvg of one global model (rounds before `cluster_round`).
    Global(FedAvgServer),
    /// The clustering round: every client trains from the global model `start`.
    Clustering { start: Vec<f32> },
    /// FedAvg inside each cluster found.
    Clusters(FedAvgServer),
}

/// The server half of FL+HC.
#[derive(Debug, serde::Serialize, serde::Deserialize)]
pub struct FlhcServer {
    config: Checked<Config>,
    p: usize,
    phase: Phase,
    /// The clustering round's updates `ΔW_i = W_i − w_n`, in client-id order.
    updates: Vec<(ClientId, Vec<f32>, usize)>,
    /// The clustering round's training loss.
    loss: LossMeter,
    clustering_loss: Option<f64>,
    /// Every client in the one global cluster (the clustering round's view).
    everyone: Vec<Option<usize>>,
}

impl FlhcServer {
    /// A server for `m` clients whose global model is drawn from the stream
    /// `(seed, Init, 0, 0)`.
    pub fn new(
        config: Checked<Config>,
        model: &dyn Model,
        m: usize,
        seed: u64,
    ) -> Result<Self, AlgoError> {
        let fedavg = checked_fedavg(&config)?;
        let global = FedAvgServer::new(fedavg, model, 1, vec![0; m], seed)?;
        Ok(Self {
            config,
            p: model.num_params(),
            phase: Phase::Global(global),
            updates: Vec::new(),
            loss: LossMeter::default(),
            clustering_loss: None,
            everyone: vec![Some(0); m],
        })
    }

    /// The number of clusters found; `None` before the clustering round.
    pub fn clusters(&self) -> Option<usize> {
        match &self.phase {
            Phase::Clusters(s) => Some(s.snapshot().replicas[0].models.len()),
            _ => None,
        }
    }

    /// Clusters the updates and starts FedAvg in each cluster from
    /// `w_n + (the members' sample-weighted mean update)`: the clustering
    /// round's FedAvg step inside the clusters found.
    fn cluster(&mut self, ctx: &RoundCtx, start: &[f32]) -> Result<(), AlgoError> {
        let updates = std::mem::take(&mut self.updates);
        let m = self.everyone.len();
        if updates.len() != m {
            return Err(AlgoError::Protocol(format!(
                "round {}: FL+HC clusters every client's update, got {} of {m}",
                ctx.round,
                updates.len()
            )));
        }
        let points: Vec<&[f32]> = updates.iter().map(|(_, u, _)| u.as_slice()).collect();
        let dist = pairwise(&points, self.config.metric);
        let labels = agglomerate(&dist, m, self.config.linkage, self.config.cut);
        let k = labels.iter().max().map_or(0, |l| l + 1);
        let mut sums = ModelSums::default();
        sums.reset(k, self.p);
        for ((_, u, samples), &c) in updates.iter().zip(&labels) {
            sums.add(c, u, *samples as f64);
        }
        let mut models = vec![0.0; k * self.p];
        sums.finish(&mut models);
        for model in models.chunks_exact_mut(self.p) {
            axpy(1.0, start, model);
        }
        if !all_finite(&models) {
            return Err(AlgoError::models_diverged(ctx.round));
        }
        let fedavg = checked_fedavg(&self.config)?;
        self.phase = Phase::Clusters(FedAvgServer::with_models(fedavg, models, self.p, labels)?);
        Ok(())
    }
}

fn checked_fedavg(config: &Config) -> Result<Checked<crate::fedavg::Config>, AlgoError> {
    Checked::new(config.fedavg()).map_err(|e| AlgoError::Protocol(e.to_string()))
}

impl ServerHalf for FlhcServer {
    type Down = ClusterModel;
    type Up = ModelReply;

    fn plan(
        &mut self,
        ctx: &RoundCtx,
        rng: &mut Rng,
    ) -> Result<Vec<(ClientId, ClusterModel)>, AlgoError> {
        if let Phase::Global(global) = &self.phase
            && ctx.round >= self.config.cluster_round
        {
            let start = global.snapshot().replicas[0].models[0].to_vec();
            self.phase = Phase::Clustering { start };
        }
        match &mut self.phase {
            Phase::Global(s) | Phase::Clusters(s) => s.plan(ctx, rng),
            Phase::Clustering { start } => {
                let models = Arc::new(start.clone());
                let p = self.p;
                Ok((0..self.everyone.len())
                    .map(|id| {
                        let models = Arc::clone(&models);
                        (
                            id,
                            ClusterModel {
                                models,
                                cluster: 0,
                                p,
                            },
                        )
                    })
                    .collect())
            }
        }
    }

    fn receive(&mut self, ctx: &RoundCtx, id: ClientId, up: ModelReply) -> Result<(), AlgoError> {
        match &mut self.phase {
            Phase::Global(s) | Phase::Clusters(s) => s.receive(ctx, id, up),
            Phase::Clustering { start } => {
                if up.payload.len() != self.p {
                    return Err(AlgoError::malformed(ctx.round, id));
                }
                let Some(loss) = up.loss else {
                    return Err(AlgoError::client_diverged(ctx.round, id));
                };
                let mut update = up.payload;
                axpy(-1.0, start, &mut update);
                self.updates.push((id, update, up.samples));
                self.loss.add(loss, up.samples);
                Ok(())
            }
        }
    }

    fn finish(&mut self, ctx: &RoundCtx) -> Result<(), AlgoError> {
        match &mut self.phase {
            Phase::Global(s) | Phase::Clusters(s) => s.finish(ctx),
            Phase::Clustering { start } => {
                let start = std::mem::take(start);
                self.clustering_loss = self.loss.take_mean();
                self.cluster(ctx, &start)
            }
        }
    }

    fn snapshot(&self) -> Snapshot<'_> {
        match &self.phase {
            Phase::Global(s) => s.snapshot(),
            Phase::Clustering { start } => Snapshot::single(start, self.p, &self.everyone, None),
            Phase::Clusters(s) => {
                // Until the clusters' first FedAvg round, the clustering
                // round's loss is the last one reported.
                let mut snap = s.snapshot();
                let view = &mut snap.replicas[0];
                view.train_loss = view.train_loss.or(self.clustering_loss);
                snap
            }
        }
    }
}
