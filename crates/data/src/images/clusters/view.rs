//! A clustered image partition whose training clients are views: each is a
//! cluster (its transform and labelling) and indices into the one training
//! image array, its images transformed when the client is asked for, into
//! the caller's buffer. The images are held once, not once per transform; the
//! same samples as [`super::image_clusters`] (tested).

use fedcluster_core::{Batch, ClientId, ShardBuf, Shards};

use super::ImageClustersSpec;
use super::layout::{Parts, look};
use crate::dataset::{ClientData, FederatedData, GroundTruth, Task};
use crate::error::Result;
use crate::images::ImageSet;
use crate::view::{DataView, StoredClients};

/// [`super::image_clusters`]'s data set, its training clients produced on
/// demand.
pub struct ImageClustersData {
    name: String,
    images: ImageSet,
    spec: ImageClustersSpec,
    parts: Parts,
}

impl ImageClustersData {
    /// The partition of `images` that `spec` and `seed` describe, named
    /// `prefix-...` (validated as [`super::image_clusters`] validates it).
    pub fn new(
        images: ImageSet,
        spec: &ImageClustersSpec,
        seed: u64,
        prefix: &str,
    ) -> Result<Self> {
        let parts = Parts::new(&images, spec, seed)?;
        Ok(Self {
            name: spec.name(prefix),
            images,
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
                classes: self.images.classes,
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

    /// The ground truth.
    pub fn truth(&self) -> &GroundTruth {
        &self.parts.truth
    }

    /// Every client stored: [`super::image_clusters`]'s result.
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
                classes: self.images.classes,
            },
            image: Some(self.parts.shape.image()),
            train,
            test: self.parts.test,
            truth: self.parts.truth,
        }
    }
}

/// The training clients of an [`ImageClustersData`].
struct TrainClients<'a>(&'a ImageClustersData);

impl Shards for TrainClients<'_> {
    fn num_clients(&self) -> usize {
        self.0.spec.clients
    }

    fn samples(&self, client: ClientId) -> usize {
        self.0.parts.layout.client(client).1.len()
    }

    fn batch<'s>(&'s self, client: ClientId, buf: &'s mut ShardBuf) -> Batch<'s> {
        let d = self.0;
        let shape = &d.parts.shape;
        let (j, indices) = d.parts.layout.client(client);
        let images = (
            d.images.train_images.as_slice(),
            d.images.train_labels.as_slice(),
        );
        let (x, y, scratch) = buf.class_parts(indices.len(), shape.dim(), shape.scratch_len());
        let indices = indices.iter().map(|&v| v as usize);
        // The shapes and transforms were checked when the partition was
        // drawn, so filling cannot fail here.
        let filled = shape.fill(
            images,
            indices,
            look(&d.parts.layout, &d.spec, j),
            scratch,
            x,
            y,
        );
        debug_assert!(filled.is_ok(), "{filled:?}");
        buf.class_batch(shape.dim())
    }
}
