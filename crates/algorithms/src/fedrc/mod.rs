//! FedRC: robust clustering, one cluster per concept.
//!
//! Guo, Tang, Lin, "FedRC: Tackling Diverse Distribution Shifts Challenge in
//! Federated Learning by Robust Clustering", ICML 2024; public code
//! LINs-lab/FedRC (`client.py::FedRC`, `aggregator.py::CentralizedAggregator`,
//! the label-prior loop of `run_experiment.py`).
//!
//! FedEM's likelihood groups samples by whatever the components fit best,
//! label shift included; FedRC's objective
//! `Σ_i ln Σ_k ω_k P(x_i, y_i; θ_k) / (P(x_i; θ_k) P(y_i; θ_k))`, with
//! `P(x, y)/P(x) = exp(−ℓ)` and `P(y; θ_k)` the component's label
//! distribution, scores a sample by how much better than its label's base
//! rate a component explains it, so clients that differ only in their labels'
//! frequencies (label shift) or their inputs (feature shift) share a cluster
//! and clients whose `P(y | x)` differs (concept shift) do not.
//!
//! Round protocol (the public code's `fedrc` method; it is FedEM's with steps
//! 2 and 6 changed):
//! 1. The server sends the components `θ_1 … θ_K` and their label priors
//!    `P_k(y)` (none in the first round) to the round's participants.
//! 2. E-step: `γ_ik ∝ ω_k exp(−ℓ(θ_k; x_i, y_i)) / P_k(y_i)` (uniform `ω` in
//!    a client's first round; a label the priors do not cover yet counts 1).
//! 3. `ω_k = (1/n) Σ_i γ_ik`, and the soft label counts
//!    `Σ_{i: y_i = c} γ_ik` per component and class.
//! 4. Each component `local_steps` steps on the weighted loss
//!    `(1/n) Σ_i γ_ik ℓ(θ_k; x_i, y_i)` from `θ_k` (components of weight 0
//!    are skipped, as the code's `fit_epochs` does); the client sends the
//!    trained components, `ω`, the label counts and `n`.
//! 5. The server sets `θ_k = Σ_i n_i θ_ik / Σ_i n_i` over the participants.
//! 6. The server sums the label counts per component, floors each at `1e-8`
//!    and normalises: the next round's `P_k(y)`.
//!
//! Where code and this implementation differ:
//! - Step 6: the code sums every client's latest counts, stale ones of
//!   clients absent this round included; here only the round's participants
//!   count, so the server holds `O(K × classes)`, not one table per client.
//!   With full participation (the default) the two agree.
//! - Local solver and prediction: as in FedEM ([`crate::fedem`]): exact
//!   weighted GD, or SGD/Adam on minibatches drawn by `γ`; a client is
//!   evaluated on its dominant component `argmax_k ω_k` (the code's
//!   `--hard_cluster` prediction; its default mixes the components by `ω`).
//! - FedRC needs class labels; on real-valued targets the client refuses the
//!   round with an error that names FedEM.
//!
//! The paper's FedRC-Adam (server-side Adam) and the code's dynamic adding
//! and removing of clusters are not implemented. Its config keys are FedEM's.

use crate::common::checked::{Checked, FieldError};
use crate::fedem::{self, Components, MixtureClient, MixtureReply, MixtureServer, Objective};
use crate::table::{Algorithm, Setup};

/// FedRC's parameters: FedEM's keys.
pub type Config = fedem::Config;

/// FedRC in the algorithm table.
pub struct FedRC;

impl Algorithm for FedRC {
    const STARTS_FROM_MODELS: bool = true;
    type Config = Config;
    type Down = Components;
    type Up = MixtureReply;
    type Server = MixtureServer;
    type Client = MixtureClient;

    fn server(config: Checked<Config>, setup: &Setup<'_>) -> Result<MixtureServer, FieldError> {
        fedem::server(config, Objective::Robust, setup)
    }

    fn client(config: &Checked<Config>) -> MixtureClient {
        MixtureClient::new(config, Objective::Robust)
    }
}

#[cfg(test)]
mod tests;
