//! FedAvg server half over a fixed client-to-model assignment.

use std::sync::Arc;

use fedcluster_core::params::{all_finite, axpy};
use fedcluster_core::{
    AlgoError, ClientId, Model, Purpose, Rng, RoundCtx, ServerHalf, Snapshot, stream,
};

use super::chain::Chain;
use super::config::{Clients, Config};
use crate::common::aggregate::{Aggregation, LossMeter, ModelSums};
use crate::common::checked::{Checked, FieldError};
use crate::common::messages::{ClusterModel, ModelReply};
use crate::common::round_schedule::scheduled;
use crate::common::sampling::participants;
use crate::table::Setup;

/// The server half of FedAvg with a fixed assignment.
#[derive(Debug, serde::Serialize, serde::Deserialize)]
pub struct FedAvgServer {
    /// Boxed, as `sums` and `chain` are: other servers hold this one inline.
    config: Box<Checked<Config>>,
    p: usize,
    models: Vec<f32>,
    assignment: Vec<Option<usize>>,
    train_loss: Option<f64>,
    participants: usize,
    /// Model averaging: running weighted sums of the round's models (boxed,
    /// as the chain: other servers hold this one inline in their phases).
    sums: Box<ModelSums>,
    /// The round's training loss.
    loss: LossMeter,
    /// `clients = "sequential"`: the round's chains while they run.
    #[serde(default)]
    chain: Option<Box<Chain>>,
}

impl FedAvgServer {
    /// Starts from `given` (one model per cluster) instead of the drawn models.
    pub fn start_from(&mut self, given: &[Vec<f32>]) -> Result<(), FieldError> {
        crate::common::init::start_from(&mut self.models, self.p, given, "name")
    }

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

    /// The server of an algorithm-table entry (`global`, `oracle`): `k` models
    /// for `setup`, client `i` training model `assignment[i]`.
    pub fn for_setup(
        config: Checked<Config>,
        setup: &Setup<'_>,
        k: usize,
        assignment: Vec<usize>,
    ) -> Result<Self, FieldError> {
        let mut server = Self::new(config, setup.model, k, assignment, setup.seed)
            .map_err(|e| FieldError::new("name", e.to_string()))?;
        if let Some(given) = setup.initial_models {
            server.start_from(given)?;
        }
        Ok(server)
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
            config: Box::new(config),
            p,
            models,
            assignment: assignment.into_iter().map(Some).collect(),
            train_loss: None,
            participants: 0,
            sums: Box::default(),
            loss: LossMeter::default(),
            chain: None,
        })
    }
}

impl FedAvgServer {
    /// `clients = "sequential"`: the next link of the round's chains, which
    /// start (participants drawn, the sums reset) when none is running.
    fn plan_link(&mut self, rng: &mut Rng) -> Vec<(ClientId, ClusterModel)> {
        let (p, k) = (self.p, self.models.len() / self.p);
        if self.chain.is_none() {
            let chosen = participants(self.assignment.len(), self.config.participation, rng);
            self.sums.reset(k, p);
            let chain = Chain::new(&chosen, &self.assignment, &self.models, k, rng);
            self.chain = Some(Box::new(chain));
        }
        let chain = self.chain.as_ref().expect("started above");
        let link = chain.link();
        self.participants = link.len();
        let models = Arc::new(chain.current.clone());
        link.into_iter()
            .map(|(id, c)| {
                let down = ClusterModel {
                    models: Arc::clone(&models),
                    cluster: c as u32,
                    p,
                };
                (id, down)
            })
            .collect()
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
        if self.config.clients == Clients::Sequential {
            return Ok(self.plan_link(rng));
        }
        let models = Arc::new(self.models.clone());
        let chosen = participants(self.assignment.len(), self.config.participation, rng);
        self.participants = chosen.len();
        self.sums.reset(self.models.len() / self.p, self.p);
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

    fn receive(&mut self, ctx: &RoundCtx, id: ClientId, up: ModelReply) -> Result<(), AlgoError> {
        let p = self.p;
        if up.payload.len() != p {
            return Err(AlgoError::malformed(ctx.round, id));
        }
        let Some(loss) = up.loss else {
            return Err(AlgoError::client_diverged(ctx.round, id));
        };
        let c = self.assignment[id].expect("fixed assignment");
        match self.config.aggregation {
            Aggregation::Gradient => {
                let lr = scheduled(self.config.round_schedule, self.config.lr, ctx.round);
                let scale = lr / self.participants.max(1) as f32;
                axpy(-scale, &up.payload, &mut self.models[c * p..(c + 1) * p]);
            }
            Aggregation::Model => {
                let weight = self.config.weighting.weight(up.samples);
                self.sums.add(c, &up.payload, weight);
                if let Some(chain) = &mut self.chain {
                    chain.current[c * p..(c + 1) * p].copy_from_slice(&up.payload);
                }
            }
        }
        self.loss.add(loss, up.samples);
        Ok(())
    }

    fn finish(&mut self, ctx: &RoundCtx) -> Result<(), AlgoError> {
        if let Some(chain) = &mut self.chain {
            if !chain.advance() {
                return Ok(());
            }
            self.chain = None;
        }
        if self.config.aggregation == Aggregation::Model {
            self.sums.finish(&mut self.models);
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
