//! The two-phase method for mixed regression with anchor clients.
//!
//! Su, Xu, Yang, "Global Convergence of Federated Learning for Mixed
//! Regression", IEEE Trans. Inf. Theory 70(9), 2024: Phase 1 (federated moment
//! descent, with Algorithm 3, the federated orthogonal iteration), then Phase 2
//! (FedX + clustering).
//!
//! Round protocol (one engine round is one exchange):
//! 1. The server picks `m_H` anchor clients among those holding the most points;
//!    every anchor starts from `θ₀` (Phase 1, steps 3-5).
//! 2. Phase 1, iteration `t` (steps 7-9): the server picks `S_t` (every client,
//!    or `m` sampled, never reused in the exact mode) and sends it the moving
//!    anchors' estimates `θ_{i,t}`. Each client forms the residuals
//!    `ε = −∇ℓ(θ_{i,t}; x, y)` of its points and returns, per anchor, their pair
//!    moment `(1/(n(n−1))) Σ_{j≠j'} ε_j ε_{j'}ᵀ` (direct SVD mode, one
//!    exchange) or its product with the
//!    server's basis `Q` (orthogonal iteration, `T₁` exchanges, a QR at the
//!    server after every second one). The server weighs clients by `n_i` and
//!    keeps the top-`k` left singular subspace `Ũ_{i,t}` per anchor.
//! 3. Phase 1, steps 10-15: each moving anchor gets `Ũ_{i,t}`, forms
//!    `A_{i,t}` (eq. 2), the pair moment of its own projected residuals (of
//!    fresh points in the exact mode), finds `β̂` and `σ̂` by `T₂` power-iteration steps on `A Aᵀ`, and moves
//!    by `η r` (`r = Ũ β̂`, `η = α σ̂ / (2β²)`) or stops once
//!    `σ̂ <= ε α Δ / √2`. The server groups the estimates at distance `Δ/2`
//!    into `k` centres (step 16). After `T` iterations, or once every anchor has
//!    stopped, Phase 2 starts from the centres.
//! 4. Phase 2, each round (steps 5-9): the participants receive all `k` models,
//!    pick the lowest-loss one `z_i` (eq. 7), refine it with `s` gradient steps
//!    (FedAvg) or by solving the proximal problem (FedProx), and send it back;
//!    the server sets `θ_t = Σ_i (n_i / N_t) θ_{i,t}`, where a client's entries
//!    other than `z_i` are `θ_{t−1}` (see the `phase2` module).
//!
//! With `start = "init"` Phase 2 runs alone from `init`: the paper's IFCA
//! baseline; with `start = "truth"` it starts from the true parameters, handed in
//! through [`TwoPhaseServer::with_models`]: the paper's oracle.

mod client;
mod config;
mod grouping;
mod messages;
mod moments;
mod phase1;
mod phase2;
mod server;
pub mod subspace;

pub use client::TwoPhaseClient;
pub use config::{Config, LocalUpdate, Phase1, Start, SubspaceSolver};
pub use grouping::{Grouping, group_anchors};
pub use messages::{Down, MomentRequest, Up};
pub use server::TwoPhaseServer;

use crate::common::checked::{Checked, FieldError};
use crate::table::{Algorithm, Setup};

/// The two-phase method in the algorithm table.
pub struct TwoPhase;

impl Algorithm for TwoPhase {
    type Config = Config;
    type Down = Down;
    type Up = Up;
    type Server = TwoPhaseServer;
    type Client = TwoPhaseClient;

    /// With `start = "init"`, Phase 2 (IFCA in the paper's sense) starts from
    /// the given models instead of `init`.
    const STARTS_FROM_MODELS: bool = true;

    fn server(config: Checked<Config>, setup: &Setup<'_>) -> Result<TwoPhaseServer, FieldError> {
        let (model, m) = (setup.model, setup.num_clients);
        setup.check_models("clusters", config.clusters, 1)?;
        if let Some(given) = setup.initial_models {
            if config.start != Start::Init {
                return Err(FieldError::new(
                    "init_from",
                    "the two-phase method starts from given models only with `start = \"init\"` \
                     (Phase 2 from them)",
                ));
            }
            let p = model.num_params();
            let mut models = vec![0.0; config.clusters * p];
            crate::common::init::start_from(&mut models, p, given, "init_from")?;
            return Ok(TwoPhaseServer::with_models(config, models, p, m));
        }
        let anchors = config
            .phase1
            .as_ref()
            .map(|p| p.anchor_count(config.clusters));
        if let Some(anchors) = anchors.filter(|a| *a > m && config.start == Start::Phase1) {
            return Err(FieldError::new(
                "phase1.anchors",
                format!("{anchors} anchors among {m} clients (set phase1.anchors to at most {m})"),
            ));
        }
        match config.start {
            // Su, Xu, Yang's MNIST oracle: every client told its true cluster.
            Start::Labels => {
                let truth = setup.require_true_clusters("start", "`start = \"labels\"`")?;
                TwoPhaseServer::with_labels(config, model, truth.labels.to_vec(), setup.seed)
                    .map_err(|e| FieldError::new("clusters", e.to_string()))
            }
            // Their synthetic oracle: Phase 2 from the true parameters.
            Start::Truth => {
                let Some(truth) = setup.true_models else {
                    return Err(FieldError::new(
                        "start",
                        "`truth` needs a data set with known cluster parameters",
                    ));
                };
                if truth.len() != config.clusters {
                    return Err(FieldError::new(
                        "clusters",
                        format!(
                            "`start = \"truth\"` needs one model per true cluster ({}), got {}",
                            truth.len(),
                            config.clusters
                        ),
                    ));
                }
                Ok(TwoPhaseServer::with_models(
                    config,
                    truth.concat(),
                    model.num_params(),
                    m,
                ))
            }
            Start::Phase1 | Start::Init => {
                let Some(sizes) = setup.client_sizes else {
                    return Err(FieldError::new(
                        "name",
                        "the two-phase method needs the clients' data sizes",
                    ));
                };
                TwoPhaseServer::new(config, model, sizes.to_vec(), setup.seed)
                    .map_err(|e| FieldError::new("phase1", e.to_string()))
            }
        }
    }

    fn client(config: &Checked<Config>) -> TwoPhaseClient {
        TwoPhaseClient::new(config)
    }
}

#[cfg(test)]
mod tests;
