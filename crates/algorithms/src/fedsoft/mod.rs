//! FedSoft: soft clustered federated learning with proximal local updating.
//!
//! Ruan, Joe-Wong, "FedSoft: Soft Clustered Federated Learning with Proximal
//! Local Updating", AAAI 2022.
//!
//! Round protocol:
//! 1. The server holds `S` cluster centres `θ_s` and sends all of them to the
//!    round's participants.
//! 2. Every `estimate_every` rounds (and in a client's first round) the client
//!    re-estimates its importance weights: `u_ks` is the fraction of its points
//!    whose loss is lowest under `θ_s`, floored at `smoothing` and renormalised.
//! 3. The client solves its proximal local problem
//!    `f_k(w) + (μ/2) Σ_s u_ks ‖w − θ_s‖²` with `local_steps` steps of size
//!    `lr` (full-batch gradient, or Adam on minibatches) from the mixture
//!    `Σ_s u_ks θ_s`, and sends `w_k`, `u_k` and `n_k`.
//! 4. The server sets every centre to `θ_s = Σ_k v_sk w_k` with aggregation
//!    weights `v_sk ∝ u_ks n_k` over the participants; a centre no participant
//!    weighs keeps its value.
//!
//! Participants (`sampling`): a uniform fraction by default; or, as the paper
//! selects them, per centre `s` clients drawn with probability proportional
//! to their last importance weight `u_ks` (`"importance"`), or to `u_ks n_k`
//! as its public code draws them (`"importance_size"`), the round training
//! the union of the centres' draws and aggregating over all of them as above.
//!
//! A client's cluster, for metrics, is its largest importance weight.

mod client;
mod sampling;
mod server;

pub use client::FedSoftClient;
pub use sampling::Sampling;
pub use server::{Config, FedSoftServer};

use serde::{Deserialize, Serialize};
use std::sync::Arc;

use fedcluster_core::Message;
use fedcluster_core::params::all_finite;

/// Server to client: all centres, back to back.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Centres {
    /// The centres.
    pub models: Arc<Vec<f32>>,
    /// Whether to re-estimate the importance weights this round.
    pub estimate: bool,
}

/// Client to server.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SoftReply {
    /// The local model `w_k` (zeros when `loss` is `None`).
    pub model: Vec<f32>,
    /// Importance weights `u_k`, one per centre.
    pub importance: Vec<f64>,
    /// Loss at the starting mixture (`None` if training diverged).
    pub loss: Option<f64>,
    /// `n_k`.
    pub samples: usize,
}

impl Message for Centres {
    fn wire_bytes(&self) -> u64 {
        self.models.len() as u64 * 4 + 1
    }
    fn is_finite(&self) -> bool {
        all_finite(&self.models)
    }
}

impl Message for SoftReply {
    fn wire_bytes(&self) -> u64 {
        self.model.len() as u64 * 4 + self.importance.len() as u64 * 8 + 16
    }
    fn is_finite(&self) -> bool {
        all_finite(&self.model)
            && self.importance.iter().all(|u| u.is_finite())
            && self.loss.is_none_or(f64::is_finite)
    }
}

use crate::common::checked::{Checked, FieldError};
use crate::table::{Algorithm, Setup};

/// FedSoft in the algorithm table.
pub struct FedSoft;

impl Algorithm for FedSoft {
    const STARTS_FROM_MODELS: bool = true;
    type Config = Config;
    type Down = Centres;
    type Up = SoftReply;
    type Server = FedSoftServer;
    type Client = FedSoftClient;

    fn server(config: Checked<Config>, setup: &Setup<'_>) -> Result<FedSoftServer, FieldError> {
        setup.check_models("clusters", config.clusters, 1)?;
        let mut server = FedSoftServer::new(config, setup.model, setup.num_clients, setup.seed)
            .with_sizes(setup.client_sizes)?;
        if let Some(given) = setup.initial_models {
            server.start_from(given)?;
        }
        Ok(server)
    }

    fn client(config: &Checked<Config>) -> FedSoftClient {
        FedSoftClient::new(config)
    }
}

#[cfg(test)]
mod tests;
