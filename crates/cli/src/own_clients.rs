//! The data a joining process holds: the training data of its own clients and
//! nothing else (no other client, no test client, no ground truth).

use anyhow::{Context, Result};

use fedcluster_core::{Batch, ClientId, ShardBuf};
use fedcluster_data::{ClientData, DataSet, Task};

use crate::config::{DataConfig, RunConfig};
use crate::experiment::{generate, mnist_dir, validated};

/// The training data of some clients alone.
pub struct OwnClients {
    /// Features per sample.
    pub dim: usize,
    /// What the targets mean.
    pub task: Task,
    /// The data set's training clients (all of them, not only these).
    pub num_clients: usize,
    clients: Vec<ClientData>,
}

impl OwnClients {
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
    if let DataConfig::Mnist(spec) = &config.data {
        // Not through `MnistClustersData`, which would build the test clients.
        let mnist = fedcluster_data::load_mnist(mnist_dir(&spec.data_dir)?)?;
        check_ids(ids, spec.clients)?;
        let clients = fedcluster_data::mnist_cluster_clients(&mnist, spec, config.seed, ids)
            .context("cannot build the data set")?;
        return Ok(OwnClients {
            dim: clients.first().map_or(0, |c| c.x.len() / c.len().max(1)),
            task: Task::Classification {
                classes: fedcluster_data::mnist::MNIST_CLASSES,
            },
            num_clients: spec.clients,
            clients,
        });
    }
    let data = generate(config)?;
    let (dim, task, num_clients) = {
        let view = data.view();
        (view.dim, view.task, view.train.num_clients())
    };
    check_ids(ids, num_clients)?;
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
        num_clients,
        clients,
    })
}

/// Fails on a client id the data set does not have.
fn check_ids(ids: &[ClientId], num_clients: usize) -> Result<()> {
    match ids.iter().find(|&&id| id >= num_clients) {
        Some(id) => anyhow::bail!("client {id}: the run's data set has {num_clients} clients"),
        None => Ok(()),
    }
}
