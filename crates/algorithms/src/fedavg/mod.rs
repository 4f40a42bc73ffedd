//! FedAvg over a fixed assignment of clients to models.
//!
//! McMahan, Moore, Ramage, Hampson, Agüera y Arcas, "Communication-Efficient
//! Learning of Deep Networks from Decentralized Data", AISTATS 2017. With one
//! model for everybody this is the IFCA paper's *global model* baseline; with the
//! true clusters it is the *oracle*; after k-means on local models it is the last
//! stage of one-shot clustering (IFCA paper, Algorithm 1, line 3).
//!
//! Round protocol:
//! 1. The server samples the participating clients.
//! 2. Each participant receives the model of its (fixed) cluster.
//! 3. Gradient option: it returns the gradient of its loss at that model.
//!    Model option: it runs `local_steps` full-batch gradient steps and returns
//!    the new model.
//! 4. Gradient option: `θ_j <- θ_j - (γ/|M_t|) Σ_{i in S_j} g_i`. Model option:
//!    `θ_j <-` the sample-weighted mean of the models of `S_j`; a cluster that
//!    received none keeps its model. With `weighting = "uniform"` the mean
//!    is unweighted; with `clients = "sequential"` the participants train one
//!    after another, one per engine round ([`chain`], emulating the SR-FCA
//!    public code).

pub(crate) mod chain;
mod client;
mod config;
mod server;

pub use client::FedAvgClient;
pub use config::{Clients, Config};
pub use server::FedAvgServer;

#[cfg(test)]
mod option_tests;
#[cfg(test)]
mod tests;
