//! The MNIST setting of Su, Xu, Yang 2024 (Section V-D): one anchor client per
//! cluster holding `anchor_points` images and very many clients holding
//! `points_per_client` (2) images each; one cluster per image transform.
//!
//! One random permutation of the training images, from
//! `stream(seed, Partition, 0, 1)`, is handed out without reuse: the first
//! `k · anchor_points` images to the anchors (clients `0..k`, anchor `j` in
//! cluster `j`), the rest in chunks of `points_per_client` to clients
//! `k..k + clients`, whose clusters are a shuffled balanced assignment (client
//! `k + i` gets cluster `π(i) mod k` for a permutation `π` from
//! `stream(seed, Partition, 0, 2)`). Every image is downsampled (if asked) and
//! transformed by its cluster's transform. The test set is copied once per
//! cluster: test client `j` holds all test images under transform `j`.

use std::path::PathBuf;

use fedcluster_core::{Purpose, stream};
use rand::seq::SliceRandom;
use serde::{Deserialize, Serialize};

use super::MNIST_TRAIN_IMAGES;
use crate::dataset::{FederatedData, GroundTruth, Task};
use crate::error::{DataError, Result};
use crate::images::clusters::dataset_name;
use crate::images::clusters::shape::{Look, Shape};
use crate::images::{ImageSet, Transform};

/// Specification of the anchored MNIST partition.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct MnistAnchoredSpec {
    /// One cluster per transform, e.g. `[identity, rotate90]`.
    pub transforms: Vec<Transform>,
    /// Images of each anchor client (the paper's `n_H = 20`).
    pub anchor_points: usize,
    /// Clients besides the anchors (the paper's 25,000).
    pub clients: usize,
    /// Images per non-anchor client (the paper's 2).
    pub points_per_client: usize,
    /// Whether to average 2x2 blocks first (28x28 becomes 14x14).
    #[serde(default)]
    pub downsample: bool,
    /// Directory of the four MNIST files (read by the caller).
    #[serde(default)]
    pub data_dir: Option<PathBuf>,
}

impl MnistAnchoredSpec {
    /// Checks every field against the canonical 60,000 training images.
    pub fn validate(&self) -> Result<()> {
        self.check_sizes(MNIST_TRAIN_IMAGES)
    }

    fn check_sizes(&self, train_images: usize) -> Result<()> {
        let k = self.transforms.len();
        if k == 0 {
            return Err(DataError::invalid(
                "transforms",
                "empty: one cluster per transform needs at least one",
            ));
        }
        if self.anchor_points == 0 {
            return Err(DataError::invalid("anchor_points", "must be at least 1"));
        }
        if self.points_per_client == 0 {
            return Err(DataError::invalid(
                "points_per_client",
                "must be at least 1",
            ));
        }
        let need = k
            .checked_mul(self.anchor_points)
            .zip(self.clients.checked_mul(self.points_per_client))
            .and_then(|(a, b)| a.checked_add(b));
        if need.is_none_or(|n| n > train_images) {
            return Err(DataError::invalid(
                "clients",
                format!(
                    "{k} anchors of {} images and {} clients of {} images need more than the {train_images} training images",
                    self.anchor_points, self.clients, self.points_per_client
                ),
            ));
        }
        Ok(())
    }

    /// Name of the data set, e.g. `mnist-anchored-identity-rotate90-14x14`.
    pub fn name(&self) -> String {
        dataset_name("mnist-anchored", &self.transforms, self.downsample)
    }
}

/// Builds the anchored partition of `mnist` described by `spec` (see the module
/// documentation); deterministic given `seed`. `truth.params` is `None`.
pub fn mnist_anchored(
    mnist: &ImageSet,
    spec: &MnistAnchoredSpec,
    seed: u64,
) -> Result<FederatedData> {
    mnist.check("mnist")?;
    spec.check_sizes(mnist.train_len())?;
    let shape = Shape::new(mnist, spec.downsample, &spec.transforms)?;
    let k = spec.transforms.len();
    let mut order: Vec<usize> = (0..mnist.train_len()).collect();
    order.shuffle(&mut stream(seed, Purpose::Partition, 0, 1));
    let mut clusters: Vec<usize> = (0..spec.clients).map(|i| i % k).collect();
    clusters.shuffle(&mut stream(seed, Purpose::Partition, 0, 2));
    let labels: Vec<usize> = (0..k).chain(clusters).collect();

    let mut scratch = vec![0.0; shape.scratch_len()];
    let train_set = (mnist.train_images.as_slice(), mnist.train_labels.as_slice());
    let (anchor_images, rest) = order.split_at(k * spec.anchor_points);
    let chunks = anchor_images
        .chunks_exact(spec.anchor_points)
        .chain(rest.chunks_exact(spec.points_per_client).take(spec.clients));
    let train = chunks
        .zip(&labels)
        .map(|(chunk, &j)| {
            shape.client(
                train_set,
                chunk.iter().copied(),
                Look::plain(spec.transforms[j]),
                &mut scratch,
            )
        })
        .collect::<Result<Vec<_>>>()?;
    let test_set = (mnist.test_images.as_slice(), mnist.test_labels.as_slice());
    let test = spec
        .transforms
        .iter()
        .map(|t| shape.client(test_set, 0..mnist.test_len(), Look::plain(*t), &mut scratch))
        .collect::<Result<Vec<_>>>()?;
    Ok(FederatedData {
        name: spec.name(),
        dim: shape.dim(),
        task: Task::Classification {
            classes: mnist.classes,
        },
        image: Some(shape.image()),
        train,
        test,
        truth: GroundTruth {
            clusters: k,
            train_labels: labels,
            test_labels: (0..k).collect(),
            params: None,
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use fedcluster_core::ImageShape;

    /// A fake MNIST of `n` training and `t` test 4x4 images: image `i` is all `i`.
    fn fake(n: usize, t: usize) -> ImageSet {
        let img = |count: usize| {
            (0..count)
                .flat_map(|i| vec![i as f32; 16])
                .collect::<Vec<f32>>()
        };
        ImageSet {
            shape: ImageShape {
                height: 4,
                width: 4,
                channels: 1,
            },
            classes: 10,
            train_images: img(n),
            train_labels: (0..n).map(|i| (i % 10) as u32).collect(),
            test_images: img(t),
            test_labels: (0..t).map(|i| (i % 10) as u32).collect(),
        }
    }

    fn spec() -> MnistAnchoredSpec {
        MnistAnchoredSpec {
            transforms: vec![Transform::Identity, Transform::Rotate90],
            anchor_points: 5,
            clients: 20,
            points_per_client: 2,
            downsample: false,
            data_dir: None,
        }
    }

    #[test]
    fn anchors_come_first_and_no_image_is_used_twice() {
        let data = mnist_anchored(&fake(60, 7), &spec(), 3).unwrap();
        assert_eq!(data.train.len(), 22);
        assert_eq!(data.train[0].len(), 5);
        assert_eq!(data.train[1].len(), 5);
        assert!(data.train[2..].iter().all(|c| c.len() == 2));
        assert_eq!(&data.truth.train_labels[..2], &[0, 1]);
        let per_cluster: Vec<usize> = (0..2)
            .map(|j| {
                data.truth.train_labels[2..]
                    .iter()
                    .filter(|l| **l == j)
                    .count()
            })
            .collect();
        assert_eq!(per_cluster, vec![10, 10]);
        // Images are constant, so the first pixel names the image.
        let mut seen: Vec<u32> = data
            .train
            .iter()
            .flat_map(|c| c.x.chunks_exact(16).map(|x| x[0] as u32))
            .collect();
        seen.sort_unstable();
        seen.dedup();
        assert_eq!(seen.len(), 5 * 2 + 20 * 2);
        // The test set is copied per cluster.
        assert_eq!(data.test.len(), 2);
        assert!(data.test.iter().all(|c| c.len() == 7));
        assert_eq!(data.truth.test_labels, vec![0, 1]);
        assert_eq!(
            mnist_anchored(&fake(60, 7), &spec(), 3).unwrap().train[5].x,
            data.train[5].x
        );
    }

    #[test]
    fn too_many_clients_name_the_field() {
        let mut s = spec();
        s.clients = 30;
        let err = mnist_anchored(&fake(60, 7), &s, 1).unwrap_err().to_string();
        assert!(err.contains("clients"), "{err}");
    }
}
