//! An MNIST cluster partition whose training clients are views: each is a
//! cluster (its transform) and indices into the one training image array,
//! its images transformed when the client is asked for, into the caller's
//! buffer. The images are held once, not once per transform; the same
//! pixels as [`super::mnist_clusters`] (tested).

use fedcluster_core::{Batch, ClientId, ShardBuf, Shards};

use super::partition::{MnistClustersSpec, Parts};
use crate::dataset::{ClientData, FederatedData, GroundTruth, Task};
use crate::error::Result;
use crate::images::ImageSet;
use crate::view::{DataView, StoredClients};

/// [`super::mnist_clusters`]'s data set, its training clients produced on
/// demand.
pub struct MnistClustersData {
    name: String,
    mnist: ImageSet,
    spec: MnistClustersSpec,
    parts: Parts,
}

impl MnistClustersData {
    /// The partition of `mnist` that `spec` and `seed` describe (validated as
    /// [`super::mnist_clusters`] validates it).
    pub fn new(mnist: ImageSet, spec: &MnistClustersSpec, seed: u64) -> Result<Self> {
        let parts = Parts::new(&mnist, spec, seed)?;
        Ok(Self {
            name: spec.name(),
            mnist,
            spec: spec.clone(),
            parts,
        })
    }

    /// The data set as a run sees it.
    pub fn view(&self) -> DataView<'_> {
        let dim = self.parts.shape.dim();
        DataView {
            name: &self.name,
            dim,
            task: Task::Classification {
                classes: self.mnist.classes,
            },
            image: Some(self.parts.shape.image()),
            train: Box::new(TrainClients(self)),
            test: Box::new(StoredClients {
                clients: &self.parts.test,
                dim,
            }),
            truth: &self.parts.truth,
        }
    }

    /// The same partition under another name (for reports).
    pub fn with_name(mut self, name: String) -> Self {
        self.name = name;
        self
    }

    /// The ground truth.
    pub fn truth(&self) -> &GroundTruth {
        &self.parts.truth
    }

    /// Every client stored: [`super::mnist_clusters`]'s result.
    pub fn materialize(self) -> FederatedData {
        let mut buf = ShardBuf::default();
        let clients = TrainClients(&self);
        let train = (0..self.spec.clients)
            .map(|i| ClientData::copied(clients.batch(i, &mut buf)))
            .collect();
        FederatedData {
            name: self.name,
            dim: self.parts.shape.dim(),
            task: Task::Classification {
                classes: self.mnist.classes,
            },
            image: Some(self.parts.shape.image()),
            train,
            test: self.parts.test,
            truth: self.parts.truth,
        }
    }
}

/// The training clients of a [`MnistClustersData`].
struct TrainClients<'a>(&'a MnistClustersData);

impl Shards for TrainClients<'_> {
    fn num_clients(&self) -> usize {
        self.0.spec.clients
    }

    fn samples(&self, _client: ClientId) -> usize {
        self.0.spec.points_per_client
    }

    fn batch<'s>(&'s self, client: ClientId, buf: &'s mut ShardBuf) -> Batch<'s> {
        let d = self.0;
        let (shape, n) = (&d.parts.shape, d.spec.points_per_client);
        let (j, indices) = d.parts.client(client, n);
        let images = (
            d.mnist.train_images.as_slice(),
            d.mnist.train_labels.as_slice(),
        );
        let (x, y, scratch) = buf.class_parts(n, shape.dim(), shape.scratch_len());
        let indices = indices.iter().map(|&v| v as usize);
        // The shapes and transforms were checked when the partition was
        // drawn, so filling cannot fail here.
        let filled = shape.fill(images, indices, d.spec.transforms[j], scratch, x, y);
        debug_assert!(filled.is_ok(), "{filled:?}");
        buf.class_batch(shape.dim())
    }
}
