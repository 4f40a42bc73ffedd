//! The PACFL server: the clients' subspaces once, their proximity matrix and
//! its hierarchical clustering, then FedAvg inside each cluster.

use fedcluster_core::{
    AlgoError, ClientId, Model, Purpose, ReplicaView, Rng, RoundCtx, ServerHalf, Snapshot, stream,
};

use super::config::{Config, Proximity};
use super::messages::{Basis, Down, Up};
use super::subspace::{min_pairwise_angle, orthonormal, smallest_angle};
use crate::common::agglomerative::agglomerate;
use crate::common::checked::Checked;
use crate::fedavg::FedAvgServer;

#[derive(Debug, serde::Serialize, serde::Deserialize)]
enum Phase {
    /// Waiting for every client's subspace.
    Bases,
    /// FedAvg inside the clusters found.
    FedAvg(FedAvgServer),
}

/// The server half of PACFL.
#[derive(Debug, serde::Serialize, serde::Deserialize)]
pub struct PacflServer {
    config: Checked<Config>,
    num_clients: usize,
    /// The model every cluster starts from.
    start: Vec<f32>,
    phase: Phase,
    unassigned: Vec<Option<usize>>,
    /// The subspaces received in round 0.
    bases: Vec<(ClientId, Basis)>,
    /// Values of the subspaces received so far.
    held: u128,
}

impl PacflServer {
    /// A server for `m` clients; the clusters' common start is drawn from the
    /// stream `(seed, Init, 0, 0)`.
    pub fn new(config: Checked<Config>, model: &dyn Model, m: usize, seed: u64) -> Self {
        let mut start = vec![0.0; model.num_params()];
        config
            .init
            .fill(model, &mut stream(seed, Purpose::Init, 0, 0), &mut start);
        Self {
            config,
            num_clients: m,
            start,
            phase: Phase::Bases,
            unassigned: vec![None; m],
            bases: Vec::new(),
            held: 0,
        }
    }

    /// The clients' proximity matrix (`m x m`, degrees) from their subspaces.
    fn proximity(&self) -> Vec<f64> {
        let m = self.bases.len();
        let mut a = vec![0.0; m * m];
        let cell = |i: usize, j: usize, v: f64, a: &mut [f64]| {
            a[i * m + j] = v;
            a[j * m + i] = v;
        };
        match self.config.proximity {
            Proximity::SmallestAngle => {
                let q: Vec<_> = self
                    .bases
                    .iter()
                    .map(|(_, b)| orthonormal(&b.columns, b.dim as usize))
                    .collect();
                for i in 0..m {
                    for j in i + 1..m {
                        cell(i, j, smallest_angle(&q[i], &q[j]), &mut a);
                    }
                }
            }
            Proximity::MinPairwise => {
                for i in 0..m {
                    for j in i + 1..m {
                        let (bi, bj) = (&self.bases[i].1, &self.bases[j].1);
                        let v = min_pairwise_angle(&bi.columns, &bj.columns, bi.dim as usize);
                        cell(i, j, v, &mut a);
                    }
                }
            }
        }
        a
    }

    /// Clusters the clients by their subspaces and starts FedAvg per cluster.
    fn cluster(&mut self, ctx: &RoundCtx) -> Result<(), AlgoError> {
        let m = self.num_clients;
        let in_order = self.bases.iter().enumerate().all(|(i, (id, _))| i == *id);
        if self.bases.len() != m || !in_order {
            return Err(AlgoError::Protocol(format!(
                "round {}: PACFL clusters every client's subspace, got {} of {m}",
                ctx.round,
                self.bases.len()
            )));
        }
        let proximity = self.proximity();
        let labels = agglomerate(&proximity, m, self.config.linkage, self.config.cut);
        let k = labels.iter().max().map_or(0, |l| l + 1);
        let p = self.start.len();
        let values = k as u128 * p as u128;
        let limit = fedcluster_core::limits::MAX_MODEL_VALUES;
        if let Some(why) = fedcluster_core::limits::exceeds("cluster model values", values, limit) {
            return Err(AlgoError::Protocol(format!(
                "round {}: PACFL found {k} clusters; {why}: raise cut.value",
                ctx.round
            )));
        }
        let models = self.start.repeat(k);
        let fedavg =
            Checked::new(self.config.fedavg()).map_err(|e| AlgoError::Protocol(e.to_string()))?;
        self.bases.clear();
        self.phase = Phase::FedAvg(FedAvgServer::with_models(fedavg, models, p, labels)?);
        Ok(())
    }
}

impl ServerHalf for PacflServer {
    type Down = Down;
    type Up = Up;

    fn plan(&mut self, ctx: &RoundCtx, rng: &mut Rng) -> Result<Vec<(ClientId, Down)>, AlgoError> {
        match &mut self.phase {
            Phase::Bases => Ok((0..self.num_clients).map(|id| (id, Down::Basis)).collect()),
            Phase::FedAvg(server) => Ok(server
                .plan(ctx, rng)?
                .into_iter()
                .map(|(id, m)| (id, Down::Train(m)))
                .collect()),
        }
    }

    fn receive(&mut self, ctx: &RoundCtx, id: ClientId, up: Up) -> Result<(), AlgoError> {
        match (&mut self.phase, up) {
            (Phase::Bases, Up::Basis(basis)) => {
                let same_dim = self.bases.first().is_none_or(|(_, b)| b.dim == basis.dim);
                if basis.cols().is_none() || !same_dim {
                    return Err(AlgoError::malformed(ctx.round, id));
                }
                self.held += basis.columns.len() as u128;
                let limit = fedcluster_core::limits::MAX_MODEL_VALUES;
                if let Some(why) =
                    fedcluster_core::limits::exceeds("basis values", self.held, limit)
                {
                    return Err(AlgoError::Protocol(format!("round {}: {why}", ctx.round)));
                }
                self.bases.push((id, basis));
                Ok(())
            }
            (Phase::FedAvg(server), Up::Train(r)) => server.receive(ctx, id, r),
            _ => Err(AlgoError::malformed(ctx.round, id)),
        }
    }

    fn finish(&mut self, ctx: &RoundCtx) -> Result<(), AlgoError> {
        match &mut self.phase {
            Phase::Bases => self.cluster(ctx),
            Phase::FedAvg(server) => server.finish(ctx),
        }
    }

    fn snapshot(&self) -> Snapshot<'_> {
        match &self.phase {
            Phase::Bases => Snapshot {
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
