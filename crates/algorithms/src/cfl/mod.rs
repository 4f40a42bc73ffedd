//! CFL: clustered federated learning by recursive bi-partitioning.
//!
//! Sattler, Müller, Samek, "Clustered Federated Learning: Model-Agnostic
//! Distributed Multitask Optimization Under Privacy Constraints", IEEE TNNLS
//! 32(8), 2021.
//!
//! Round protocol:
//! 1. All clients start in one cluster with one model.
//! 2. Each round every client (with `clients_per_round`, that many members
//!    of each cluster drawn by the server, as the SR-FCA public code's CFL
//!    does) receives its cluster's model, runs
//!    `local_steps` full-batch gradient steps and sends the new model; the server
//!    keeps its update `Δθ_i = θ_i − θ_c`.
//! 3. Every cluster model becomes the sample-weighted mean of its members' new
//!    models (FedAvg inside the cluster).
//! 4. After `warmup_rounds`, a cluster of more than `min_split_size` clients whose
//!    mean update is small, `‖Σ_i (n_i/N_c) Δθ_i‖ < eps1` (the federation is near
//!    a stationary point of its joint objective), while some client's update is
//!    still large, `max_i ‖Δθ_i‖ > eps2`, is split in two by the optimal
//!    bipartition of the cosine similarities `⟨Δθ_i, Δθ_j⟩ / (‖Δθ_i‖ ‖Δθ_j‖)`
//!    (complete-linkage agglomerative clustering to two groups, as the paper's
//!    code does); both halves start from the cluster's model. Under
//!    `clients_per_round` the criteria and the bipartition read each member's
//!    latest update, from an earlier round for a member not drawn in this one
//!    (the public code likewise reads every member's last trained weights).

mod bipartition;
mod server;

pub use bipartition::optimal_bipartition;
pub use server::{CflServer, Config};

/// CFL's client half: FedAvg's, one local training per round.
pub use crate::fedavg::FedAvgClient as CflClient;

use crate::common::aggregate::Aggregation;
use crate::common::checked::{Checked, FieldError};
use crate::common::messages::{ClusterModel, ModelReply};
use crate::table::{Algorithm, Setup};

/// CFL in the algorithm table.
pub struct Cfl;

impl Algorithm for Cfl {
    const STARTS_FROM_MODELS: bool = true;
    type Config = Config;
    type Down = ClusterModel;
    type Up = ModelReply;
    type Server = CflServer;
    type Client = CflClient;

    fn server(config: Checked<Config>, setup: &Setup<'_>) -> Result<CflServer, FieldError> {
        let mut server = CflServer::new(config, setup.model, setup.num_clients, setup.seed);
        if let Some(given) = setup.initial_models {
            server.start_from(given)?;
        }
        Ok(server)
    }

    fn client(config: &Checked<Config>) -> CflClient {
        CflClient::new(Aggregation::Model, config.lr, config.local_steps)
            .with_optimizer(config.optimizer)
            .with_round_schedule(config.round_schedule)
    }

    /// The server's last update of every client (0.9 models a client
    /// measured at 80,004-byte models).
    fn models_per_client(_config: &Config) -> usize {
        1
    }

    /// A split's cosine similarities and the bipartition's linkage table
    /// (`f64` each, over the members of the cluster it splits): 16 bytes a
    /// pair.
    fn bytes_per_client_pair(_config: &Config) -> usize {
        16
    }
}

#[cfg(test)]
mod tests;
