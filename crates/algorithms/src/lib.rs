//! fedcluster-algorithms: clustered federated learning algorithms, each a server
//! half and a client half exchanging typed messages (see
//! [`fedcluster_core::federation`]).
//!
//! One directory per algorithm, each starting with its paper and round protocol:
//! - [`ifca`]: IFCA, gradient and model averaging, partial participation,
//!   restarts, stable-identity saving (Ghosh et al. 2022, Algorithm 2);
//! - [`cflmgd`]: CFL-MGD, IFCA with Polyak momentum (Zhao et al., Algorithm 1);
//! - [`oneshot`]: local ERM + k-means + FedAvg (Ghosh et al. 2022, Algorithm 1);
//! - [`fedavg`]: FedAvg over a fixed assignment (the global-model baseline);
//! - [`oracle`]: FedAvg inside the true clusters;
//! - [`local`]: every client alone;
//! - [`twophase`]: federated moment descent on anchor clients, then FedAvg or
//!   FedProx with clustering (Su, Xu, Yang 2024);
//! - [`fedprox`]: FedProx, one global model with proximal local solves;
//! - [`srfca`]: SR-FCA, threshold-graph clustering refined without knowing k
//!   (and ONE_SHOT-IFCA);
//! - [`cfl`]: CFL of Sattler et al., recursive bi-partitioning;
//! - [`fedsoft`]: FedSoft, soft clustering with proximal local updates.
//!
//! Shared mechanics live in [`common`]. Algorithms do no IO.

pub mod cfl;
pub mod cflmgd;
pub mod common;
pub mod fedavg;
pub mod fedprox;
pub mod fedsoft;
pub mod ifca;
pub mod local;
pub mod oneshot;
pub mod oracle;
pub mod srfca;
pub mod twophase;

pub use common::aggregate::Aggregation;
pub use common::checked::{Checked, FieldError, Validate};
pub use common::init::InitScheme;
