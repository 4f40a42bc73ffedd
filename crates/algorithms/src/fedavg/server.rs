//! FedAvg server half over a fixed client-to-model assignment.

use std::sync::Arc;

use fedcluster_core::federation::weighted_loss;
use fedcluster_core::params::all_finite;
use fedcluster_core::{
    AlgoError, ClientId, Model, Purpose, ReplicaView, Rng, RoundCtx, ServerHalf, Snapshot, stream,
};

use super::config::Config;
use crate::common::aggregate::{Aggregation, apply_gradients, average_models};
use crate::common::checked::Checked;
use crate::common::messages::{ClusterModel, ModelReply};
use crate::common::sampling::participants;

/// The server half of FedAvg with a fixed assignment.
#[derive(Debug)]
pub struct FedAvgServer {
    config: Checked<Config>,
    p: usize,
    models: Vec<f32>,
    assignment: Vec<Option<usize>>,
    train_loss: Option<f64>,
    participants: usize,
    sums: Vec<f64>,
}

impl FedAvgServer {
    /// `k` models drawn from the stream `(seed, Init, 0)`; client `i` trains
    /// model `assignment[i]`, which must be below `k`.
    pub fn new(
        config: Checked<Config>,
        model: &dyn Model,
        k: usize,
        assignment: Vec<usize>,
        seed: u64,
    ) -> Result<Self, AlgoError> {
        let p = model.num_params();
        let mut rng = stream(seed, Purpose::Init, 0, 0);
        let mut models = vec![0.0; k * p];
        for m in models.chunks_exact_mut(p) {
            config.init.fill(model, &mut rng, m);
        }
        Self::with_models(config, models, p, assignment)
    }

    /// Starts from the given `k x p` models.
    pub fn with_models(
        config: Checked<Config>,
        models: Vec<f32>,
        p: usize,
        assignment: Vec<usize>,
    ) -> Result<Self, AlgoError> {
        let k = models.len() / p.max(1);
        if let Some(bad) = assignment.iter().find(|&&a| a >= k) {
            return Err(AlgoError::Protocol(format!(
                "assignment names model {bad} but there are only {k}"
            )));
        }
        Ok(Self {
            config,
            p,
            models,
            assignment: assignment.into_iter().map(Some).collect(),
            train_loss: None,
            participants: 0,
            sums: Vec::new(),
        })
    }
}

impl ServerHalf for FedAvgServer {
    type Down = ClusterModel;
    type Up = ModelReply;

    fn plan(
        &mut self,
        _ctx: &RoundCtx,
        rng: &mut Rng,
    ) -> Result<Vec<(ClientId, ClusterModel)>, AlgoError> {
        let models = Arc::new(self.models.clone());
        let chosen = participants(self.assignment.len(), self.config.participation, rng);
        self.participants = chosen.len();
        Ok(chosen
            .into_iter()
            .map(|id| {
                let cluster = self.assignment[id].expect("fixed assignment") as u32;
                (
                    id,
                    ClusterModel {
                        models: Arc::clone(&models),
                        cluster,
                        p: self.p,
                    },
                )
            })
            .collect())
    }

    fn absorb(
        &mut self,
        ctx: &RoundCtx,
        replies: Vec<(ClientId, ModelReply)>,
    ) -> Result<(), AlgoError> {
        let p = self.p;
        if let Some((id, _)) = replies.iter().find(|(_, up)| up.payload.len() != p) {
            return Err(AlgoError::Protocol(format!(
                "round {}: malformed reply from client {id}",
                ctx.round
            )));
        }
        if let Some((id, _)) = replies.iter().find(|(_, up)| up.loss.is_none()) {
            return Err(AlgoError::Diverged {
                round: ctx.round,
                client: Some(*id),
                detail: "non-finite loss or update".into(),
            });
        }
        let cluster = |id: &ClientId| self.assignment[*id].expect("fixed assignment");
        match self.config.aggregation {
            Aggregation::Gradient => {
                let scale = self.config.lr / self.participants.max(1) as f32;
                let contributions = replies
                    .iter()
                    .map(|(id, up)| (cluster(id), up.payload.as_slice()));
                apply_gradients(&mut self.models, p, scale, contributions);
            }
            Aggregation::Model => {
                let contributions = replies
                    .iter()
                    .map(|(id, up)| (cluster(id), up.payload.as_slice(), up.samples as f64));
                average_models(&mut self.models, p, &mut self.sums, contributions);
            }
        }
        self.train_loss = weighted_loss(
            replies
                .iter()
                .map(|(_, up)| (up.loss.unwrap_or(f64::NAN), up.samples)),
        );
        if !all_finite(&self.models) {
            return Err(AlgoError::Diverged {
                round: ctx.round,
                client: None,
                detail: "non-finite model after aggregation".into(),
            });
        }
        Ok(())
    }

    fn snapshot(&self) -> Snapshot<'_> {
        Snapshot {
            replicas: vec![ReplicaView {
                models: self.models.chunks_exact(self.p).collect(),
                assignment: &self.assignment,
                train_loss: self.train_loss,
                diverged: false,
            }],
            selected: 0,
        }
    }
}
