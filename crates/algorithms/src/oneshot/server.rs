//! One-shot clustering server half: a phase enum over ERM collection and FedAvg.

use fedcluster_core::{
    AlgoError, ClientId, Purpose, ReplicaView, Rng, RoundCtx, ServerHalf, Snapshot, stream,
};

use super::config::Config;
use super::messages::{Down, Up};
use crate::common::checked::Checked;
use crate::common::kmeans::kmeans;
use crate::common::messages::{ClusterModel, ModelReply};
use crate::fedavg::FedAvgServer;

/// Lloyd iterations per k-means restart.
const KMEANS_MAX_ITER: usize = 300;

#[derive(Debug, serde::Serialize, serde::Deserialize)]
enum Phase {
    /// Waiting for every client's local ERM.
    Erm,
    /// FedAvg inside the clusters found by k-means.
    FedAvg(FedAvgServer),
}

/// The server half of one-shot clustering.
#[derive(Debug, serde::Serialize, serde::Deserialize)]
pub struct OneShotServer {
    config: Checked<Config>,
    num_clients: usize,
    seed: u64,
    phase: Phase,
    unassigned: Vec<Option<usize>>,
    /// The local ERMs received in the ERM round.
    erms: Vec<(ClientId, ModelReply)>,
    /// The ERM's shared start (`erm_start = "shared"`).
    start: Option<ClusterModel>,
}

impl OneShotServer {
    /// A server for `num_clients` clients; k-means draws from `(seed, Clustering)`.
    pub fn new(config: Checked<Config>, num_clients: usize, seed: u64) -> Self {
        Self {
            config,
            num_clients,
            seed,
            phase: Phase::Erm,
            unassigned: vec![None; num_clients],
            erms: Vec::new(),
            start: None,
        }
    }

    /// The clients start their ERM from `start` (`erm_start = "shared"`).
    pub fn with_start(mut self, start: Vec<f32>) -> Self {
        self.start = Some(ClusterModel {
            p: start.len(),
            models: std::sync::Arc::new(start),
            cluster: 0,
        });
        self
    }

    fn cluster(
        &mut self,
        ctx: &RoundCtx,
        replies: Vec<(ClientId, ModelReply)>,
    ) -> Result<(), AlgoError> {
        if replies.len() != self.num_clients {
            return Err(AlgoError::Protocol(format!(
                "round {}: one-shot clustering needs every client's ERM, got {} of {}",
                ctx.round,
                replies.len(),
                self.num_clients
            )));
        }
        if let Some((id, _)) = replies.iter().find(|(_, r)| r.loss.is_none()) {
            return Err(AlgoError::Diverged {
                round: ctx.round,
                client: Some(*id),
                detail: "non-finite local ERM".into(),
            });
        }
        let points: Vec<&[f32]> = replies.iter().map(|(_, r)| r.payload.as_slice()).collect();
        let p = points[0].len();
        let mut rng = stream(self.seed, Purpose::Clustering, 0, 0);
        let km = kmeans(
            &points,
            self.config.clusters,
            self.config.kmeans_restarts,
            KMEANS_MAX_ITER,
            &mut rng,
        )?;
        let models: Vec<f32> = km.centroids.concat();
        let fedavg =
            Checked::new(self.config.fedavg()).map_err(|e| AlgoError::Protocol(e.to_string()))?;
        self.phase = Phase::FedAvg(FedAvgServer::with_models(fedavg, models, p, km.labels)?);
        Ok(())
    }
}

impl ServerHalf for OneShotServer {
    type Down = Down;
    type Up = Up;

    fn plan(&mut self, ctx: &RoundCtx, rng: &mut Rng) -> Result<Vec<(ClientId, Down)>, AlgoError> {
        match &mut self.phase {
            Phase::Erm => Ok((0..self.num_clients)
                .map(|id| (id, Down::Erm(self.start.clone())))
                .collect()),
            Phase::FedAvg(server) => Ok(server
                .plan(ctx, rng)?
                .into_iter()
                .map(|(id, m)| (id, Down::Train(m)))
                .collect()),
        }
    }

    fn receive(&mut self, ctx: &RoundCtx, id: ClientId, up: Up) -> Result<(), AlgoError> {
        let mismatch =
            || AlgoError::Protocol(format!("round {}: reply from the wrong phase", ctx.round));
        match (&mut self.phase, up) {
            // The local ERMs are the algorithm's input to k-means: all of them are kept.
            (Phase::Erm, Up::Erm(r)) => {
                self.erms.push((id, r));
                Ok(())
            }
            (Phase::FedAvg(server), Up::Train(r)) => server.receive(ctx, id, r),
            _ => Err(mismatch()),
        }
    }

    fn finish(&mut self, ctx: &RoundCtx) -> Result<(), AlgoError> {
        match &mut self.phase {
            Phase::Erm => {
                let erms = std::mem::take(&mut self.erms);
                self.cluster(ctx, erms)
            }
            Phase::FedAvg(server) => server.finish(ctx),
        }
    }

    fn snapshot(&self) -> Snapshot<'_> {
        match &self.phase {
            Phase::Erm => Snapshot {
                replicas: vec![ReplicaView {
                    models: Vec::new(),
                    assignment: &self.unassigned,
                    train_loss: None,
                    diverged: false,
                }],
                selected: 0,
            },
            Phase::FedAvg(server) => server.snapshot(),
        }
    }
}
