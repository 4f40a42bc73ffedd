//! FedAvg client half: one gradient, or `local_steps` local steps.

use fedcluster_core::{AlgoError, ClientEnv, ClientHalf, RoundCtx};
use fedcluster_models::local::gd_steps_ws;

use crate::common::aggregate::Aggregation;
use crate::common::messages::{ClusterModel, ModelReply};

/// The client half of FedAvg. It keeps no state between rounds.
#[derive(Debug, Clone)]
pub struct FedAvgClient {
    aggregation: Aggregation,
    lr: f32,
    local_steps: usize,
}

impl FedAvgClient {
    /// A client for the given option, step size and local steps.
    pub fn new(aggregation: Aggregation, lr: f32, local_steps: usize) -> Self {
        Self {
            aggregation,
            lr,
            local_steps,
        }
    }

    /// Trains from `start` on the client's data and builds the reply.
    pub(crate) fn train(&self, start: &[f32], env: &mut ClientEnv<'_>) -> ModelReply {
        let samples = env.data.len();
        match self.aggregation {
            Aggregation::Gradient => {
                let mut grad = vec![0.0; start.len()];
                let loss = env.model.loss_grad(start, env.data, &mut grad, env.ws);
                ModelReply::checked(grad, loss, samples)
            }
            Aggregation::Model => {
                let mut params = start.to_vec();
                let loss = gd_steps_ws(
                    env.model,
                    &mut params,
                    env.data,
                    self.lr,
                    self.local_steps,
                    env.ws,
                );
                ModelReply::checked(params, loss, samples)
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
