//! Synthetic classification tasks with a known cluster structure, small
//! stand-ins for the papers' image and text data sets (rotated CIFAR-10,
//! Shakespeare) that any machine can generate:
//!
//! - [`synthetic_images`]: one noisy prototype image per class, shared by all
//!   clusters; each cluster relabels the classes with its own permutation
//!   (cluster 0 keeps them), so one model cannot serve two clusters.
//! - [`synthetic_text`]: each cluster is a first-order Markov chain over the
//!   vocabulary; a client's samples are windows of `seq_len` symbols of one
//!   chain, labelled with the next symbol.
//!
//! As in [`crate::synthetic`], client `i` belongs to cluster `i / (clients /
//! clusters)` and draws from `stream(seed, ClientData, 0, i)` (test client `i`
//! from `TestData`), the clusters' truths from `TruthParams`, so a client does
//! not depend on the others.

use rand::Rng as _;
use rand::seq::SliceRandom;
use rand_distr::StandardNormal;
use serde::{Deserialize, Serialize};

use fedcluster_core::{ImageShape, Input, Purpose, Rng, stream};

use crate::data_set::DataSet;
use crate::dataset::{ClientData, FederatedData, GroundTruth, TargetsOwned, Task};
use crate::error::{DataError, Result};
use crate::table::DataKind;

/// Noisy class prototypes, relabelled per cluster.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SyntheticImagesSpec {
    /// Training clients; a multiple of `clusters`.
    pub clients: usize,
    /// Images per training client.
    pub points_per_client: usize,
    /// Images per test client (one test client per training client).
    pub test_points_per_client: usize,
    /// Clusters (label permutations).
    pub clusters: usize,
    /// Classes.
    pub classes: usize,
    /// Image rows.
    pub height: usize,
    /// Image columns.
    pub width: usize,
    /// Channels (3 for CIFAR-shaped images).
    pub channels: usize,
    /// Standard deviation of the pixel noise around the prototypes (which are
    /// uniform in `[-1, 1]`).
    #[serde(default = "default_noise")]
    pub noise_std: f64,
}

fn default_noise() -> f64 {
    0.5
}

/// Markov chains over a vocabulary, one per cluster.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SyntheticTextSpec {
    /// Training clients; a multiple of `clusters`.
    pub clients: usize,
    /// Windows per training client.
    pub points_per_client: usize,
    /// Windows per test client.
    pub test_points_per_client: usize,
    /// Clusters (chains).
    pub clusters: usize,
    /// Symbols.
    pub vocab: usize,
    /// Symbols per input window.
    pub seq_len: usize,
}

fn at_least_one(field: &str, v: usize) -> Result<()> {
    if v == 0 {
        Err(DataError::invalid(field, "must be at least 1"))
    } else {
        Ok(())
    }
}

/// The limits of a stored synthetic set of `clients` clients in `clusters`
/// clusters, with `train` and `test` samples per client of `values` values.
fn stored_limits(
    clients: usize,
    clusters: usize,
    train: usize,
    test: usize,
    values: u128,
) -> Result<()> {
    use fedcluster_core::limits::{
        MAX_CLIENT_VALUES, MAX_CLIENTS, MAX_CLUSTERS, MAX_STORED_VALUES,
    };
    DataError::at_most("clients", "", clients as u128, MAX_CLIENTS as u128)?;
    DataError::at_most("clusters", "", clusters as u128, MAX_CLUSTERS as u128)?;
    for (field, points) in [
        ("points_per_client", train),
        ("test_points_per_client", test),
    ] {
        let per_client = points as u128 * values;
        DataError::at_most(field, "values per client", per_client, MAX_CLIENT_VALUES)?;
        let all = clients as u128 * per_client;
        DataError::at_most(field, "values of all clients", all, MAX_STORED_VALUES)?;
    }
    Ok(())
}

fn blocks(clients: usize, clusters: usize) -> Result<Vec<usize>> {
    if !clients.is_multiple_of(clusters) {
        return Err(DataError::invalid(
            "clients",
            format!("must be a multiple of clusters ({clusters}), got {clients}"),
        ));
    }
    let per = clients / clusters;
    Ok((0..clients).map(|i| i / per).collect())
}

impl SyntheticImagesSpec {
    /// Checks every field; the error names the first bad one.
    pub fn validate(&self) -> Result<()> {
        for (f, v) in [
            ("clients", self.clients),
            ("points_per_client", self.points_per_client),
            ("clusters", self.clusters),
            ("classes", self.classes),
            ("height", self.height),
            ("width", self.width),
            ("channels", self.channels),
        ] {
            at_least_one(f, v)?;
        }
        let pixels = (self.height * self.width * self.channels) as u128;
        stored_limits(
            self.clients,
            self.clusters,
            self.points_per_client,
            self.test_points_per_client,
            pixels,
        )?;
        DataError::at_most("classes", "", self.classes as u128, u128::from(u32::MAX))?;
        if !(self.noise_std.is_finite() && self.noise_std >= 0.0) {
            return Err(DataError::invalid(
                "noise_std",
                format!("must be a finite number >= 0, got {}", self.noise_std),
            ));
        }
        blocks(self.clients, self.clusters).map(|_| ())
    }
}

impl SyntheticTextSpec {
    /// Checks every field; the error names the first bad one.
    pub fn validate(&self) -> Result<()> {
        for (f, v) in [
            ("clients", self.clients),
            ("points_per_client", self.points_per_client),
            ("clusters", self.clusters),
            ("seq_len", self.seq_len),
        ] {
            at_least_one(f, v)?;
        }
        stored_limits(
            self.clients,
            self.clusters,
            self.points_per_client,
            self.test_points_per_client,
            self.seq_len as u128,
        )?;
        DataError::at_most("vocab", "", self.vocab as u128, 1 << 24)?;
        if self.vocab < 2 {
            return Err(DataError::invalid(
                "vocab",
                format!("must be at least 2, got {}", self.vocab),
            ));
        }
        blocks(self.clients, self.clusters).map(|_| ())
    }
}

/// Generates [`SyntheticImagesSpec`]'s data set: images channels-last.
pub fn synthetic_images(spec: &SyntheticImagesSpec, seed: u64) -> Result<FederatedData> {
    spec.validate()?;
    let dim = spec.height * spec.width * spec.channels;
    let prototypes: Vec<Vec<f32>> = (0..spec.classes)
        .map(|c| {
            let mut rng = stream(seed, Purpose::TruthParams, 0, c as u64);
            (0..dim).map(|_| rng.random_range(-1.0f32..1.0)).collect()
        })
        .collect();
    let relabel: Vec<Vec<u32>> = (0..spec.clusters)
        .map(|j| {
            let mut perm: Vec<u32> = (0..spec.classes as u32).collect();
            if j > 0 {
                perm.shuffle(&mut stream(seed, Purpose::TruthParams, 1, j as u64));
            }
            perm
        })
        .collect();
    let labels = blocks(spec.clients, spec.clusters)?;
    let client = |purpose, i: usize, n: usize| {
        let mut rng = stream(seed, purpose, 0, i as u64);
        let (mut x, mut y) = (Vec::with_capacity(n * dim), Vec::with_capacity(n));
        for _ in 0..n {
            let c = rng.random_range(0..spec.classes);
            for &p in &prototypes[c] {
                let noise: f64 = rng.sample(StandardNormal);
                x.push(p + (spec.noise_std * noise) as f32);
            }
            y.push(relabel[labels[i]][c]);
        }
        ClientData {
            x,
            y: TargetsOwned::Class(y),
        }
    };
    let image = ImageShape {
        height: spec.height,
        width: spec.width,
        channels: spec.channels,
    };
    finish(
        "synthetic_images",
        Input::images(
            image,
            Task::Classification {
                classes: spec.classes,
            },
        ),
        spec.clusters,
        labels.clone(),
        (0..spec.clients)
            .map(|i| client(Purpose::ClientData, i, spec.points_per_client))
            .collect(),
        (0..spec.clients)
            .map(|i| client(Purpose::TestData, i, spec.test_points_per_client))
            .collect(),
    )
}

/// Generates [`SyntheticTextSpec`]'s data set: windows of symbol ids (as
/// floats), labelled with the next symbol.
pub fn synthetic_text(spec: &SyntheticTextSpec, seed: u64) -> Result<FederatedData> {
    spec.validate()?;
    let v = spec.vocab;
    // Each chain prefers a few successors of every symbol: weights e^{3 g}.
    let chains: Vec<Vec<f64>> = (0..spec.clusters)
        .map(|j| {
            let mut rng = stream(seed, Purpose::TruthParams, 0, j as u64);
            let mut rows = Vec::with_capacity(v * v);
            for _ in 0..v {
                let w: Vec<f64> = (0..v)
                    .map(|_| (3.0 * rng.sample::<f64, _>(StandardNormal)).exp())
                    .collect();
                let total: f64 = w.iter().sum();
                let mut acc = 0.0;
                rows.extend(w.iter().map(|x| {
                    acc += x / total;
                    acc
                }));
            }
            rows
        })
        .collect();
    let labels = blocks(spec.clients, spec.clusters)?;
    let client = |purpose, i: usize, n: usize| {
        let mut rng: Rng = stream(seed, purpose, 0, i as u64);
        let chain = &chains[labels[i]];
        let mut text = vec![rng.random_range(0..v)];
        while text.len() < n + spec.seq_len {
            let row = &chain[text[text.len() - 1] * v..][..v];
            let u: f64 = rng.random();
            text.push(row.iter().position(|&c| u < c).unwrap_or(v - 1));
        }
        let mut x = Vec::with_capacity(n * spec.seq_len);
        let mut y = Vec::with_capacity(n);
        for t in 0..n {
            x.extend(text[t..t + spec.seq_len].iter().map(|&s| s as f32));
            y.push(text[t + spec.seq_len] as u32);
        }
        ClientData {
            x,
            y: TargetsOwned::Class(y),
        }
    };
    finish(
        "synthetic_text",
        Input::flat(spec.seq_len, Task::Classification { classes: v }),
        spec.clusters,
        labels.clone(),
        (0..spec.clients)
            .map(|i| client(Purpose::ClientData, i, spec.points_per_client))
            .collect(),
        (0..spec.clients)
            .map(|i| client(Purpose::TestData, i, spec.test_points_per_client))
            .collect(),
    )
}

fn finish(
    name: &str,
    input: Input,
    clusters: usize,
    labels: Vec<usize>,
    train: Vec<ClientData>,
    test: Vec<ClientData>,
) -> Result<FederatedData> {
    Ok(FederatedData {
        name: name.into(),
        dim: input.dim,
        task: input.task,
        image: input.image,
        train,
        test,
        truth: GroundTruth {
            clusters,
            train_labels: labels.clone(),
            test_labels: labels,
            params: None,
        },
    })
}

/// `kind = "synthetic-images"`: [`SyntheticImagesSpec`].
pub struct SyntheticImages;

impl DataKind for SyntheticImages {
    type Spec = SyntheticImagesSpec;

    fn validate(spec: &Self::Spec) -> Result<()> {
        spec.validate()
    }

    fn build(spec: &Self::Spec, seed: u64) -> Result<DataSet> {
        synthetic_images(spec, seed).map(DataSet::Stored)
    }
}

/// `kind = "synthetic-text"`: [`SyntheticTextSpec`].
pub struct SyntheticText;

impl DataKind for SyntheticText {
    type Spec = SyntheticTextSpec;

    fn validate(spec: &Self::Spec) -> Result<()> {
        spec.validate()
    }

    fn build(spec: &Self::Spec, seed: u64) -> Result<DataSet> {
        synthetic_text(spec, seed).map(DataSet::Stored)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn images_relabel_per_cluster_and_are_reproducible() {
        let spec = SyntheticImagesSpec {
            clients: 4,
            points_per_client: 50,
            test_points_per_client: 5,
            clusters: 2,
            classes: 3,
            height: 4,
            width: 4,
            channels: 3,
            noise_std: 0.0,
        };
        let d = synthetic_images(&spec, 1).unwrap();
        d.validate().unwrap();
        assert_eq!(
            (d.dim, d.train.len(), d.truth.train_labels.clone()),
            (48, 4, vec![0, 0, 1, 1])
        );
        // Without noise, the same image means the same class within a cluster;
        // across clusters the labels are permuted.
        let label_of = |client: &ClientData, image: &[f32]| {
            let TargetsOwned::Class(y) = &client.y else {
                unreachable!()
            };
            client
                .x
                .chunks_exact(48)
                .position(|x| x == image)
                .map(|r| y[r])
        };
        let probe = &d.train[0].x[..48];
        assert_eq!(label_of(&d.train[1], probe), label_of(&d.train[0], probe));
        assert_eq!(d, synthetic_images(&spec, 1).unwrap());
        assert_ne!(d, synthetic_images(&spec, 2).unwrap());
        let bad = SyntheticImagesSpec { clients: 3, ..spec };
        assert_eq!(synthetic_images(&bad, 1).unwrap_err().field(), "clients");
    }

    #[test]
    fn text_windows_are_shifted_and_labelled_with_the_next_symbol() {
        let spec = SyntheticTextSpec {
            clients: 2,
            points_per_client: 6,
            test_points_per_client: 2,
            clusters: 2,
            vocab: 5,
            seq_len: 3,
        };
        let d = synthetic_text(&spec, 3).unwrap();
        d.validate().unwrap();
        let c = &d.train[0];
        let TargetsOwned::Class(y) = &c.y else {
            unreachable!()
        };
        for (t, &label) in y.iter().enumerate().take(5) {
            assert_eq!(
                c.x[(t + 1) * 3..(t + 1) * 3 + 2],
                c.x[t * 3 + 1..t * 3 + 3],
                "windows overlap"
            );
            assert_eq!(
                c.x[(t + 1) * 3 + 2],
                label as f32,
                "the label is the next symbol"
            );
        }
        assert!(
            c.x.iter()
                .all(|&s| (0.0..5.0).contains(&s) && s.fract() == 0.0)
        );
        assert_eq!(
            synthetic_text(&SyntheticTextSpec { vocab: 1, ..spec }, 3)
                .unwrap_err()
                .field(),
            "vocab"
        );
    }
}
