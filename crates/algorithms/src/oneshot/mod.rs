//! One-shot clustering: local ERM, k-means at the server, then FedAvg per cluster.
//!
//! Ghosh, Chung, Yin, Ramchandran, "An Efficient Framework for Clustered
//! Federated Learning", IEEE Trans. Inf. Theory 2022, Algorithm 1 (first studied
//! in Ghosh et al., "Robust Federated Learning in a Heterogeneous Environment",
//! 2019).
//!
//! Round protocol:
//! 1. Round 0: every client computes its local ERM `θ̂_i` (`erm_steps` full-batch
//!    gradient steps from `erm_init`) and sends it (Algorithm 1, line 1).
//! 2. The server clusters `{θ̂_i}` into `S_1..S_k` with k-means (k-means++ seeding,
//!    `kmeans_restarts` restarts, lowest inertia kept) (line 2).
//! 3. Rounds 1..: FedAvg inside each found cluster, starting from the k-means
//!    centroids (line 3; see [`crate::fedavg`] for its round protocol).

mod client;
mod config;
mod messages;
mod server;

pub use client::OneShotClient;
pub use config::Config;
pub use messages::{Down, Up};
pub use server::OneShotServer;

use crate::common::checked::{Checked, FieldError};
use crate::table::{Algorithm, Setup};

/// One-shot clustering in the algorithm table.
pub struct OneShot;

impl Algorithm for OneShot {
    type Config = Config;
    type Down = Down;
    type Up = Up;
    type Server = OneShotServer;
    type Client = OneShotClient;

    fn server(config: Checked<Config>, setup: &Setup<'_>) -> Result<OneShotServer, FieldError> {
        setup.check_models("clusters", config.clusters, 1)?;
        Ok(OneShotServer::new(config, setup.num_clients, setup.seed))
    }

    fn client(config: &Checked<Config>) -> OneShotClient {
        OneShotClient::new(config)
    }
}

#[cfg(test)]
mod tests;
