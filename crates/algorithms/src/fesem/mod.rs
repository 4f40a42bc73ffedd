//! FeSEM: federated stochastic expectation maximisation over the L2 distances
//! between the clients' local models and `K` cluster centres.
//!
//! Xie, Long, Shen, Zhou, Wang, Jiang, "Multi-Center Federated Learning",
//! arXiv:2005.01026, 2020 (Algorithm 1, FeSEM); Long, Xie, Shen, Zhou, Wang,
//! Jiang, "Multi-center federated learning: clients clustering for better
//! personalization", World Wide Web 26, 2023 (online 2022). The objective is
//! `min Σ_i Σ_k r_ik ‖W_i − W̃_k‖²` over the assignments `r` and the centres
//! `W̃`, alternated once per round.
//!
//! Round protocol:
//! 1. Round 0 (warm-up): every client runs `local_steps` local steps from a
//!    common model `θ_0` (drawn with `init`) and sends its local model `W_i`.
//!    The first centres are `K` models drawn with `init` (`seeding =
//!    "random"`, the paper) or picked among the `W_i` by k-means++ (`seeding =
//!    "kmeans++"`, the default).
//! 2. E-step: each received `W_i` is assigned to its nearest centre,
//!    `r_i = argmin_k ‖W_i − W̃_k‖`, against the centres the round started
//!    from.
//! 3. M-step: `W̃_k ← (1/|S_k|) Σ_{i ∈ S_k} W_i`, the plain mean of the round's
//!    models assigned to `k` (a centre that got none keeps its place).
//! 4. Rounds 1..: a `participation` fraction of the clients each receives its
//!    centre `W̃_{r_i}`, runs `local_steps` local steps from it and sends its
//!    new `W_i`; then steps 2 and 3. A client keeps its assignment while it is
//!    not sampled.
//!
//! The server takes the replies one at a time: the E-step of a reply needs
//! only the current centres, and the M-step keeps running sums (O(K × params);
//! the k-means++ warm-up alone holds every client's model for one round).
//!
//! Paper and code. The paper's M-step is the unweighted mean, as is the
//! FlexCFL implementation's (`aggregation_strategy = 'avg'`); both are
//! followed. The public `multi-center-fed-learning` code (`models/fedsem.py`)
//! instead re-runs k-means on the clients' latest models every
//! `update-center-every` rounds and averages inside the clusters in between;
//! FlexCFL's FeSEM assigns before training and averages the models trained
//! from the same centre. Here each round is one E-step and one M-step on the
//! models the clients send, as in the paper's Algorithm 1. The client half is
//! FedAvg's (model averaging), so it has no `client.rs` or `messages.rs`.

mod config;
mod server;

pub use config::{Config, Seeding};
pub use server::FeSemServer;

use crate::common::aggregate::Aggregation;
use crate::common::checked::{Checked, FieldError};
use crate::common::messages::{ClusterModel, ModelReply};
use crate::fedavg::FedAvgClient;
use crate::table::{Algorithm, Setup};

/// FeSEM in the algorithm table.
pub struct FeSem;

impl Algorithm for FeSem {
    type Config = Config;
    type Down = ClusterModel;
    type Up = ModelReply;
    type Server = FeSemServer;
    type Client = FedAvgClient;

    fn server(config: Checked<Config>, setup: &Setup<'_>) -> Result<FeSemServer, FieldError> {
        setup.check_models("clusters", config.clusters, 1)?;
        Ok(FeSemServer::new(
            config,
            setup.model,
            setup.num_clients,
            setup.seed,
        ))
    }

    fn client(config: &Checked<Config>) -> FedAvgClient {
        FedAvgClient::new(Aggregation::Model, config.lr, config.local_steps)
            .with_optimizer(config.optimizer)
    }
}

#[cfg(test)]
mod tests;
