//! The global-model baseline: one model for every client, trained with FedAvg.
//!
//! McMahan et al., AISTATS 2017; the IFCA paper's *global model* (Section VI),
//! the SR-FCA paper's *Global*, the CFL-MGD paper's *FedAvg*.
//!
//! Round protocol: [`crate::fedavg`] with one cluster that every client belongs to:
//! 1. The server samples the participants and sends them the global model.
//! 2. Each runs `local_steps` local steps (model option) or computes one
//!    gradient (gradient option) and sends it back.
//! 3. The server averages the models (sample-weighted) or steps along the mean
//!    gradient.

use crate::common::checked::{Checked, FieldError};
use crate::common::messages::{ClusterModel, ModelReply};
use crate::fedavg::{Config, FedAvgClient, FedAvgServer};
use crate::table::{Algorithm, Setup};

/// The global model in the algorithm table.
pub struct Global;

impl Algorithm for Global {
    const STARTS_FROM_MODELS: bool = true;
    type Config = Config;
    type Down = ClusterModel;
    type Up = ModelReply;
    type Server = FedAvgServer;
    type Client = FedAvgClient;

    fn server(config: Checked<Config>, setup: &Setup<'_>) -> Result<FedAvgServer, FieldError> {
        FedAvgServer::for_setup(config, setup, 1, vec![0; setup.num_clients])
    }

    fn client(config: &Checked<Config>) -> FedAvgClient {
        FedAvgClient::from_config(config)
    }
}
