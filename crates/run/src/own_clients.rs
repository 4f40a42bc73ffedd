//! The data a joining process holds: the training data of its own clients and
//! nothing else (no other client, no test client, no ground truth).

use anyhow::Result;

use fedcluster_core::{ClientId, ShardBuf};
use fedcluster_data::table::{Own, check_client_ids};
use fedcluster_data::{ClientData, DataSet};

use crate::config::RunConfig;
use crate::experiment::{data_error, generate, located, validated};

/// The training data of some clients alone (the data-set table's type).
pub type OwnClients = Own;

/// The training data of clients `ids` (each below the data set's client
/// count): an MNIST cluster partition transforms just their images, a data
/// set produced on demand produces just them; any other set is built, then
/// everything else (the other clients, the test clients, the ground truth) is
/// dropped before the rounds start.
pub fn own_clients(config: &RunConfig, ids: &[ClientId]) -> Result<OwnClients> {
    let located = located(&config.data);
    if let Some(own) = located.own_clients(config.seed, ids) {
        return own.map_err(|e| data_error(&located, e));
    }
    let data = generate(config)?;
    let (input, num_clients) = {
        let view = data.view();
        (view.input(), view.train.num_clients())
    };
    check_client_ids(ids, num_clients).map_err(|e| data_error(&config.data, e))?;
    let clients = match data {
        DataSet::Stored(stored) => {
            let mut train: Vec<Option<ClientData>> =
                validated(stored)?.train.into_iter().map(Some).collect();
            ids.iter()
                .map(|&id| {
                    train[id]
                        .take()
                        .ok_or_else(|| anyhow::anyhow!("client {id} is listed twice"))
                })
                .collect::<Result<_>>()?
        }
        produced => {
            let train = produced.view().train;
            let mut buf = ShardBuf::default();
            ids.iter()
                .map(|&id| ClientData::copied(train.batch(id, &mut buf)))
                .collect()
        }
    };
    Ok(OwnClients {
        input,
        num_clients,
        clients,
    })
}
