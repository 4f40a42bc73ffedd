//! The PACFL client half: its data's principal vectors once, then FedAvg.

use fedcluster_core::{AlgoError, ClientEnv, ClientHalf, RoundCtx};

use super::config::Config;
use super::messages::{Basis, Down, Up};
use super::subspace::{class_bases, data_basis};
use crate::common::aggregate::Aggregation;
use crate::fedavg::FedAvgClient;

/// The client half of PACFL.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct PacflClient {
    basis: usize,
    per_class: bool,
    fedavg: FedAvgClient,
}

impl PacflClient {
    /// A client for the given configuration.
    pub fn new(config: &Config) -> Self {
        Self {
            basis: config.basis,
            per_class: config.per_class,
            fedavg: FedAvgClient::new(Aggregation::Model, config.lr, config.local_steps)
                .with_optimizer(config.optimizer),
        }
    }
}

impl ClientHalf for PacflClient {
    type Down = Down;
    type Up = Up;

    fn handle(
        &mut self,
        ctx: &RoundCtx,
        msg: &Down,
        env: &mut ClientEnv<'_>,
    ) -> Result<Up, AlgoError> {
        match msg {
            Down::Basis => {
                let d = env.data.dim;
                let columns = if self.per_class {
                    class_bases(&env.data, self.basis).ok_or_else(|| {
                        AlgoError::Protocol(format!(
                            "round {}: PACFL's per_class needs class labels, and client {}'s \
                             targets are real values",
                            ctx.round, env.id
                        ))
                    })?
                } else {
                    data_basis(env.data.x, d, self.basis)
                };
                let dim = u32::try_from(d)
                    .map_err(|_| AlgoError::Protocol(format!("{d} features do not fit a basis")))?;
                Ok(Up::Basis(Basis { dim, columns }))
            }
            Down::Train(m) => Ok(Up::Train(self.fedavg.train(m.model(), env))),
        }
    }
}
