//! One-shot clustering client half.

use fedcluster_core::{AlgoError, ClientEnv, ClientHalf, RoundCtx};

use super::config::Config;
use super::messages::{Down, Up};
use crate::common::init::InitScheme;
use crate::common::messages::ModelReply;
use crate::common::trainer::{LocalTrainer, Optimizer};
use crate::fedavg::FedAvgClient;

/// The client half of one-shot clustering.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct OneShotClient {
    erm_steps: usize,
    erm_lr: f32,
    erm_init: InitScheme,
    optimizer: Optimizer,
    fedavg: FedAvgClient,
}

impl OneShotClient {
    /// A client for the given configuration.
    pub fn new(config: &Config) -> Self {
        Self {
            erm_steps: config.erm_steps,
            erm_lr: config.erm_lr,
            erm_init: config.erm_init,
            optimizer: config.optimizer,
            fedavg: FedAvgClient::new(config.aggregation, config.lr, config.local_steps)
                .with_optimizer(config.optimizer),
        }
    }
}

impl ClientHalf for OneShotClient {
    type Down = Down;
    type Up = Up;

    fn handle(
        &mut self,
        _ctx: &RoundCtx,
        msg: &Down,
        env: &mut ClientEnv<'_>,
    ) -> Result<Up, AlgoError> {
        match msg {
            Down::Erm(start) => {
                let mut params = match start {
                    Some(start) => start.model().to_vec(),
                    None => {
                        let mut params = vec![0.0; env.model.num_params()];
                        self.erm_init.fill(env.model, &mut env.rng, &mut params);
                        params
                    }
                };
                // The local ERM trains once, from fresh optimizer state.
                LocalTrainer::new(self.optimizer).train(
                    &mut params,
                    self.erm_lr,
                    self.erm_steps,
                    env,
                );
                let loss = env.model.loss(&params, env.data, env.ws);
                Ok(Up::Erm(ModelReply::checked(params, loss, env.data.len())))
            }
            Down::Train(m) => Ok(Up::Train(self.fedavg.train(m.model(), env))),
        }
    }
}
