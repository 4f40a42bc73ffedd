//! fedcluster-algorithms: clustered federated learning algorithms, each a server
//! half and a client half exchanging typed messages (see
//! [`fedcluster_core::federation`]).
//!
//! One directory per algorithm, each starting with its paper and round
//! protocol and implementing [`table::Algorithm`] (its config and the
//! construction of its halves). The algorithm table below is the one list of
//! algorithms: it declares their modules and the closed [`AlgorithmConfig`]
//! enum, from which names, validation and dispatch derive, and each line's
//! title, which [`AlgorithmConfig::TABLE`] hands to what names algorithms
//! outside Rust (the Python package's Flower strategies).
//! - [`ifca`]: IFCA, gradient and model averaging, partial participation,
//!   restarts, stable-identity saving (Ghosh et al. 2022, Algorithm 2);
//! - [`cflmgd`]: CFL-MGD, IFCA with Polyak momentum (Zhao et al., Algorithm 1);
//! - [`oneshot`]: local ERM + k-means + FedAvg (Ghosh et al. 2022, Algorithm 1);
//! - [`global`]: one global model trained with FedAvg;
//! - [`oracle`]: FedAvg inside the true clusters;
//! - [`local`]: every client alone;
//! - [`twophase`]: federated moment descent on anchor clients, then FedAvg or
//!   FedProx with clustering (Su, Xu, Yang 2024);
//! - [`fedprox`]: FedProx, one global model with proximal local solves;
//! - [`srfca`]: SR-FCA, threshold-graph clustering refined without knowing k
//!   (and ONE_SHOT-IFCA);
//! - [`local_kmeans`]: Local-KMeans, one-shot clustering under the SR-FCA
//!   paper's baseline name;
//! - [`cfl`]: CFL of Sattler et al., recursive bi-partitioning;
//! - [`fedsoft`]: FedSoft, soft clustering with proximal local updates;
//! - [`fedavgm`]: FedAvgM, FedAvg with server momentum (Hsu, Qi, Brown 2019);
//! - [`fedem`]: FedEM, EM over a mixture of shared components (Marfoq et al.
//!   2021);
//! - [`fedrc`]: FedRC, FedEM's halves with a robust objective that clusters
//!   by concept shift only (Guo, Tang, Lin 2024);
//! - [`fesem`]: FeSEM, an E- and an M-step on distances to K centres each round;
//! - [`flhc`]: FL+HC, FedAvg, one agglomerative clustering of the updates, then
//!   FedAvg per cluster;
//! - [`pacfl`]: PACFL, agglomerative clustering of the principal angles between
//!   the clients' data subspaces, then FedAvg per cluster.
//!
//! Shared mechanics live in [`common`] and [`fedavg`] (FedAvg over a fixed
//! assignment, the last stage of several algorithms). Algorithms do no IO.

pub mod common;
pub mod fedavg;
pub mod table;

use table::algorithm_table;

algorithm_table! {
    /// IFCA, the iterative federated clustering algorithm (Ghosh et al. 2022).
    Ifca = "ifca" in ifca::Ifca,
    /// CFL-MGD, IFCA with Polyak momentum (Zhao et al.).
    Cflmgd = "cflmgd" in cflmgd::CflMgd,
    /// One-shot clustering: local ERM, k-means, then FedAvg per cluster (Ghosh et al. 2022).
    Oneshot = "oneshot" in oneshot::OneShot,
    /// One global model trained with FedAvg (McMahan et al. 2017).
    Global = "global" in global::Global,
    /// FedAvg inside the true clusters, an oracle baseline.
    Oracle = "oracle" in oracle::Oracle,
    /// Local models: every client trains alone.
    Local = "local" in local::Local,
    /// The two-phase anchor-client method for mixed regression (Su, Xu, Yang 2024).
    Twophase = "twophase" in twophase::TwoPhase,
    /// FedProx, one global model with proximal local solves (Li et al. 2020).
    Fedprox = "fedprox" in fedprox::FedProx,
    /// SR-FCA, threshold-graph clustering successively refined, k unknown.
    Srfca = "srfca" in srfca::SrFca,
    /// Local-KMeans: local models, k-means on them, then FedAvg per cluster.
    LocalKmeans = "local-kmeans" in local_kmeans::LocalKMeans,
    /// CFL, recursive bi-partitioning (Sattler, Müller, Samek 2021).
    Cfl = "cfl" in cfl::Cfl,
    /// FedSoft, soft clustering with proximal local updates (Ruan, Joe-Wong 2022).
    Fedsoft = "fedsoft" in fedsoft::FedSoft,
    /// FedAvgM, FedAvg with server momentum (Hsu, Qi, Brown 2019).
    Fedavgm = "fedavgm" in fedavgm::FedAvgM,
    /// FedEM, a mixture of shared components per client (Marfoq et al. 2021).
    Fedem = "fedem" in fedem::FedEM,
    /// FedRC, robust soft clustering by concept (Guo, Tang, Lin 2024).
    Fedrc = "fedrc" in fedrc::FedRC,
    /// FeSEM, EM over L2 distances between local models and K centres (Xie et al. 2020).
    Fesem = "fesem" in fesem::FeSem,
    /// FL+HC, one hierarchical clustering of local updates after FedAvg (Briggs, Fan, Andras 2020).
    Flhc = "flhc" in flhc::Flhc,
    /// PACFL, clusters from principal angles between client data subspaces (Vahidian et al. 2023).
    Pacfl = "pacfl" in pacfl::Pacfl,
}

pub use common::aggregate::Aggregation;
pub use common::checked::{Checked, FieldError, Validate};
pub use common::init::InitScheme;
pub use table::{Algorithm, AlgorithmInfo, Setup, TrueClusters, Visit, VisitType};
