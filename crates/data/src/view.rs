//! What a run reads of a data set: its clients through
//! [`fedcluster_core::Shards`] (stored, or produced when a client is asked
//! for) and its ground truth. [`DataSet`] is either kind; [`DataView`] is the
//! common view the engine, the metrics and the model builder take.

use fedcluster_core::kernels::{prefetch, prefetch_item};
use fedcluster_core::{Batch, ClientId, ShardBuf, Shards, Targets};

use crate::dataset::{ClientData, FederatedData, GroundTruth, Task};
use crate::synthetic::on_demand::GeneratedData;

/// Stored clients of one data set: client `i` is `clients[i]`, `dim` features.
#[derive(Clone, Copy, Debug)]
pub struct StoredClients<'a> {
    /// The clients.
    pub clients: &'a [ClientData],
    /// Features per sample.
    pub dim: usize,
}

impl Shards for StoredClients<'_> {
    fn num_clients(&self) -> usize {
        self.clients.len()
    }

    fn samples(&self, client: ClientId) -> usize {
        self.clients[client].len()
    }

    fn batch<'s>(&'s self, client: ClientId, _buf: &'s mut ShardBuf) -> Batch<'s> {
        self.clients[client].batch(self.dim)
    }

    fn prefetch(&self, client: ClientId) {
        if let Some(data) = self.clients.get(client) {
            prefetch(&data.x);
            match data.batch(self.dim).y {
                Targets::Class(y) => prefetch(y),
                Targets::Real(y) => prefetch(y),
            }
        }
    }

    fn prefetch_entry(&self, client: ClientId) {
        if let Some(entry) = self.clients.get(client) {
            prefetch_item(entry);
        }
    }
}

/// A data set as a run sees it.
pub struct DataView<'a> {
    /// Short name for reports.
    pub name: &'a str,
    /// Features per sample.
    pub dim: usize,
    /// What the targets mean.
    pub task: Task,
    /// Training clients.
    pub train: Box<dyn Shards + 'a>,
    /// Held-out test clients.
    pub test: Box<dyn Shards + 'a>,
    /// Ground truth, for metrics only.
    pub truth: &'a GroundTruth,
}

impl FederatedData {
    /// The stored clients as a [`DataView`].
    pub fn view(&self) -> DataView<'_> {
        DataView {
            name: &self.name,
            dim: self.dim,
            task: self.task,
            train: Box::new(StoredClients {
                clients: &self.train,
                dim: self.dim,
            }),
            test: Box::new(StoredClients {
                clients: &self.test,
                dim: self.dim,
            }),
            truth: &self.truth,
        }
    }
}

/// A data set held in memory, or generated client by client when asked.
pub enum DataSet {
    /// Every client's samples in memory.
    Stored(FederatedData),
    /// Clients regenerated from their random streams on demand.
    Generated(GeneratedData),
    /// An MNIST cluster partition, its training clients transformed on demand.
    Mnist(crate::mnist::MnistClustersData),
}

impl DataSet {
    /// The data set as a run sees it.
    pub fn view(&self) -> DataView<'_> {
        match self {
            DataSet::Stored(data) => data.view(),
            DataSet::Generated(data) => data.view(),
            DataSet::Mnist(data) => data.view(),
        }
    }
}
