//! FedEM: federated multi-task learning under a mixture of distributions.
//!
//! Marfoq, Neglia, Bellet, Kameni, Vidal, "Federated Multi-Task Learning under
//! a Mixture of Distributions", NeurIPS 2021 (Algorithm 1, centralized FedEM);
//! public code omarfoq/FedEM (`client.py::MixtureClient`,
//! `aggregator.py::CentralizedAggregator`, `learners/learner.py`).
//!
//! Each client's data is a mixture of `M` shared components; client `t` keeps
//! its own mixture weights `π_t`.
//!
//! Round protocol:
//! 1. The server sends the components `θ_1 … θ_M` to the round's participants
//!    (a uniform fraction, `participation`).
//! 2. E-step: the client scores every sample under every component,
//!    `q_t(z_i = m) ∝ π_tm exp(−ℓ(h_θm(x_i), y_i))` (starting from uniform
//!    `π_t` in its first round).
//! 3. M-step of the weights: `π_tm = (1/n_t) Σ_i q_t(z_i = m)`.
//! 4. For each component `m`, `local_steps` steps of the client's optimizer on
//!    the weighted loss `(1/n_t) Σ_i q_t(z_i = m) ℓ(h_θm(x_i), y_i)` from
//!    `θ_m`; the client sends the `M` trained components, `π_t` and `n_t`.
//! 5. The server sets `θ_m = Σ_t n_t θ_mt / Σ_t n_t` over the participants.
//!
//! Where paper, code and this implementation differ:
//! - Local solver (step 4): the code runs SGD epochs on uniform minibatches
//!   with the weighted loss `(loss_vec @ q) / batch`. Here full-batch GD takes
//!   the exact weighted gradient (summed sample by sample), and SGD or Adam
//!   draw each minibatch in proportion to `q` and scale its gradient by
//!   `Σ_i q_im / n_t = π_tm`, the same gradient in expectation
//!   (`core::train::weighted`). A component of weight `π_tm = 0` is not
//!   trained, as in FedRC's code (FedEM's code takes a zero step). Adam
//!   (which the code also offers) normalises the `π_tm` scale away, so a
//!   component a client barely weighs still takes full-size steps towards
//!   its data; SGD (the papers' choice) or GD keep the mixture apart
//!   (`tests.rs`).
//! - Aggregation under partial participation (step 5): the paper's Algorithm 1
//!   and the code weight by `n_t / n` over all clients, the absent ones
//!   contributing their unchanged copy; here the participants alone are
//!   averaged (FedRC's code does the same). With full participation (the
//!   default) the two agree.
//! - Prediction: a client predicts with `Σ_m π_tm softmax(h_θm(x))` in the
//!   paper. The metrics here evaluate one model per client, so a client's
//!   cluster and evaluated model is its dominant component `argmax_m π_tm`
//!   (as FedSoft reports its largest importance weight); under well-separated
//!   clusters `π_t` is nearly one-hot and the two coincide.
//! - `exp(−ℓ)` is a likelihood for cross-entropy; for the squared loss of
//!   `linear` it is a Gaussian likelihood of variance ½.
//!
//! The reported training loss is the mixture's negative log-likelihood
//! `−mean_i ln Σ_m π_tm exp(−ℓ_im)` at the start of the round.
//!
//! FedRC ([`crate::fedrc`]) is these halves with its robust objective
//! ([`Objective::Robust`]).

mod client;
mod config;
mod messages;
mod server;

pub use client::MixtureClient;
pub use config::Config;
pub use messages::{Components, MixtureReply};
pub use server::MixtureServer;

use serde::{Deserialize, Serialize};

use crate::common::checked::{Checked, FieldError};
use crate::table::{Algorithm, Setup};

/// What the E-step weighs a sample's score by: FedEM's likelihood, or
/// FedRC's robust objective, which divides by the component's label prior.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Objective {
    /// `q_im ∝ π_m exp(−ℓ_im)` (FedEM).
    Likelihood,
    /// `q_im ∝ π_m exp(−ℓ_im) / P_m(y_i)` (FedRC).
    Robust,
}

/// The server half of a mixture method for `setup` under `objective`.
pub(crate) fn server(
    config: Checked<Config>,
    objective: Objective,
    setup: &Setup<'_>,
) -> Result<MixtureServer, FieldError> {
    setup.check_models("clusters", config.clusters, 1)?;
    let mut server = MixtureServer::new(
        config,
        objective,
        setup.model,
        setup.num_clients,
        setup.seed,
    );
    if let Some(given) = setup.initial_models {
        server.start_from(given)?;
    }
    Ok(server)
}

/// FedEM in the algorithm table.
pub struct FedEM;

impl Algorithm for FedEM {
    const STARTS_FROM_MODELS: bool = true;
    type Config = Config;
    type Down = Components;
    type Up = MixtureReply;
    type Server = MixtureServer;
    type Client = MixtureClient;

    fn server(config: Checked<Config>, setup: &Setup<'_>) -> Result<MixtureServer, FieldError> {
        server(config, Objective::Likelihood, setup)
    }

    fn client(config: &Checked<Config>) -> MixtureClient {
        MixtureClient::new(config, Objective::Likelihood)
    }
}

#[cfg(test)]
pub(crate) mod tests;
