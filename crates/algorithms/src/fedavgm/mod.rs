//! FedAvgM: FedAvg with server momentum.
//!
//! Hsu, Qi, Brown, "Measuring the Effects of Non-Identical Data Distribution for
//! Federated Visual Classification", arXiv:1909.06335, 2019, Section 3 (FedAvgM),
//! a baseline for heterogeneous clients: one global model whose server step
//! carries momentum across rounds.
//!
//! Round protocol:
//! 1. The server samples the participants `M_t` and sends them the global model
//!    `w_t`.
//! 2. Each participant runs `local_steps` local steps from `w_t` (full-batch GD, or
//!    minibatch Adam with its moments kept) and sends the new model `w_i`.
//! 3. The server forms the pseudo-gradient `Δ_t = w_t − Σ_{i∈M_t} (n_i/N_t) w_i`,
//!    the momentum `v_t = β v_{t−1} + Δ_t` (`v_0 = 0`) and steps
//!    `w_{t+1} = w_t − η v_t`.
//!
//! With `β = 0` and `η = 1` this is FedAvg (the `global` baseline).

mod config;
mod server;

pub use config::Config;
pub use server::FedAvgMServer;

use crate::common::aggregate::Aggregation;
use crate::common::checked::{Checked, FieldError};
use crate::common::messages::{ClusterModel, ModelReply};
use crate::fedavg::FedAvgClient;
use crate::table::{Algorithm, Setup};

/// FedAvgM in the algorithm table.
pub struct FedAvgM;

impl Algorithm for FedAvgM {
    const STARTS_FROM_MODELS: bool = true;
    type Config = Config;
    type Down = ClusterModel;
    type Up = ModelReply;
    type Server = FedAvgMServer;
    type Client = FedAvgClient;

    fn server(config: Checked<Config>, setup: &Setup<'_>) -> Result<FedAvgMServer, FieldError> {
        let mut server = FedAvgMServer::new(config, setup.model, setup.num_clients, setup.seed);
        if let Some(given) = setup.initial_models {
            server.start_from(given)?;
        }
        Ok(server)
    }

    fn client(config: &Checked<Config>) -> FedAvgClient {
        FedAvgClient::new(Aggregation::Model, config.lr, config.local_steps)
            .with_optimizer(config.optimizer)
    }
}

#[cfg(test)]
mod tests;
