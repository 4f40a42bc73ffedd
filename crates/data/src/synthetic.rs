//! Synthetic linear-regression data sets with a known cluster structure.
//!
//! - [`ifca_synthetic`]: the IFCA experiment (Ghosh, Chung, Yin, Ramchandran,
//!   "An Efficient Framework for Clustered Federated Learning", Section VI-A).
//! - [`mixed_regression`]: the mixed linear regression experiment of the
//!   two-phase anchor-client method (Su, Xu, Yang, "Global Convergence of
//!   Federated Learning for Mixed Regression", Section V).
//!
//! Both are deterministic given the seed. Every draw comes from its own stream:
//! `stream(seed, TruthParams, 0, j)` for the true parameters of cluster `j`,
//! `stream(seed, Partition, 0, i)` for the cluster of client `i` (mixed
//! regression only; IFCA assigns clusters in fixed blocks),
//! `stream(seed, ClientData, 0, i)` for the training data of client `i` and
//! `stream(seed, TestData, 0, i)` for the data of test client `i`. Generating a
//! client therefore depends only on the seed, its index and its cluster's truth,
//! never on the other clients, so generation can run in parallel and client `i`
//! is the same whatever the total number of clients.

use fedcluster_core::limits::{MAX_CLIENT_VALUES, MAX_CLIENTS, MAX_CLUSTERS};
use fedcluster_core::params::dot;
use fedcluster_core::{Purpose, Rng, stream};
use rand::Rng as _;
use rand_distr::StandardNormal;
use serde::{Deserialize, Serialize};

use rayon::prelude::*;

use crate::dataset::{ClientData, FederatedData, GroundTruth, TargetsOwned};
use crate::error::{DataError, Result};

pub mod kinds;
pub mod on_demand;
#[cfg(test)]
mod tests;

use on_demand::{GeneratedData, Sizes};

/// Specification of the IFCA synthetic experiment (Section VI-A): `clients` (m)
/// workers split equally among `clusters` (k) in contiguous blocks, each with
/// `points_per_client` (n) samples of dimension `dim` (d).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IfcaSyntheticSpec {
    /// Number of training clients `m`; a multiple of `clusters`.
    pub clients: usize,
    /// Samples per training client `n`.
    pub points_per_client: usize,
    /// Samples per test client (one test client per training client).
    pub test_points_per_client: usize,
    /// Feature dimension `d`.
    pub dim: usize,
    /// Number of clusters `k`.
    pub clusters: usize,
    /// Standard deviation `σ` of the additive label noise.
    pub noise_std: f64,
    /// The separation scale `R`: the norm of every true parameter vector, or the
    /// value of its non-zero entries (see `truth_scale`).
    pub separation: f64,
    /// How `R` scales the Bernoulli vectors: `norm` (the paper's text, ‖θ*_j‖ = R)
    /// or `entries` (the paper's public code, entries in {0, R}).
    #[serde(default)]
    pub truth_scale: TruthScale,
}

/// How the separation `R` scales the Bernoulli(0.5) true parameters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum TruthScale {
    /// Rescaled to ℓ2 norm `R` (IFCA paper, Section VI-A).
    #[default]
    Norm,
    /// Entries in {0, R}: the paper's public code (`binomial(1, 0.5, d) * r`),
    /// which separates the clusters by about `R·sqrt(d/2)`.
    Entries,
}

impl IfcaSyntheticSpec {
    /// Checks every field; the error names the first bad one.
    pub fn validate(&self) -> Result<()> {
        positive("clients", self.clients)?;
        positive("points_per_client", self.points_per_client)?;
        positive("test_points_per_client", self.test_points_per_client)?;
        positive("dim", self.dim)?;
        positive("clusters", self.clusters)?;
        if !self.clients.is_multiple_of(self.clusters) {
            return Err(DataError::invalid(
                "clients",
                format!(
                    "clients ({}) must be a multiple of clusters ({}) so that every \
                     cluster gets the same number of clients",
                    self.clients, self.clusters
                ),
            ));
        }
        non_negative("noise_std", self.noise_std)?;
        non_negative("separation", self.separation)?;
        DataError::at_most("clients", "", self.clients as u128, MAX_CLIENTS as u128)?;
        DataError::at_most("clusters", "", self.clusters as u128, MAX_CLUSTERS as u128)?;
        fits("points_per_client", self.points_per_client, self.dim)?;
        fits(
            "test_points_per_client",
            self.test_points_per_client,
            self.dim,
        )
    }
}

/// One group of equally sized clients of a [`MixedRegressionSpec`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClientGroup {
    /// Number of clients in the group.
    pub count: usize,
    /// Samples per client.
    pub points: usize,
}

fn default_noise_std() -> f64 {
    0.2
}

/// Specification of the mixed linear regression experiment (Section V of the
/// two-phase paper): `θ*_ℓ ~ (2/√d)·N(0, I_d)`, client clusters drawn i.i.d.
/// from `probs`, `x ~ N(0, I_d)`, `y = <x, θ*> + noise_std·N(0, 1)`.
///
/// The paper's configurations (k = 3, d = 100, N = 1000 points in all):
/// balanced, 200 clients of 50 points, `probs = [1/3; 3]`; unbalanced data,
/// 900 clients of 10 points and 20 of 50, `probs = [1/3; 3]`; unbalanced data
/// and clusters, the same sizes with `probs = [0.2, 0.3, 0.5]`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MixedRegressionSpec {
    /// Feature dimension `d`.
    pub dim: usize,
    /// Number of clusters `k`.
    pub clusters: usize,
    /// Probability of each cluster; `clusters` non-negative entries summing to 1.
    pub probs: Vec<f64>,
    /// Client groups in order: client indices run through the first group, then
    /// the second, and so on.
    pub client_sizes: Vec<ClientGroup>,
    /// Standard deviation of the label noise (the paper uses 0.2).
    #[serde(default = "default_noise_std")]
    pub noise_std: f64,
    /// Samples per test client (one test client per training client).
    pub test_points_per_client: usize,
}

impl MixedRegressionSpec {
    /// Checks every field; the error names the first bad one.
    pub fn validate(&self) -> Result<()> {
        positive("dim", self.dim)?;
        positive("clusters", self.clusters)?;
        if self.probs.len() != self.clusters {
            return Err(DataError::invalid(
                "probs",
                format!(
                    "{} probabilities for {} clusters",
                    self.probs.len(),
                    self.clusters
                ),
            ));
        }
        if let Some(j) = self
            .probs
            .iter()
            .position(|p| !(p.is_finite() && *p >= 0.0))
        {
            return Err(DataError::invalid(
                format!("probs[{j}]"),
                format!("must be finite and non-negative, got {}", self.probs[j]),
            ));
        }
        let sum: f64 = self.probs.iter().sum();
        if (sum - 1.0).abs() > 1e-9 {
            return Err(DataError::invalid(
                "probs",
                format!("must sum to 1 (within 1e-9), sum is {sum}"),
            ));
        }
        if self.client_sizes.is_empty() {
            return Err(DataError::invalid("client_sizes", "no client groups"));
        }
        DataError::at_most("clusters", "", self.clusters as u128, MAX_CLUSTERS as u128)?;
        let mut total = 0usize;
        for (g, group) in self.client_sizes.iter().enumerate() {
            positive(&format!("client_sizes[{g}].count"), group.count)?;
            positive(&format!("client_sizes[{g}].points"), group.points)?;
            fits(&format!("client_sizes[{g}].points"), group.points, self.dim)?;
            total = total.saturating_add(group.count);
            let field = format!("client_sizes[{g}].count");
            DataError::at_most(&field, "clients so far", total as u128, MAX_CLIENTS as u128)?;
        }
        non_negative("noise_std", self.noise_std)?;
        positive("test_points_per_client", self.test_points_per_client)?;
        fits(
            "test_points_per_client",
            self.test_points_per_client,
            self.dim,
        )
    }
}

fn positive(field: &str, value: usize) -> Result<()> {
    if value == 0 {
        Err(DataError::invalid(field, "must be at least 1"))
    } else {
        Ok(())
    }
}

fn non_negative(field: &str, value: f64) -> Result<()> {
    if value.is_finite() && value >= 0.0 {
        Ok(())
    } else {
        Err(DataError::invalid(
            field,
            format!("must be finite and non-negative, got {value}"),
        ))
    }
}

/// Whether one client's `points * dim` feature values are within
/// [`MAX_CLIENT_VALUES`] (a data set of many clients is generated client by
/// client when too large to store).
fn fits(field: &str, points: usize, dim: usize) -> Result<()> {
    let what = format!("{points} samples of dim {dim}, values per client");
    DataError::at_most(
        field,
        &what,
        points as u128 * dim as u128,
        MAX_CLIENT_VALUES,
    )
}

/// Generates the IFCA synthetic data set (Section VI-A of the IFCA paper).
///
/// Each `θ*_j` has i.i.d. Bernoulli(0.5) coordinates (0 or 1), redrawn if all
/// zero, then rescaled to ℓ2 norm exactly `separation` (or, with
/// `TruthScale::Entries`, scaled so that its non-zero entries equal it). Client `i` belongs to
/// cluster `i / (clients / clusters)`; its samples are `x ~ N(0, I_d)`,
/// `y = <x, θ*_j> + σ·N(0, 1)`. Test client `i` has `test_points_per_client`
/// fresh samples from the same cluster. `truth.params` holds the `θ*_j`.
pub fn ifca_synthetic(spec: &IfcaSyntheticSpec, seed: u64) -> Result<FederatedData> {
    Ok(ifca_synthetic_on_demand(spec, seed)?.materialize())
}

/// [`ifca_synthetic`] with every client generated when asked for (see
/// [`on_demand`]); the same samples.
pub fn ifca_synthetic_on_demand(spec: &IfcaSyntheticSpec, seed: u64) -> Result<GeneratedData> {
    spec.validate()?;
    let params: Vec<Vec<f32>> = (0..spec.clusters)
        .map(|j| {
            let mut rng = stream(seed, Purpose::TruthParams, 0, j as u64);
            let v = bernoulli_on_sphere(&mut rng, spec.dim, 1.0);
            let ones = v.iter().filter(|x| **x != 0.0).count() as f64;
            let scale = match spec.truth_scale {
                TruthScale::Norm => spec.separation,
                TruthScale::Entries => spec.separation * ones.sqrt(),
            };
            v.iter().map(|x| (f64::from(*x) * scale) as f32).collect()
        })
        .collect();
    let per_cluster = spec.clients / spec.clusters;
    let labels: Vec<usize> = (0..spec.clients).map(|i| i / per_cluster).collect();
    Ok(GeneratedData::linear(
        "ifca_synthetic",
        seed,
        Sizes::uniform(spec.clients, spec.points_per_client),
        spec.test_points_per_client,
        spec.noise_std,
        GroundTruth {
            clusters: spec.clusters,
            train_labels: labels.clone(),
            test_labels: labels,
            params: Some(params),
        },
    ))
}

/// Generates the mixed linear regression data set (Section V of the two-phase
/// paper).
///
/// `θ*_ℓ = (2/√d)·g` with `g ~ N(0, I_d)`. Each client's cluster is drawn
/// i.i.d. from `probs`, as in the paper ("for each client, it belongs to one of
/// the 3 clusters with probability p_ℓ"; Section III: `P{z_i = ℓ} = p_ℓ`), so
/// cluster sizes are random, not exact proportions. Samples are
/// `x ~ N(0, I_d)`, `y = <x, θ*> + noise_std·N(0, 1)`. Test client `i` has
/// `test_points_per_client` fresh samples from client `i`'s cluster.
pub fn mixed_regression(spec: &MixedRegressionSpec, seed: u64) -> Result<FederatedData> {
    Ok(mixed_regression_on_demand(spec, seed)?.materialize())
}

/// [`mixed_regression`] with every client generated when asked for (see
/// [`on_demand`]); the same samples. The clusters of many clients are drawn
/// in parallel (each from its own stream, so in any order).
pub fn mixed_regression_on_demand(spec: &MixedRegressionSpec, seed: u64) -> Result<GeneratedData> {
    spec.validate()?;
    let scale = 2.0 / (spec.dim as f64).sqrt();
    let params: Vec<Vec<f32>> = (0..spec.clusters)
        .map(|j| {
            let mut rng = stream(seed, Purpose::TruthParams, 0, j as u64);
            (0..spec.dim)
                .map(|_| (scale * rng.sample::<f64, _>(StandardNormal)) as f32)
                .collect()
        })
        .collect();
    let sizes = Sizes::groups(spec.client_sizes.iter().map(|g| (g.count, g.points)));
    let labels: Vec<usize> = (0..sizes.clients())
        .into_par_iter()
        .map(|i| {
            let mut rng = stream(seed, Purpose::Partition, 0, i as u64);
            categorical(&mut rng, &spec.probs)
        })
        .collect();
    Ok(GeneratedData::linear(
        "mixed_regression",
        seed,
        sizes,
        spec.test_points_per_client,
        spec.noise_std,
        GroundTruth {
            clusters: spec.clusters,
            train_labels: labels.clone(),
            test_labels: labels,
            params: Some(params),
        },
    ))
}

/// Linear-regression clients: client `i` belongs to cluster `labels[i]`, has
/// `points(i)` samples and draws them from its own stream `(seed, purpose, i)`.
pub(crate) fn linear_clients(
    seed: u64,
    purpose: Purpose,
    params: &[Vec<f32>],
    labels: &[usize],
    points: impl Fn(usize) -> usize,
    noise_std: f64,
) -> Vec<ClientData> {
    labels
        .iter()
        .enumerate()
        .map(|(i, &j)| {
            let mut rng = stream(seed, purpose, 0, i as u64);
            linear_client(&mut rng, &params[j], points(i), noise_std)
        })
        .collect()
}

/// A vector of i.i.d. Bernoulli(0.5) coordinates rescaled to norm `radius`;
/// drawn again while all coordinates are zero.
fn bernoulli_on_sphere(rng: &mut Rng, dim: usize, radius: f64) -> Vec<f32> {
    loop {
        let bits: Vec<bool> = (0..dim).map(|_| rng.random()).collect();
        let ones = bits.iter().filter(|b| **b).count();
        if ones > 0 {
            let value = (radius / (ones as f64).sqrt()) as f32;
            return bits
                .into_iter()
                .map(|b| if b { value } else { 0.0 })
                .collect();
        }
    }
}

/// Index drawn from the distribution `probs` (non-negative, summing to 1 up
/// to rounding) by inverting its CDF; zero-probability entries are never drawn.
fn categorical(rng: &mut Rng, probs: &[f64]) -> usize {
    let u: f64 = rng.random();
    let mut cum = 0.0;
    for (j, p) in probs.iter().enumerate() {
        cum += p;
        if u < cum {
            return j;
        }
    }
    // `u` fell in the rounding gap above the last cumulative sum.
    probs.iter().rposition(|p| *p > 0.0).unwrap_or(0)
}

/// `points` samples `x ~ N(0, I)`, `y = <x, θ> + noise_std·N(0, 1)`, drawn
/// sample by sample (features, then noise).
fn linear_client(rng: &mut Rng, theta: &[f32], points: usize, noise_std: f64) -> ClientData {
    let mut x = vec![0.0; points * theta.len()];
    let mut y = vec![0.0; points];
    fill_linear_client(rng, theta, &mut x, &mut y, noise_std);
    ClientData {
        x,
        y: TargetsOwned::Real(y),
    }
}

/// [`linear_client`] written into `x` (`y.len() * dim` values) and `y`: the
/// same draws in the same order.
pub(crate) fn fill_linear_client(
    rng: &mut Rng,
    theta: &[f32],
    x: &mut [f32],
    y: &mut [f32],
    noise_std: f64,
) {
    for (row, target) in x.chunks_exact_mut(theta.len().max(1)).zip(y) {
        for v in row.iter_mut() {
            *v = rng.sample::<f32, _>(StandardNormal);
        }
        let noise: f64 = rng.sample(StandardNormal);
        *target = (dot(row, theta) + noise_std * noise) as f32;
    }
}
