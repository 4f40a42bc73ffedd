//! FedAvg client half: one gradient, or `local_steps` local steps.

use fedcluster_core::{AlgoError, ClientEnv, ClientHalf, RoundCtx};
use fedcluster_models::local::gd_steps;

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
        let p = start.len();
        let mut grad = std::mem::take(&mut env.ws.grad);
        grad.resize(p, 0.0);
        let reply = match self.aggregation {
            Aggregation::Gradient => {
                let loss = env.model.loss_grad(start, env.data, &mut grad, env.ws);
                ModelReply::checked(grad.clone(), loss, env.data.len())
            }
            Aggregation::Model => {
                let mut params = start.to_vec();
                let loss = gd_steps(
                    env.model,
                    &mut params,
                    env.data,
                    self.lr,
                    self.local_steps,
                    &mut grad,
                    env.ws,
                );
                ModelReply::checked(params, loss, env.data.len())
            }
        };
        env.ws.grad = grad;
        reply
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
