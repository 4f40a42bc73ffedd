//! FedAvg client half: one gradient, or `local_steps` local steps.

use fedcluster_core::{AlgoError, ClientEnv, ClientHalf, RoundCtx};

use super::config::Config;
use crate::common::aggregate::Aggregation;
use crate::common::messages::{ClusterModel, ModelReply};
use crate::common::round_schedule::{RoundSchedule, scheduled};
use crate::common::trainer::{LocalTrainer, Optimizer};

/// The client half of FedAvg. It keeps only its optimizer's state (Adam's
/// moments) between rounds.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct FedAvgClient {
    aggregation: Aggregation,
    lr: f32,
    local_steps: usize,
    trainer: LocalTrainer,
    /// The step size over the rounds (absent: `lr` every round).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    round_schedule: Option<RoundSchedule>,
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
            round_schedule: None,
        }
    }

    /// The client `config` describes.
    pub fn from_config(config: &Config) -> Self {
        Self::new(config.aggregation, config.lr, config.local_steps)
            .with_optimizer(config.optimizer)
            .with_round_schedule(config.round_schedule)
    }

    /// The same client training at `lr` scaled by `schedule`'s factor of the
    /// round (model averaging; gradient averaging's server scales its step).
    pub fn with_round_schedule(mut self, schedule: Option<RoundSchedule>) -> Self {
        self.round_schedule = schedule;
        self
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
                let lr = scheduled(self.round_schedule, self.lr, env.round);
                let loss = self.trainer.train(&mut params, lr, self.local_steps, env);
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
