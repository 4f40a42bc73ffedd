//! What a run reads of a data set: its clients through
//! [`fedcluster_core::Shards`] (stored, or produced when a client is asked
//! for) and its ground truth. [`DataView`] is the common view the engine, the
//! metrics and the model builder take, whatever kind of
//! [`DataSet`](crate::DataSet) it shows.

use fedcluster_core::kernels::{prefetch, prefetch_item};
use fedcluster_core::{Batch, ClientId, ImageShape, Input, ShardBuf, Shards, Targets};

use crate::dataset::{ClientData, FederatedData, GroundTruth, Task};

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
    /// The features' image shape, when the samples are images.
    pub image: Option<ImageShape>,
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
            image: self.image,
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

impl DataView<'_> {
    /// What a model sees of one sample.
    pub fn input(&self) -> Input {
        Input {
            dim: self.dim,
            image: self.image,
            task: self.task,
        }
    }
}
