//! Oracle clustering: FedAvg inside each *true* cluster.
//!
//! The upper baseline of the IFCA paper (Ghosh et al. 2022, Section VI) and of
//! Su, Xu, Yang 2024 (Section V, "oracle"): the cluster identities are known and
//! one model is trained per cluster with the round protocol of [`crate::fedavg`].
//!
//! This is the only place where ground-truth labels reach an algorithm, and they
//! must be handed in explicitly as [`TrueClusters`].

use fedcluster_core::{AlgoError, Model};

use crate::common::checked::Checked;
use crate::fedavg::{Config, FedAvgServer};

/// Ground-truth cluster labels, handed to the oracle on purpose.
#[derive(Debug, Clone)]
pub struct TrueClusters {
    /// Number of clusters.
    pub clusters: usize,
    /// True cluster of each client.
    pub labels: Vec<usize>,
}

/// The oracle's server: FedAvg with the true assignment. Its client half is
/// [`crate::fedavg::FedAvgClient`].
pub fn server(
    config: Checked<Config>,
    model: &dyn Model,
    truth: TrueClusters,
    seed: u64,
) -> Result<FedAvgServer, AlgoError> {
    FedAvgServer::new(config, model, truth.clusters, truth.labels, seed)
}
