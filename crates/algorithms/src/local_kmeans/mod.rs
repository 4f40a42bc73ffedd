//! Local-KMeans, as the SR-FCA paper names the baseline of Ghosh, Hong, Yin,
//! Ramchandran, "Robust Federated Learning in a Heterogeneous Environment"
//! (2019): every client trains a local model, the server runs k-means on
//! the models, then FedAvg inside each cluster.
//!
//! Round protocol: exactly [`crate::oneshot`]'s (the IFCA paper's Algorithm 1)
//! under the baseline's name:
//! 1. Round 0: each client runs its local ERM and sends its model.
//! 2. The server runs k-means (with restarts) on the local models.
//! 3. Later rounds: FedAvg inside each k-means cluster.

/// Local-KMeans in the algorithm table: [`crate::oneshot::OneShot`] itself, its
/// config and halves.
pub use crate::oneshot::OneShot as LocalKMeans;
