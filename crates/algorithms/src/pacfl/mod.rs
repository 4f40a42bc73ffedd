//! PACFL: clusters from the principal angles between the clients' data
//! subspaces, found once before training, then FedAvg per cluster.
//!
//! Vahidian, Morafah, Wang, Kungurtsev, Chen, Shah, Lin, "Efficient
//! Distribution Similarity Identification in Clustered Federated Learning via
//! Principal Angles Between Client Data Subspaces", AAAI 2023
//! (arXiv:2209.10526), Algorithm 1; public code `MMorafah/PACFL`
//! (`main_pacfl.py`, `src/clustering/hierarchical_clustering.py`).
//!
//! Round protocol:
//! 1. Round 0: every client computes the truncated SVD of its data matrix
//!    `D_k` (`d x n_k`, one column per point) and sends the top `p` left
//!    singular vectors `U_p^k` (`basis`); with `per_class`, those of each
//!    class's points, side by side.
//! 2. The server forms the proximity matrix `A`, `A_ij` the angle (degrees)
//!    between the subspaces of clients `i` and `j` (`proximity`), and clusters
//!    the clients by agglomerative hierarchical clustering of `A` (`linkage`),
//!    merging while the closest groups are within `β` (`cut = { kind =
//!    "distance", value = β }`) or down to a number of clusters.
//! 3. Every cluster starts from the same model (drawn with `init`); from
//!    round 1 on, a `participation` fraction of all clients each trains its
//!    cluster's model for `local_steps` local steps, and each cluster's model
//!    becomes the sample-weighted mean of its participants' models (FedAvg).
//!
//! The server holds every client's subspace (`d x p` values each) for round 0
//! only; afterwards O(clusters × params).
//!
//! Paper and code. The paper's proximity is the smallest principal angle
//! between the subspaces (`proximity = "smallest-angle"`, the default). The
//! code's `calculating_adjacency` takes instead the smallest angle between any
//! principal vector of one client and any of the other,
//! `min arccos(U_iᵀU_j)` entrywise (`"min-pairwise"`), an upper bound of the
//! former; we take `|U_iᵀU_j|` there, as the code's angle demo notebook does,
//! since a singular vector's sign is arbitrary (each SVD routine picks its
//! own). The code's label-skew runs compute one SVD per class present
//! (`per_class = true`), its MIX-4 runs one per client (the default). Its
//! hierarchical clustering merges while the closest pair is at most `β`
//! (here: below `β`; equal only on ties) and its `average` linkage is the
//! mean of the two merged rows (`linkage = "weighted"`, WPGMA, the default),
//! not scikit-learn's size-weighted average. Singular vectors come from the
//! smaller Gram matrix (`XᵀX` or `XXᵀ`) in `f64`, the same subspace as the
//! code's `np.linalg.svd` of the raw data (no centring, as the code).

mod client;
mod config;
mod messages;
mod server;
mod subspace;

pub use client::PacflClient;
pub use config::{Config, Proximity};
pub use messages::{Basis, Down, Up};
pub use server::PacflServer;

use crate::common::agglomerative::Cut;
use crate::common::checked::{Checked, FieldError};
use crate::table::{Algorithm, Setup};

/// PACFL in the algorithm table.
pub struct Pacfl;

impl Algorithm for Pacfl {
    type Config = Config;
    type Down = Down;
    type Up = Up;
    type Server = PacflServer;
    type Client = PacflClient;

    fn server(config: Checked<Config>, setup: &Setup<'_>) -> Result<PacflServer, FieldError> {
        if let Cut::Clusters { value } = config.cut {
            setup.check_models("cut.value", value, 1)?;
        }
        Ok(PacflServer::new(
            config,
            setup.model,
            setup.num_clients,
            setup.seed,
        ))
    }

    fn client(config: &Checked<Config>) -> PacflClient {
        PacflClient::new(config)
    }

    /// The principal-angle proximities and the agglomerative clustering on
    /// them: 17 bytes a pair measured (1,000 to 3,000 clients).
    fn bytes_per_client_pair(_config: &Config) -> usize {
        17
    }
}

#[cfg(test)]
mod tests;
