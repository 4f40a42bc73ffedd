//! IFCA, the Iterative Federated Clustering Algorithm.
//!
//! Ghosh, Chung, Yin, Ramchandran, "An Efficient Framework for Clustered
//! Federated Learning", IEEE Trans. Inf. Theory 68(12), 2022 (NeurIPS 2020),
//! Algorithm 2 and Section IV-C.
//!
//! Round protocol (Algorithm 2, lines 2-16), for each of `restarts` independent
//! replicas run side by side (the paper's random restarts):
//! 1. The server samples the participating clients `M_t` (a fraction of all).
//! 2. It broadcasts the `k` cluster models `θ_j` of every replica (line 3); a client
//!    whose identity has been stable for `stable_rounds` rounds receives only its
//!    own cluster's model (Section IV-C, communication saving).
//! 3. Each participant estimates its cluster `ĵ = argmin_j F_i(θ_j)` (line 6).
//! 4. Option I (gradient averaging): it sends `ĵ` and `g_i = ∇F_i(θ_ĵ)` (line 9).
//!    Option II (model averaging): it runs `τ` local gradient steps from `θ_ĵ`
//!    (LocalUpdate, lines 18-21; the assignment's forward pass is the first step)
//!    and sends `ĵ` and the new model (line 10).
//! 5. Option I: `θ_j <- θ_j - (γ/|M_t|) Σ_{i in S_j} g_i` (line 14; `|M_t| = m`
//!    under full participation). Option II: `θ_j <-` the sample-weighted mean of
//!    the models received from `S_j`; a cluster that received none keeps its model.
//!
//! With `min_share` (off by default), a replica whose first round leaves a
//! cluster chosen by fewer than that share of the participants drops the
//! round's update and starts again from a new draw of its initial models, up
//! to [`redraw::MAX_REDRAWS`] times ([`redraw`]).
//!
//! With weight sharing (Section IV-C, Fig. 2) every layer but the last is shared
//! by the `k` models: in step 5 the shared layers are averaged (or stepped) over
//! all participants, the heads per cluster, and the shared layers cross the wire
//! once.
//!
//! With `pretrain_rounds` (the IFCA code's FEMNIST protocol, Table II) the
//! run opens with that many rounds of FedAvg: every participant is sent only
//! cluster 0's model as its own (the stable-identity message) and trains it;
//! then every cluster model takes the pretrained trunk (every layer but the
//! last, `[0, Model::head_start)`) and keeps its own initially drawn head, as
//! the code's `--resume` injects the pretrained weights but the last layer's.
//! With `freeze_trunk` the clients then train the head alone
//! ([`crate::common::head_only`]); gradients (option I) are sent with a zero
//! trunk, so the trunk never moves.
//!
//! At the end the replica with the lowest training loss (the mean loss of the
//! clients at their chosen models in the last round) is selected; every replica
//! is reported. Several step sizes can be swept the same way (replicas = restarts
//! x step sizes). A replica whose loss or update becomes non-finite, or whose
//! training loss grows 10^8-fold over its first round, is dropped; the run fails
//! only when every replica has diverged.
//!
//! Replicas share each client's pass over its data: [`Down`] carries every
//! replica's `k` models back to back and the model's batched `losses`,
//! `assign_and_grad` and `assign_and_train` evaluate them all at once, so ten
//! restarts read a client's data once per round, in one wide, compute-bound
//! product instead of ten narrow, memory-bound ones.
//!
//! With `clients = "sequential"` the rounds emulate the SR-FCA public code's
//! IFCA instead: every client is assigned, then each cluster's participants
//! train one after another from the model the previous one returned
//! ([`sequential`]).
//!
//! As in the paper, a client under stable identity keeps receiving only its
//! own cluster's model: there is no periodic full refresh.

mod client;
mod config;
pub(crate) mod local_step;
mod messages;
mod redraw;
mod replica;
mod round_state;
mod sequential;
mod server;

pub use crate::common::aggregate::Aggregation;
pub use client::IfcaClient;
pub use config::{Config, StepSizes};
pub use local_step::LocalStep;
pub use messages::{Down, Up};
pub use server::IfcaServer;

use crate::common::checked::{Checked, FieldError};
use crate::table::{Algorithm, Setup};

/// IFCA in the algorithm table.
pub struct Ifca;

impl Algorithm for Ifca {
    const STARTS_FROM_MODELS: bool = true;
    type Config = Config;
    type Down = Down;
    type Up = Up;
    type Server = IfcaServer;
    type Client = IfcaClient;

    fn server(config: Checked<Config>, setup: &Setup<'_>) -> Result<IfcaServer, FieldError> {
        let single_layer = setup.model.head_start() == 0;
        for (on, field, what) in [
            (config.weight_sharing, "weight_sharing", "to share"),
            (config.freeze_trunk, "freeze_trunk", "to freeze"),
            (config.pretrain_rounds > 0, "pretrain_rounds", "to pretrain"),
        ] {
            if on && single_layer {
                return Err(FieldError::new(
                    field,
                    format!(
                        "model `{}` has a single layer, there is no trunk {what}",
                        setup.model.name()
                    ),
                ));
            }
        }
        let replicas = config.restarts * config.lr.values().len();
        setup.check_models("clusters", config.clusters, replicas)?;
        let mut server = IfcaServer::new(config, setup.model, setup.num_clients, setup.seed);
        if let Some(given) = setup.initial_models {
            server.start_from(given)?;
        }
        Ok(server)
    }

    fn client(config: &Checked<Config>) -> IfcaClient {
        let client = IfcaClient::new(
            config
                .local_step()
                .expect("a checked config has a local step"),
        );
        if config.freeze_trunk {
            client.with_trunk_frozen_from(config.pretrain_rounds)
        } else {
            client
        }
    }
}

#[cfg(test)]
mod option_tests;
#[cfg(test)]
mod sequential_tests;
#[cfg(test)]
mod tests;
