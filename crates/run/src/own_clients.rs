//! The data a joining process holds: the training data of its own clients and
//! nothing else (no other client, no test client, no ground truth).

use anyhow::Result;

use fedcluster_core::{Batch, ClientId, ImageShape, Input, ShardBuf};
use fedcluster_data::table::check_client_ids;
use fedcluster_data::{ClientData, DataSet, Task};

use crate::config::RunConfig;
use crate::experiment::{data_error, generate, validated};

/// The training data of some clients alone.
pub struct OwnClients {
    /// Features per sample.
    pub dim: usize,
    /// What the targets mean.
    pub task: Task,
    /// The samples' image shape, when they are images.
    pub image: Option<ImageShape>,
    /// The data set's training clients (all of them, not only these).
    pub num_clients: usize,
    clients: Vec<ClientData>,
}

impl OwnClients {
    /// What a model sees of one sample.
    pub fn input(&self) -> Input {
        Input {
            dim: self.dim,
            image: self.image,
            task: self.task,
        }
    }

    /// The `i`-th of the clients asked for.
    pub fn batch(&self, i: usize) -> Batch<'_> {
        self.clients[i].batch(self.dim)
    }

    /// The `i`-th of the clients asked for, taken out (empty after).
    pub fn take(&mut self, i: usize) -> ClientData {
        std::mem::replace(
            &mut self.clients[i],
            ClientData {
                x: Vec::new(),
                y: fedcluster_data::TargetsOwned::Real(Vec::new()),
            },
        )
    }
}

/// The training data of clients `ids` (each below the data set's client
/// count): an MNIST cluster partition transforms just their images, a data
/// set produced on demand produces just them; any other set is built, then
/// everything else (the other clients, the test clients, the ground truth) is
/// dropped before the rounds start.
pub fn own_clients(config: &RunConfig, ids: &[ClientId]) -> Result<OwnClients> {
    if let Some(own) = config.data.own_clients(config.seed, ids) {
        let own = own.map_err(data_error)?;
        return Ok(OwnClients {
            dim: own.dim,
            task: own.task,
            image: own.image,
            num_clients: own.num_clients,
            clients: own.clients,
        });
    }
    let data = generate(config)?;
    let (dim, task, image, num_clients) = {
        let view = data.view();
        (view.dim, view.task, view.image, view.train.num_clients())
    };
    check_client_ids(ids, num_clients).map_err(data_error)?;
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
        dim,
        task,
        image,
        num_clients,
        clients,
    })
}
