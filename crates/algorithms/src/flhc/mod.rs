//! FL+HC: federated learning with one hierarchical clustering of the clients'
//! local updates.
//!
//! Briggs, Fan, Andras, "Federated learning with hierarchical clustering of
//! local updates to improve training on non-IID data", IJCNN 2020
//! (arXiv:2004.11791), Algorithm 1.
//!
//! Round protocol:
//! 1. Rounds `0..n` (`n = cluster_round`): FedAvg of one global model `w`: a
//!    `participation` fraction of the clients train `local_steps` from `w`,
//!    and `w` becomes the sample-weighted mean of their models.
//! 2. Round `n`: every client trains from `w_n` and sends its model `W_i`;
//!    the server keeps the update `ΔW_i = W_i − w_n`.
//! 3. The server clusters the `ΔW_i` by agglomerative hierarchical clustering
//!    (`metric`: Euclidean, Manhattan or cosine; `linkage`: Ward, complete,
//!    average or single) and cuts the dendrogram at the distance threshold
//!    `P` (`cut = { kind = "distance", value = P }`) or at a number of
//!    clusters (`cut = { kind = "clusters", value = k }`).
//! 4. Each cluster's model starts as `w_n` plus its members' sample-weighted
//!    mean update (FedAvg of round `n` inside the cluster); from round `n + 1`
//!    on, each cluster runs FedAvg independently, a `participation` fraction
//!    of all clients per round, each training its cluster's model.
//!
//! The server holds every client's update for the clustering round only
//! (O(clients × params)); otherwise O(clusters × params).
//!
//! Paper and code. The paper clusters with scikit-learn's
//! `AgglomerativeClustering` (distance threshold, the metrics and linkages
//! above; Euclidean with Ward recommended), as does the Flower strategy of
//! `inflorescence` (`strategy/flhc.py`), which clusters the clients' weights
//! rather than their updates: the same clusters under the Euclidean and
//! Manhattan metrics, not under cosine. The updates are followed. Where the
//! paper's cluster models start after the split is not spelled out in
//! Algorithm 1; starting from the round-`n` FedAvg inside each cluster is the
//! Flower strategy's choice and keeps the clustering round's training.
//! `common::agglomerative` reproduces scikit-learn's linkages and its
//! threshold rule (clusters at or above the threshold stay apart). The client
//! half is FedAvg's (model averaging).

mod config;
mod server;

pub use config::Config;
pub use server::FlhcServer;

use crate::common::agglomerative::Cut;
use crate::common::aggregate::Aggregation;
use crate::common::checked::{Checked, FieldError};
use crate::common::messages::{ClusterModel, ModelReply};
use crate::fedavg::FedAvgClient;
use crate::table::{Algorithm, Setup};

/// FL+HC in the algorithm table.
pub struct Flhc;

impl Algorithm for Flhc {
    type Config = Config;
    type Down = ClusterModel;
    type Up = ModelReply;
    type Server = FlhcServer;
    type Client = FedAvgClient;

    fn server(config: Checked<Config>, setup: &Setup<'_>) -> Result<FlhcServer, FieldError> {
        if let Cut::Clusters { value } = config.cut {
            setup.check_models("cut.value", value, 1)?;
        }
        let held = setup.num_clients as u128 * setup.model.num_params() as u128;
        let what = format!(
            "update values held at the clustering round ({} clients x {} parameters)",
            setup.num_clients,
            setup.model.num_params()
        );
        let limit = fedcluster_core::limits::MAX_MODEL_VALUES;
        if let Some(why) = fedcluster_core::limits::exceeds(&what, held, limit) {
            return Err(FieldError::new("cluster_round", why));
        }
        FlhcServer::new(config, setup.model, setup.num_clients, setup.seed)
            .map_err(|e| FieldError::new("name", e.to_string()))
    }

    fn client(config: &Checked<Config>) -> FedAvgClient {
        FedAvgClient::new(Aggregation::Model, config.lr, config.local_steps)
            .with_optimizer(config.optimizer)
    }

    /// The updates held at the clustering round (1.3 models a client
    /// measured at 80,004-byte models).
    fn models_per_client(_config: &Config) -> usize {
        1
    }

    /// The agglomerative clustering's distances: 15 bytes a pair measured
    /// (1,000 to 3,000 clients).
    fn bytes_per_client_pair(_config: &Config) -> usize {
        15
    }
}

#[cfg(test)]
mod tests;
