//! Synthetic clients generated when they are asked for.
//!
//! A synthetic client's samples come from its own stream `(seed, purpose, 0,
//! i)` and its cluster's true parameters, never from another client, so they
//! can be drawn again whenever the client takes part instead of being kept for
//! every client: memory is then the truth (a label per client), not the
//! samples, and a federation of millions of clients starts at once. The
//! samples are the ones [`GeneratedData::materialize`] stores, bit for bit.

use fedcluster_core::{Batch, ClientId, Purpose, ShardBuf, Shards, stream};

use super::{fill_linear_client, linear_clients};
use crate::dataset::{FederatedData, GroundTruth, Task};
use crate::view::DataView;

/// Samples per client: one count for all, or consecutive groups.
#[derive(Clone, Debug, PartialEq)]
pub enum Sizes {
    /// `clients` clients of `points` samples.
    Uniform {
        /// Number of clients.
        clients: usize,
        /// Samples of each.
        points: usize,
    },
    /// Groups in client order: `(end, points)`, clients below `end` (and at or
    /// above the previous group's end) hold `points` samples.
    Groups(Vec<(usize, usize)>),
}

impl Sizes {
    /// `clients` clients of `points` samples.
    pub fn uniform(clients: usize, points: usize) -> Self {
        Sizes::Uniform { clients, points }
    }

    /// Groups of `(count, points)` in client order.
    pub fn groups(groups: impl IntoIterator<Item = (usize, usize)>) -> Self {
        let mut end = 0;
        Sizes::Groups(
            groups
                .into_iter()
                .map(|(count, points)| {
                    end += count;
                    (end, points)
                })
                .collect(),
        )
    }

    /// Number of clients.
    pub fn clients(&self) -> usize {
        match self {
            Sizes::Uniform { clients, .. } => *clients,
            Sizes::Groups(groups) => groups.last().map_or(0, |g| g.0),
        }
    }

    /// Samples of all clients together.
    pub fn total_points(&self) -> u128 {
        match self {
            Sizes::Uniform { clients, points } => *clients as u128 * *points as u128,
            Sizes::Groups(groups) => {
                let starts = std::iter::once(0).chain(groups.iter().map(|g| g.0));
                groups
                    .iter()
                    .zip(starts)
                    .map(|(&(end, points), start)| (end - start) as u128 * points as u128)
                    .sum()
            }
        }
    }

    /// Samples of client `i`.
    pub fn of(&self, i: usize) -> usize {
        match self {
            Sizes::Uniform { points, .. } => *points,
            Sizes::Groups(groups) => groups[groups.partition_point(|g| g.0 <= i)].1,
        }
    }
}

/// A linear-regression data set whose clients are generated on demand.
#[derive(Clone, Debug)]
pub struct GeneratedData {
    name: &'static str,
    dim: usize,
    seed: u64,
    sizes: Sizes,
    test_points: usize,
    noise_std: f64,
    truth: GroundTruth,
}

impl GeneratedData {
    /// Linear-regression clients: training client `i` of `sizes.of(i)`
    /// samples from `(seed, ClientData, 0, i)`, test client `i` of
    /// `test_points` from `(seed, TestData, 0, i)`, both in the cluster
    /// `truth.train_labels[i]` (`truth.params` must be set).
    pub(crate) fn linear(
        name: &'static str,
        seed: u64,
        sizes: Sizes,
        test_points: usize,
        noise_std: f64,
        truth: GroundTruth,
    ) -> Self {
        let dim = truth
            .params
            .as_ref()
            .and_then(|p| p.first())
            .map_or(0, Vec::len);
        Self {
            name,
            dim,
            seed,
            sizes,
            test_points,
            noise_std,
            truth,
        }
    }

    /// Bytes the training and test samples would take in memory.
    pub fn stored_bytes(&self) -> u128 {
        let tests = self.sizes.clients() as u128 * self.test_points as u128;
        (self.sizes.total_points() + tests) * (self.dim as u128 + 1) * 4
    }

    fn params(&self) -> &[Vec<f32>] {
        self.truth.params.as_deref().unwrap_or_default()
    }

    fn clients(&self, purpose: Purpose) -> LinearClients<'_> {
        LinearClients {
            data: self,
            purpose,
        }
    }

    /// The data set as a run sees it, its clients produced on demand.
    pub fn view(&self) -> DataView<'_> {
        DataView {
            name: self.name,
            dim: self.dim,
            task: Task::Regression,
            image: None,
            train: Box::new(self.clients(Purpose::ClientData)),
            test: Box::new(self.clients(Purpose::TestData)),
            truth: &self.truth,
        }
    }

    /// Every client generated and stored.
    pub fn materialize(self) -> FederatedData {
        let params = self.params();
        let labels = &self.truth.train_labels;
        let (seed, noise) = (self.seed, self.noise_std);
        let train = linear_clients(
            seed,
            Purpose::ClientData,
            params,
            labels,
            |i| self.sizes.of(i),
            noise,
        );
        let test = linear_clients(
            seed,
            Purpose::TestData,
            params,
            labels,
            |_| self.test_points,
            noise,
        );
        FederatedData {
            name: self.name.into(),
            dim: self.dim,
            task: Task::Regression,
            image: None,
            train,
            test,
            truth: self.truth,
        }
    }
}

/// The training (`ClientData`) or test (`TestData`) clients of a
/// [`GeneratedData`].
struct LinearClients<'a> {
    data: &'a GeneratedData,
    purpose: Purpose,
}

impl Shards for LinearClients<'_> {
    fn num_clients(&self) -> usize {
        self.data.sizes.clients()
    }

    fn samples(&self, client: ClientId) -> usize {
        match self.purpose {
            Purpose::TestData => self.data.test_points,
            _ => self.data.sizes.of(client),
        }
    }

    fn batch<'s>(&'s self, client: ClientId, buf: &'s mut ShardBuf) -> Batch<'s> {
        let d = self.data;
        let theta = &d.params()[d.truth.train_labels[client]];
        let mut rng = stream(d.seed, self.purpose, 0, client as u64);
        let (x, y) = buf.real_parts(self.samples(client), d.dim);
        fill_linear_client(&mut rng, theta, x, y, d.noise_std);
        buf.real_batch(d.dim)
    }
}
