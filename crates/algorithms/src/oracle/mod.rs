//! Oracle clustering: FedAvg inside each *true* cluster.
//!
//! The upper baseline of the IFCA paper (Ghosh et al. 2022, Section VI) and of
//! Su, Xu, Yang 2024 (Section V, "oracle"): the cluster identities are known and
//! one model is trained per cluster with the round protocol of [`crate::fedavg`].
//!
//! The true labels come from [`Setup::true_clusters`], the setup's named
//! ground-truth input; besides this the two-phase method's oracles
//! (`start = "truth"` or `"labels"`) are the only readers of ground truth.

use crate::common::checked::{Checked, FieldError};
use crate::common::messages::{ClusterModel, ModelReply};
use crate::fedavg::{Config, FedAvgClient, FedAvgServer};
use crate::table::{Algorithm, Setup};

/// The oracle in the algorithm table: FedAvg with the true assignment.
pub struct Oracle;

impl Algorithm for Oracle {
    const STARTS_FROM_MODELS: bool = true;
    type Config = Config;
    type Down = ClusterModel;
    type Up = ModelReply;
    type Server = FedAvgServer;
    type Client = FedAvgClient;

    fn server(config: Checked<Config>, setup: &Setup<'_>) -> Result<FedAvgServer, FieldError> {
        let truth = setup.require_true_clusters("name", "the oracle")?;
        FedAvgServer::for_setup(config, setup, truth.clusters, truth.labels.to_vec())
    }

    fn client(config: &Checked<Config>) -> FedAvgClient {
        FedAvgClient::from_config(config)
    }
}
