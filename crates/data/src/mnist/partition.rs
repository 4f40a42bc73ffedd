//! Clustered federated partitions of MNIST: one cluster per image transform.
//!
//! Rotated MNIST (IFCA, Ghosh et al., Section VI-B) is
//! `transforms = [identity, rotate90, rotate180, rotate270]` with
//! `clients · points_per_client = 240,000` (each cluster sees a permutation of
//! all 60,000 training images) and `test_clients · points_per_client = 40,000`;
//! inverted MNIST is `[identity, invert]`, and the SR-FCA setting is
//! `clients = 100, points_per_client = 600`.
//!
//! As in the IFCA code: for cluster `j` an independent random permutation of
//! the training images, from `stream(seed, Partition, j, 0)`, is cut into
//! `clients / k` consecutive chunks of `points_per_client` images; the test
//! images, in file order, are cut into `test_clients / k` chunks of
//! `points_per_client` images for every cluster. Every image of cluster `j` is
//! downsampled (if asked) and then transformed by `transforms[j]`. Clients of a
//! cluster are contiguous: training client `i` is in cluster
//! `i / (clients / k)`, test client `i` in cluster `i / (test_clients / k)`.
//!
//! With `disjoint = true` (the SR-FCA paper: "the data is split into disjoint
//! sets") one permutation, from `stream(seed, Partition, 0, 0)`, is cut into
//! `clients` chunks and training client `i` holds the `i`-th: no image is held
//! twice, so `clients · points_per_client <= 60,000`.

use std::path::PathBuf;

use fedcluster_core::{ImageShape, Purpose, stream};
use rand::seq::SliceRandom;
use serde::{Deserialize, Serialize};

use super::{MNIST_TEST_IMAGES, MNIST_TRAIN_IMAGES};
use crate::dataset::{ClientData, FederatedData, GroundTruth, TargetsOwned, Task};
use crate::error::{DataError, Result};
use crate::images::{ImageSet, Transform, downsample2x2, downsampled};

#[cfg(test)]
mod tests;

/// Specification of a clustered MNIST partition: `clients` (m) training
/// clients and `test_clients` test clients, both split equally among the
/// `k = transforms.len()` clusters, each holding `points_per_client` (n)
/// images.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct MnistClustersSpec {
    /// One cluster per transform, in order: `[identity, rotate90, rotate180,
    /// rotate270]` (rotated MNIST), `[identity, invert]` (inverted MNIST), ...
    pub transforms: Vec<Transform>,
    /// Number of training clients `m`; a multiple of the number of transforms.
    pub clients: usize,
    /// Images per client `n`, training and test clients alike.
    pub points_per_client: usize,
    /// Number of test clients; a multiple of the number of transforms (0 for
    /// none).
    pub test_clients: usize,
    /// Whether to average 2x2 blocks first (28x28 becomes 14x14).
    #[serde(default)]
    pub downsample: bool,
    /// Whether the clients' training images are disjoint across clusters
    /// (one permutation for all) instead of a permutation per cluster.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub disjoint: bool,
    /// Directory of the four MNIST files; read by the caller, which passes the
    /// loaded [`Mnist`] to [`mnist_clusters`].
    #[serde(default)]
    pub data_dir: Option<PathBuf>,
}

impl MnistClustersSpec {
    /// The shape of every client's images, for images of `input`.
    pub fn image_shape(&self, input: ImageShape) -> ImageShape {
        if self.downsample {
            downsampled(input)
        } else {
            input
        }
    }

    /// Checks every field against the canonical MNIST (60,000 training and
    /// 10,000 test images); the error names the first bad one.
    pub fn validate(&self) -> Result<()> {
        self.check_sizes(MNIST_TRAIN_IMAGES, MNIST_TEST_IMAGES)
    }

    fn check_sizes(&self, train_images: usize, test_images: usize) -> Result<()> {
        let k = self.transforms.len();
        if k == 0 {
            return Err(DataError::invalid(
                "transforms",
                "empty: one cluster per transform needs at least one",
            ));
        }
        if self.clients == 0 {
            return Err(DataError::invalid("clients", "must be at least 1"));
        }
        if self.points_per_client == 0 {
            return Err(DataError::invalid(
                "points_per_client",
                "must be at least 1",
            ));
        }
        for (field, count) in [
            ("clients", self.clients),
            ("test_clients", self.test_clients),
        ] {
            if !count.is_multiple_of(k) {
                return Err(DataError::invalid(
                    field,
                    format!(
                        "{count} is not a multiple of the {k} transforms, so the clusters \
                         cannot have the same number of clients"
                    ),
                ));
            }
        }
        let n = self.points_per_client;
        if self.disjoint
            && self
                .clients
                .checked_mul(n)
                .is_none_or(|need| need > train_images)
        {
            return Err(DataError::invalid(
                "clients",
                format!(
                    "{} disjoint clients of points_per_client = {n} images need more than the \
                     {train_images} training images",
                    self.clients
                ),
            ));
        }
        for (field, count, available, split) in [
            ("clients", self.clients, train_images, "training"),
            ("test_clients", self.test_clients, test_images, "test"),
        ] {
            let per_cluster = count / k;
            if per_cluster
                .checked_mul(n)
                .is_none_or(|need| need > available)
            {
                return Err(DataError::invalid(
                    field,
                    format!(
                        "{per_cluster} clients per cluster of points_per_client = {n} images \
                         need more than the {available} {split} images"
                    ),
                ));
            }
        }
        Ok(())
    }

    /// Which permutation cluster `j` cuts its clients from, and where its
    /// `share` images start in it: its own from 0, or (disjoint) the first
    /// from `j · share`.
    fn order_of(&self, j: usize, share: usize) -> (usize, usize) {
        if self.disjoint {
            (0, j * share)
        } else {
            (j, 0)
        }
    }

    /// Name of the data set: `mnist-` and the transforms, e.g.
    /// `mnist-identity-invert`, with `-14x14` appended when downsampled.
    pub fn name(&self) -> String {
        dataset_name("mnist", &self.transforms, self.downsample)
    }
}

/// `prefix`, then `-` and each transform's name, then `-14x14` when downsampled.
pub(super) fn dataset_name(prefix: &str, transforms: &[Transform], downsample: bool) -> String {
    let mut name = String::from(prefix);
    for t in transforms {
        name.push('-');
        name.push_str(t.name());
    }
    if downsample {
        name.push_str("-14x14");
    }
    name
}

/// Builds the clustered partition of `mnist` described by `spec` (see the
/// module documentation); deterministic given `seed`.
///
/// Besides [`MnistClustersSpec::validate`] against the sizes of `mnist`, fails
/// if `mnist` is inconsistent (image values not matching the labels, a label
/// above 9), if a rotation is asked of non-square images, or if downsampling
/// would leave no pixel. `truth.params` is `None`.
pub fn mnist_clusters(
    mnist: &ImageSet,
    spec: &MnistClustersSpec,
    seed: u64,
) -> Result<FederatedData> {
    let parts = Parts::new(mnist, spec, seed)?;
    let n = spec.points_per_client;
    let mut scratch = vec![0.0; parts.shape.scratch_len()];
    let images = (mnist.train_images.as_slice(), mnist.train_labels.as_slice());
    let train = (0..spec.clients)
        .map(|i| {
            let (j, chunk) = parts.client(i, n);
            let indices = chunk.iter().map(|&v| v as usize);
            parts
                .shape
                .client(images, indices, spec.transforms[j], &mut scratch)
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(FederatedData {
        name: spec.name(),
        dim: parts.shape.dim(),
        task: Task::Classification {
            classes: mnist.classes,
        },
        image: Some(parts.shape.image()),
        train,
        test: parts.test,
        truth: parts.truth,
    })
}

/// What a clustered partition is made of besides its training clients'
/// pixels: which images each client holds, the test clients (stored) and the
/// ground truth. Shared by [`mnist_clusters`] (every client stored) and
/// [`super::clients::MnistClustersData`] (clients produced when asked for).
pub(super) struct Parts {
    pub(super) shape: Shape,
    /// Per cluster, its clients' training image indices back to back.
    pub(super) orders: Vec<Vec<u32>>,
    /// Clients per cluster.
    pub(super) per_cluster: usize,
    pub(super) test: Vec<ClientData>,
    pub(super) truth: GroundTruth,
}

impl Parts {
    /// Validates `spec` against `mnist` and draws the partition.
    pub(super) fn new(mnist: &ImageSet, spec: &MnistClustersSpec, seed: u64) -> Result<Self> {
        check_mnist(mnist)?;
        spec.check_sizes(mnist.train_len(), mnist.test_len())?;
        let shape = Shape::new(mnist, spec.downsample, &spec.transforms)?;
        let k = spec.transforms.len();
        let n = spec.points_per_client;
        let (per_cluster, test_per_cluster) = (spec.clients / k, spec.test_clients / k);
        let mut scratch = vec![0.0; shape.scratch_len()];
        let mut order: Vec<usize> = (0..mnist.train_len()).collect();
        let mut orders = Vec::with_capacity(k);
        let mut test = Vec::with_capacity(spec.test_clients);
        let share = per_cluster * n;
        for (j, t) in spec.transforms.iter().enumerate() {
            let (draw, from) = spec.order_of(j, share);
            if j == 0 || !spec.disjoint {
                cluster_order(&mut order, seed, draw);
            }
            orders.push(
                order[from..from + share]
                    .iter()
                    .map(|&v| v as u32)
                    .collect(),
            );
            for c in 0..test_per_cluster {
                let images = (mnist.test_images.as_slice(), mnist.test_labels.as_slice());
                test.push(shape.client(images, c * n..(c + 1) * n, *t, &mut scratch)?);
            }
        }
        let truth = GroundTruth {
            clusters: k,
            train_labels: (0..spec.clients).map(|i| i / per_cluster).collect(),
            test_labels: (0..spec.test_clients)
                .map(|i| i / test_per_cluster)
                .collect(),
            params: None,
        };
        Ok(Self {
            shape,
            orders,
            per_cluster,
            test,
            truth,
        })
    }

    /// Training client `i`'s cluster and image indices (`n` per client).
    pub(super) fn client(&self, i: usize, n: usize) -> (usize, &[u32]) {
        let (j, c) = (i / self.per_cluster, i % self.per_cluster);
        (j, &self.orders[j][c * n..(c + 1) * n])
    }
}

/// The training images of cluster `j`'s clients, in order: client `c` of
/// the cluster holds the `c`-th chunk of `points_per_client` of `order`.
fn cluster_order(order: &mut [usize], seed: u64, j: usize) {
    for (p, v) in order.iter_mut().enumerate() {
        *v = p;
    }
    order.shuffle(&mut stream(seed, Purpose::Partition, j as u64, 0));
}

/// The training data of clients `ids` of [`mnist_clusters`]'s partition
/// alone, each exactly as [`mnist_clusters`] builds it (a joining process
/// holds these and nothing else: no other client, no test client, no truth).
pub fn mnist_cluster_clients(
    mnist: &ImageSet,
    spec: &MnistClustersSpec,
    seed: u64,
    ids: &[usize],
) -> Result<Vec<ClientData>> {
    check_mnist(mnist)?;
    spec.check_sizes(mnist.train_len(), mnist.test_len())?;
    let shape = Shape::new(mnist, spec.downsample, &spec.transforms)?;
    let (n, per_cluster) = (spec.points_per_client, spec.clients / spec.transforms.len());
    let mut scratch = vec![0.0; shape.scratch_len()];
    let mut order: Vec<usize> = (0..mnist.train_len()).collect();
    let images = (mnist.train_images.as_slice(), mnist.train_labels.as_slice());
    // The permutation drawn last: consecutive ids of one cluster (or every id,
    // disjoint) share it.
    let mut drawn = None;
    ids.iter()
        .map(|&id| {
            if id >= spec.clients {
                return Err(DataError::invalid(
                    "clients",
                    format!("client {id} of a partition into {} clients", spec.clients),
                ));
            }
            let (j, c) = (id / per_cluster, id % per_cluster);
            let (draw, from) = spec.order_of(j, per_cluster * n);
            if drawn != Some(draw) {
                cluster_order(&mut order, seed, draw);
                drawn = Some(draw);
            }
            let chunk = order[from + c * n..from + (c + 1) * n].iter().copied();
            shape.client(images, chunk, spec.transforms[j], &mut scratch)
        })
        .collect()
}

/// Checks that the public fields of `mnist` fit together.
pub(super) fn check_mnist(mnist: &ImageSet) -> Result<()> {
    mnist.check("mnist")
}

/// Image shapes before and after the optional downsampling.
pub(crate) struct Shape {
    input: ImageShape,
    downsample: bool,
}

impl Shape {
    pub(super) fn new(set: &ImageSet, downsample: bool, transforms: &[Transform]) -> Result<Self> {
        let shape = Self {
            input: set.shape,
            downsample,
        };
        let out = shape.image();
        let (rows, cols) = (out.height, out.width);
        if rows * cols * out.channels == 0 {
            let field = if downsample {
                "downsample"
            } else {
                "mnist.rows"
            };
            return Err(DataError::invalid(
                field,
                format!(
                    "images of {}x{} are too small",
                    set.shape.height, set.shape.width
                ),
            ));
        }
        if rows != cols
            && let Some(j) = transforms.iter().position(|t| t.is_rotation())
        {
            return Err(DataError::invalid(
                format!("transforms[{j}]"),
                format!("rotations need square images, these are {rows}x{cols}"),
            ));
        }
        Ok(shape)
    }

    /// The shape of the images that are transformed (and, rotations being of
    /// square images only, of every client's samples).
    pub(super) fn image(&self) -> ImageShape {
        if self.downsample {
            downsampled(self.input)
        } else {
            self.input
        }
    }

    /// Features per sample.
    pub(super) fn dim(&self) -> usize {
        let out = self.image();
        out.height * out.width * out.channels
    }

    pub(super) fn scratch_len(&self) -> usize {
        if self.downsample { self.dim() } else { 0 }
    }

    /// A client holding the images at `indices`, downsampled if asked, then
    /// transformed by `t`, written straight into its feature vector.
    pub(super) fn client(
        &self,
        images: (&[f32], &[u32]),
        indices: impl ExactSizeIterator<Item = usize>,
        t: Transform,
        scratch: &mut [f32],
    ) -> Result<ClientData> {
        let mut x = vec![0.0; indices.len() * self.dim()];
        let mut y = vec![0; indices.len()];
        self.fill(images, indices, t, scratch, &mut x, &mut y)?;
        Ok(ClientData {
            x,
            y: TargetsOwned::Class(y),
        })
    }

    /// [`Shape::client`] into caller-owned `x` (`indices.len() * dim`) and
    /// `y` (`indices.len()`).
    pub(super) fn fill(
        &self,
        (images, labels): (&[f32], &[u32]),
        indices: impl ExactSizeIterator<Item = usize>,
        t: Transform,
        scratch: &mut [f32],
        x: &mut [f32],
        y: &mut [u32],
    ) -> Result<()> {
        let input = self.input;
        let (len, dim, out) = (
            input.height * input.width * input.channels,
            self.dim(),
            self.image(),
        );
        for ((slot, label), i) in x.chunks_exact_mut(dim).zip(y.iter_mut()).zip(indices) {
            let src = &images[i * len..(i + 1) * len];
            if self.downsample {
                downsample2x2(input, src, scratch)?;
                t.apply(out, scratch, slot)?;
            } else {
                t.apply(out, src, slot)?;
            }
            *label = labels[i];
        }
        Ok(())
    }
}
