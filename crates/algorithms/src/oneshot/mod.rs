//! One-shot clustering: local ERM, k-means at the server, then FedAvg per cluster.
//!
//! Ghosh, Chung, Yin, Ramchandran, "An Efficient Framework for Clustered
//! Federated Learning", IEEE Trans. Inf. Theory 2022, Algorithm 1 (first studied
//! in Ghosh et al., "Robust Federated Learning in a Heterogeneous Environment",
//! 2019).
//!
//! Round protocol:
//! 1. Round 0: every client computes its local ERM `θ̂_i` (`erm_steps` full-batch
//!    gradient steps from its own draw of `erm_init`, or, with
//!    `erm_start = "shared"`, from the one start `w_0` the server draws and
//!    sends) and sends it (Algorithm 1, line 1).
//! 2. The server clusters `{θ̂_i}` into `S_1..S_k` with k-means (k-means++ seeding,
//!    `kmeans_restarts` restarts, lowest inertia kept) (line 2).
//! 3. Rounds 1..: FedAvg inside each found cluster, starting from the k-means
//!    centroids (line 3; see [`crate::fedavg`] for its round protocol).

mod client;
mod config;
mod messages;
mod server;

pub use client::OneShotClient;
pub use config::{Config, ErmStart};
pub use messages::{Down, Up};
pub use server::OneShotServer;

use fedcluster_core::{Purpose, stream};

use crate::common::checked::{Checked, FieldError};
use crate::common::init::InitScheme;
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
        // All-zero weights are a stationary point of any network with a hidden
        // layer (every hidden unit alike, their gradients zero): its ERM could
        // train only the output bias.
        let tensors = setup.model.tensors();
        if config.erm_init == InitScheme::Zeros && tensors.len() > 2 {
            return Err(FieldError::new(
                "erm_init",
                format!(
                    "zeros cannot train {} ({} tensors: its hidden units stay alike and their \
                     gradients zero); use erm_init = {{ kind = \"model\" }}, with \
                     erm_start = \"shared\" for comparable local models",
                    setup.model.name(),
                    tensors.len()
                ),
            ));
        }
        let server = OneShotServer::new(config.clone(), setup.num_clients, setup.seed);
        Ok(match config.erm_start {
            ErmStart::Own => server,
            ErmStart::Shared => {
                let mut start = vec![0.0; setup.model.num_params()];
                let mut rng = stream(setup.seed, Purpose::Init, 0, 0);
                config.erm_init.fill(setup.model, &mut rng, &mut start);
                server.with_start(start)
            }
        })
    }

    fn client(config: &Checked<Config>) -> OneShotClient {
        OneShotClient::new(config)
    }

    /// Every client's local ERM as the server keeps it for k-means (1.2 to
    /// 1.5 models a client measured at 80,004-byte models).
    fn models_per_client(_config: &Config) -> usize {
        1
    }
}

#[cfg(test)]
mod tests;
