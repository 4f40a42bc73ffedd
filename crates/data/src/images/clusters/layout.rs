//! Which training images each client of a clustered partition holds, each
//! cluster's labelling, and the parts built once per partition (test clients,
//! ground truth). Shared by [`super::image_clusters`] (every client stored),
//! [`super::ImageClustersData`] (clients produced when asked for) and
//! [`image_cluster_clients`] (some clients alone).

use fedcluster_core::{Purpose, stream};
use rand::seq::SliceRandom;

use super::ImageClustersSpec;
use super::shape::{Look, Shape};
use super::skew::deal;
use crate::dataset::{ClientData, GroundTruth};
use crate::error::{DataError, Result};
use crate::images::ImageSet;

/// The training images of every client and each cluster's labelling.
pub(crate) struct Layout {
    /// Clients per cluster.
    per_cluster: usize,
    /// Every training client's image indices, back to back.
    indices: Vec<u32>,
    /// Client `i` holds `indices[offsets[i]..offsets[i + 1]]`.
    offsets: Vec<usize>,
    /// Per cluster, its labelling under concept shift (`None`: the true one).
    labels: Vec<Option<Vec<u32>>>,
}

impl Layout {
    /// Draws the layout of `spec` over `set` (whose sizes `spec` was checked
    /// against).
    pub(crate) fn new(set: &ImageSet, spec: &ImageClustersSpec, seed: u64) -> Result<Self> {
        let k = spec.transforms.len();
        let n = spec.points_per_client;
        let per_cluster = spec.clients / k;
        let share = per_cluster * n;
        let mut order: Vec<usize> = (0..set.train_len()).collect();
        let mut indices = Vec::with_capacity(spec.clients * n);
        let mut offsets = Vec::with_capacity(spec.clients + 1);
        offsets.push(0);
        for j in 0..k {
            let (draw, from) = spec.order_of(j, share);
            if j == 0 || !spec.disjoint {
                cluster_order(&mut order, seed, draw);
            }
            match &spec.skew {
                None => {
                    for chunk in order[from..from + share].chunks_exact(n) {
                        indices.extend(chunk.iter().map(|&v| v as u32));
                        offsets.push(indices.len());
                    }
                }
                Some(skew) => {
                    // A Dirichlet deal draws from every image the cluster
                    // may hold (all of them, unless disjoint); the others deal
                    // its share exactly.
                    let pool = match (skew.draws_from_classes(), spec.disjoint) {
                        (true, false) => &order[..],
                        _ => &order[from..from + share],
                    };
                    let mut rng = stream(seed, Purpose::Partition, j as u64, 2);
                    let dealt = deal(
                        skew,
                        pool,
                        &set.train_labels,
                        set.classes,
                        per_cluster,
                        n,
                        &mut rng,
                    )
                    .map_err(|why| DataError::invalid("skew", format!("cluster {j}: {why}")))?;
                    for client in dealt {
                        indices.extend(client.iter().map(|&v| v as u32));
                        offsets.push(indices.len());
                    }
                }
            }
        }
        let labels = (0..k)
            .map(|j| (spec.permute_labels && j > 0).then(|| labelling(set.classes, seed, j)))
            .collect();
        Ok(Self {
            per_cluster,
            indices,
            offsets,
            labels,
        })
    }

    /// Training client `i`'s cluster and image indices.
    pub(crate) fn client(&self, i: usize) -> (usize, &[u32]) {
        (
            i / self.per_cluster,
            &self.indices[self.offsets[i]..self.offsets[i + 1]],
        )
    }

    /// Cluster `j`'s labelling (`None`: the true labels).
    pub(crate) fn labels(&self, j: usize) -> Option<&[u32]> {
        self.labels[j].as_deref()
    }
}

/// What a partition is made of besides its training clients' pixels: which
/// images each client holds, the test clients (stored) and the ground truth.
pub(crate) struct Parts {
    pub(crate) shape: Shape,
    pub(crate) layout: Layout,
    pub(crate) test: Vec<ClientData>,
    pub(crate) truth: GroundTruth,
}

impl Parts {
    /// Validates `spec` against `set` and draws the partition.
    pub(crate) fn new(set: &ImageSet, spec: &ImageClustersSpec, seed: u64) -> Result<Self> {
        let (shape, layout) = checked_layout(set, spec, seed)?;
        let k = spec.transforms.len();
        let n = spec.points_per_client;
        let (per_cluster, test_per_cluster) = (spec.clients / k, spec.test_clients / k);
        let mut scratch = vec![0.0; shape.scratch_len()];
        let mut test = Vec::with_capacity(spec.test_clients);
        let images = (set.test_images.as_slice(), set.test_labels.as_slice());
        for (j, t) in spec.transforms.iter().enumerate() {
            let look = Look {
                transform: *t,
                labels: layout.labels(j),
            };
            for c in 0..test_per_cluster {
                test.push(shape.client(images, c * n..(c + 1) * n, look, &mut scratch)?);
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
            layout,
            test,
            truth,
        })
    }

    /// Training client `i`, stored.
    pub(crate) fn train_client(
        &self,
        set: &ImageSet,
        spec: &ImageClustersSpec,
        i: usize,
        scratch: &mut [f32],
    ) -> Result<ClientData> {
        train_client(&self.shape, &self.layout, set, spec, i, scratch)
    }
}

/// How cluster `j` presents its images.
pub(crate) fn look<'a>(layout: &'a Layout, spec: &ImageClustersSpec, j: usize) -> Look<'a> {
    Look {
        transform: spec.transforms[j],
        labels: layout.labels(j),
    }
}

fn train_client(
    shape: &Shape,
    layout: &Layout,
    set: &ImageSet,
    spec: &ImageClustersSpec,
    i: usize,
    scratch: &mut [f32],
) -> Result<ClientData> {
    let (j, chunk) = layout.client(i);
    let images = (set.train_images.as_slice(), set.train_labels.as_slice());
    let indices = chunk.iter().map(|&v| v as usize);
    shape.client(images, indices, look(layout, spec, j), scratch)
}

/// `set` and `spec` checked against each other, and the layout drawn.
fn checked_layout(set: &ImageSet, spec: &ImageClustersSpec, seed: u64) -> Result<(Shape, Layout)> {
    set.check("images")?;
    spec.check_sizes(set.train_len(), set.test_len())?;
    let shape = Shape::new(set, spec.downsample, &spec.transforms)?;
    let layout = Layout::new(set, spec, seed)?;
    Ok((shape, layout))
}

/// The training images of cluster `j`'s clients, in order: client `c` of
/// the cluster holds the `c`-th chunk of `points_per_client` of `order`.
fn cluster_order(order: &mut [usize], seed: u64, j: usize) {
    for (p, v) in order.iter_mut().enumerate() {
        *v = p;
    }
    order.shuffle(&mut stream(seed, Purpose::Partition, j as u64, 0));
}

/// Cluster `j`'s permutation of the `classes` labels.
fn labelling(classes: usize, seed: u64, j: usize) -> Vec<u32> {
    let mut labels: Vec<u32> = (0..classes as u32).collect();
    labels.shuffle(&mut stream(seed, Purpose::Partition, j as u64, 1));
    labels
}

/// The training data of clients `ids` of [`super::image_clusters`]'s
/// partition alone, each exactly as [`super::image_clusters`] builds it (a
/// joining process holds these and nothing else: no other client, no test
/// client, no truth).
pub fn image_cluster_clients(
    set: &ImageSet,
    spec: &ImageClustersSpec,
    seed: u64,
    ids: &[usize],
) -> Result<Vec<ClientData>> {
    let (shape, layout) = checked_layout(set, spec, seed)?;
    let mut scratch = vec![0.0; shape.scratch_len()];
    ids.iter()
        .map(|&id| {
            if id >= spec.clients {
                return Err(DataError::invalid(
                    "clients",
                    format!("client {id} of a partition into {} clients", spec.clients),
                ));
            }
            train_client(&shape, &layout, set, spec, id, &mut scratch)
        })
        .collect()
}
