//! FedAvg client half: one gradient, or `local_steps` local steps.

use fedcluster_core::{AlgoError, ClientEnv, ClientHalf, RoundCtx};

use super::config::Config;
use crate::common::aggregate::Aggregation;
use crate::common::messages::{ClusterModel, ModelReply};
use crate::common::trainer::{LocalTrainer, Optimizer};

/// The client half of FedAvg. It keeps only its optimizer's state (Adam's
/// moments) between rounds.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct FedAvgClient {
    aggregation: Aggregation,
    lr: f32,
    local_steps: usize,
    trainer: LocalTrainer,
}

impl FedAvgClient {
    /// A full-batch gradient-descent client for the given option, step size and
    /// local steps.
    pub fn new(aggregation: Aggregation, lr: f32, local_steps: usize) -> Self {
        Self {
            aggregation,
            lr,
            local_steps,
            trainer: LocalTrainer::default(),
        }
    }

    /// The client `config` describes.
    pub fn from_config(config: &Config) -> Self {
        Self::new(config.aggregation, config.lr, config.local_steps)
            .with_optimizer(config.optimizer)
    }

    /// The same client training with `optimizer` (model averaging).
    pub fn with_optimizer(mut self, optimizer: Optimizer) -> Self {
        self.trainer = LocalTrainer::new(optimizer);
        self
    }

    /// Trains from `start` on the client's data and builds the reply.
    pub(crate) fn train(&mut self, start: &[f32], env: &mut ClientEnv<'_>) -> ModelReply {
        let samples = env.data.len();
        match self.aggregation {
            Aggregation::Gradient => {
                let mut grad = vec![0.0; start.len()];
                let loss = env.model.loss_grad(start, env.data, &mut grad, env.ws);
                ModelReply::checked(grad, loss, samples)
            }
            Aggregation::Model => {
                let mut params = start.to_vec();
                let loss = self
                    .trainer
                    .train(&mut params, self.lr, self.local_steps, env);
                ModelReply::trained(params, loss, samples)
            }
        }
    }
}

impl ClientHalf for FedAvgClient {
    type Down = ClusterModel;
    type Up = ModelReply;

    fn handle(
        &mut self,
        _ctx: &RoundCtx,
        msg: &ClusterModel,
        env: &mut ClientEnv<'_>,
    ) -> Result<ModelReply, AlgoError> {
        Ok(self.train(msg.model(), env))
    }
}
