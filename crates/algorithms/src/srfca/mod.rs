//! SR-FCA: successive refinement of a threshold-graph clustering.
//!
//! "An Improved Federated Clustering Algorithm with Model-based Clustering"
//! (anonymous authors, under double-blind review; public code harshv834/sr-fca),
//! Algorithms 1-4: needs neither the number of
//! clusters nor a good initialisation.
//!
//! Round protocol:
//! 1. ONE_SHOT, round 0: every client trains a local model `w_i` for
//!    `local_steps` steps from `w_0` (full-batch gradient descent, or Adam on
//!    minibatches drawn from its stream as the public code does) and sends it.
//!    With `local_rounds = N` this training is spread over rounds 0..N: each
//!    client keeps its model and optimizer between the parts and sends the
//!    model after the last (later rounds shift by `N - 1`).
//! 2. Cross-loss distance only, round 1: every client scores every local model
//!    on its data, `f_j(w_i)`; `dist(i, j) = ½(f_i(w_j) + f_j(w_i))`
//!    (Definition 5.1). With ℓ2 the server uses `‖w_i − w_j‖` directly. With
//!    `loss_scale = { kind = "batch-sums", batch = B }` each `f_j` is on the
//!    public code's scale (the mean loss x `ceil(n_j / B) / n_j`) and a
//!    cluster's loss in steps 4(c)-(d) the unweighted mean over its members.
//! 3. The server resolves `λ` (a value or a quantile of the pairwise
//!    distances), links clients at distance `<= λ` and keeps the connected
//!    components (with `clustering = "correlation"`, the pivot algorithm's
//!    clusters) of at least `t` clients as `C_0`; the others wait unassigned.
//! 4. REFINE, `R` times: (with `resample`, first steps 1-2 again from
//!    `w_0` on the step's own block of each client's data, Theorem 4.11;
//!    `λ` stays ONE_SHOT's) (a) TrimmedMeanGD (Algorithm 3), `refine_rounds`
//!    rounds: each cluster model starts at `w_0`, its members send the gradient
//!    at it (or, with `refine_local_steps` > 1 or Adam, their update after
//!    that many local steps, divided by `lr`, as the public code does), and
//!    the server steps along the coordinate-wise trimmed mean `TrMean_β` of
//!    the gradients (Definition 3.2); (b) cross-loss only, one
//!    round in which every client scores every cluster model, `f_i(ω_c)`;
//!    (c) RECLUSTER (Algorithm 2): every client, assigned or not, joins the
//!    nearest cluster model, `dist(w_i, ω_c)` with the cluster's loss `f_c` the
//!    sample-weighted loss of its members; (d) MERGE (Algorithm 4): clusters at
//!    distance `<= λ` are joined, the merged model is the mean of its parts,
//!    and merged clusters of fewer than `t` clients are dropped (their clients
//!    unassigned until the next RECLUSTER).
//! 5. Remaining rounds: TrimmedMeanGD on the final clusters.
//!
//! With `clients_per_round` (off by default) each TrimmedMeanGD round of
//! steps 4(a) and 5 trains only that many members of each cluster, drawn by
//! the server, as the public code's `ClusterTrainer` samples
//! `num_clients_per_round` of a cluster's clients per round (uniformly without
//! replacement, all of them when the cluster has no more); the evaluation
//! rounds and RECLUSTER still involve every client.
//!
//! With `refine_schedule` (off by default) step 4(a)'s round `r` of each
//! REFINE step runs at `lr · factor(r)`, the public code's triangular
//! schedule over its cluster training (`schedule`).
//!
//! With `then = { kind = "ifca", local_steps }` steps 4-5 are replaced by IFCA
//! with model averaging from ONE_SHOT's clusters (each starting at the mean of
//! its members' local models): the paper's ONE_SHOT-IFCA baseline.
//!
//! Steps 1-2 read none of `then`, `threshold`, `min_size`, `clustering`,
//! `trim` and `clients_per_round`, so a checkpoint taken before step 3 goes
//! on under a config that differs in those alone (`--fork-from`, `fork`):
//! ONE_SHOT-IFCA from SR-FCA's ONE_SHOT.

mod client;
mod clustering;
mod config;
mod fork;
mod messages;
mod pivot;
mod plan;
mod resample;
mod schedule;
mod server;
mod server_clustering;
mod transitions;
mod trimmed_mean_gd;

pub use client::SrFcaClient;
pub use clustering::{merge, merge_with, one_shot, one_shot_with, recluster, resolve_threshold};
pub use config::{
    AfterOneShot, Clustering, Config, Distance, LossScale, RefineSchedule, Threshold,
};
pub use fork::FORKABLE;
pub use messages::{Down, Up};
pub use pivot::{Cut, pivot_clusters};
pub use resample::DataSplit;
pub use schedule::RefineLr;
pub use server::{MAX_CLIENTS, SrFcaServer};

use crate::common::checked::{Checked, FieldError};
use crate::table::{Algorithm, Setup};

/// SR-FCA in the algorithm table.
pub struct SrFca;

impl Algorithm for SrFca {
    type Config = Config;
    type Down = Down;
    type Up = Up;
    type Server = SrFcaServer;
    type Client = SrFcaClient;

    fn server(config: Checked<Config>, setup: &Setup<'_>) -> Result<SrFcaServer, FieldError> {
        SrFcaServer::new(config, setup.model, setup.num_clients, setup.seed)
            .map_err(|e| FieldError::new("name", e.to_string()))
    }

    fn client(config: &Checked<Config>) -> SrFcaClient {
        SrFcaClient::new(config)
    }

    /// The server's copy of every client's local model (ONE_SHOT's models,
    /// kept for the distances): 0.9 to 2.1 models a client measured (28,008-
    /// to 80,004-byte models).
    fn models_per_client(_config: &Config) -> usize {
        1
    }

    /// The clients' losses at every local model (`f64`, as replies and as
    /// the server's `m x m` table), the symmetric distances (`f64`), the
    /// threshold's quantile copy and the graph: 29 bytes a pair measured
    /// (1,000 to 3,000 clients).
    fn bytes_per_client_pair(_config: &Config) -> usize {
        29
    }

    /// Before ONE_SHOT's clustering, into a config that differs only in what
    /// the clustering and later stages read (`fork`): SR-FCA and
    /// ONE_SHOT-IFCA share ONE_SHOT.
    fn continue_under(
        server: &mut SrFcaServer,
        config: &Checked<Config>,
        differing: &[String],
    ) -> Result<(), String> {
        fork::continue_under(server, config, differing)
    }
}

#[cfg(test)]
mod local_rounds_tests;
#[cfg(test)]
mod loss_scale_tests;
#[cfg(test)]
mod option_tests;
#[cfg(test)]
mod schedule_tests;
#[cfg(test)]
mod tests;
