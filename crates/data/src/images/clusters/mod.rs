//! Clustered federated partitions of any labelled image set: one cluster per
//! image transform, optionally with its own labelling (concept shift) and a
//! label-skew or quantity-skew deal of its images to its clients.
//!
//! Rotated MNIST (IFCA, Ghosh et al., Section VI-B) is
//! `transforms = [identity, rotate90, rotate180, rotate270]` with
//! `clients · points_per_client = 240,000` (each cluster sees a permutation of
//! all 60,000 training images) and `test_clients · points_per_client = 40,000`;
//! rotated CIFAR-10 (IFCA, Table I) is `[identity, rotate180]` with 200 clients
//! of 500 images; inverted MNIST is `[identity, invert]`, and the SR-FCA
//! setting is `clients = 100, points_per_client = 600, disjoint = true`.
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
//! twice, so `clients · points_per_client` is at most the training set.
//!
//! With `permute_labels = true` (concept shift) cluster `j > 0` relabels every
//! image, training and test, by its own permutation of the classes, drawn from
//! `stream(seed, Partition, j, 1)`; cluster 0 keeps the true labels.
//!
//! With a `skew` ([`LabelSkew`], see [`skew`]) a cluster's images are dealt to
//! its clients by label or quantity skew instead of in equal chunks, from
//! `stream(seed, Partition, j, 2)`; the test clients stay as above.
//!
//! - [`layout`]: which training images each client holds.
//! - [`skew`]: the label-skew and quantity-skew deals.
//! - [`shape`]: the images' shapes and a client's samples written from them.
//! - [`view`]: [`ImageClustersData`], the partition with its training clients
//!   produced when asked for (the images held once).

use std::path::PathBuf;

use fedcluster_core::ImageShape;
use serde::{Deserialize, Serialize};

use crate::dataset::{FederatedData, Task};
use crate::error::{DataError, Result};
use crate::images::{ImageSet, Transform, downsampled};

pub mod layout;
pub mod shape;
pub mod skew;
pub mod view;

#[cfg(test)]
mod tests;

pub use layout::image_cluster_clients;
pub use skew::LabelSkew;
pub use view::ImageClustersData;

use layout::Parts;

/// Specification of a clustered image partition: `clients` (m) training
/// clients and `test_clients` test clients, both split equally among the
/// `k = transforms.len()` clusters, each holding `points_per_client` (n)
/// images (on average, under a quantity or Dirichlet skew).
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ImageClustersSpec {
    /// One cluster per transform, in order: `[identity, rotate90, rotate180,
    /// rotate270]` (rotated MNIST), `[identity, invert]` (inverted MNIST),
    /// `[identity, { rotate = 45 }]`, ...
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
    /// Whether each cluster but the first relabels its images by its own
    /// permutation of the classes (concept shift).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub permute_labels: bool,
    /// How a cluster's training images are dealt to its clients (none:
    /// equal chunks of its permutation).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skew: Option<LabelSkew>,
    /// Directory of the image files; read by the data kind, which passes the
    /// loaded [`ImageSet`] to [`image_clusters`].
    #[serde(default)]
    pub data_dir: Option<PathBuf>,
}

impl ImageClustersSpec {
    /// The shape of every client's images, for images of `input`.
    pub fn image_shape(&self, input: ImageShape) -> ImageShape {
        if self.downsample {
            downsampled(input)
        } else {
            input
        }
    }

    /// Checks every field against an image set of `train_images` training and
    /// `test_images` test images; the error names the first bad one.
    pub fn check_sizes(&self, train_images: usize, test_images: usize) -> Result<()> {
        let k = self.transforms.len();
        if k == 0 {
            return Err(DataError::invalid(
                "transforms",
                "empty: one cluster per transform needs at least one",
            ));
        }
        if let Some(j) = self.transforms.iter().position(|t| !t.is_valid()) {
            return Err(DataError::invalid(
                format!("transforms[{j}]"),
                "a rotation's angle must be a finite number of degrees",
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
        if let Some(skew) = &self.skew {
            skew.check(n)?;
        }
        Ok(())
    }

    /// Which permutation cluster `j` cuts its clients from, and where its
    /// `share` images start in it: its own from 0, or (disjoint) the first
    /// from `j · share`.
    pub(crate) fn order_of(&self, j: usize, share: usize) -> (usize, usize) {
        if self.disjoint {
            (0, j * share)
        } else {
            (j, 0)
        }
    }

    /// Name of the data set: `prefix` and the transforms, e.g.
    /// `mnist-identity-invert`, with `-14x14` appended when downsampled,
    /// `-permuted-labels` under concept shift and the skew's name.
    pub fn name(&self, prefix: &str) -> String {
        let mut name = dataset_name(prefix, &self.transforms, self.downsample);
        if self.permute_labels {
            name.push_str("-permuted-labels");
        }
        if let Some(skew) = &self.skew {
            name.push('-');
            name.push_str(&skew.name());
        }
        name
    }
}

/// `prefix`, then `-` and each transform's name, then `-14x14` when downsampled.
pub(crate) fn dataset_name(prefix: &str, transforms: &[Transform], downsample: bool) -> String {
    let mut name = String::from(prefix);
    for t in transforms {
        name.push('-');
        name.push_str(&t.name());
    }
    if downsample {
        name.push_str("-14x14");
    }
    name
}

/// Builds the clustered partition of `images` described by `spec` (see the
/// module documentation), every client stored, named `prefix-...`;
/// deterministic given `seed`.
///
/// Besides [`ImageClustersSpec::check_sizes`] against the sizes of `images`,
/// fails if `images` is inconsistent (image values not matching the labels, a
/// label not below its classes), if a quarter turn is asked of non-square
/// images, or if downsampling would leave no pixel. `truth.params` is `None`.
pub fn image_clusters(
    images: &ImageSet,
    spec: &ImageClustersSpec,
    seed: u64,
    prefix: &str,
) -> Result<FederatedData> {
    let parts = Parts::new(images, spec, seed)?;
    let mut scratch = vec![0.0; parts.shape.scratch_len()];
    let train = (0..spec.clients)
        .map(|i| parts.train_client(images, spec, i, &mut scratch))
        .collect::<Result<Vec<_>>>()?;
    Ok(FederatedData {
        name: spec.name(prefix),
        dim: parts.shape.dim(),
        task: Task::Classification {
            classes: images.classes,
        },
        image: Some(parts.shape.image()),
        train,
        test: parts.test,
        truth: parts.truth,
    })
}
