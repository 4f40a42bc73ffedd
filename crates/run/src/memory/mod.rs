//! The memory a run will need, estimated before it allocates, and checked
//! against the memory the machine has (the smaller of `/proc/meminfo`'s
//! `MemAvailable` and the cgroup's `memory.max`) or a `--max-memory` limit.
//!
//! Two checks: [`declared_data`] from the config alone, before the data set
//! is built (the synthetic kinds declare their clients and samples in the
//! config), and [`estimate`] once the data set and the model are there, before
//! the algorithm's halves, the transport and the server are built. The terms
//! (docs/run-directory.md, "Memory"): the data held; the cluster models (k x
//! parameters x replicas, with the server's working copies); the state every
//! client half keeps between rounds (its size, plus optimizer moments), with
//! the model-sized vectors the algorithm holds per client; what the server
//! holds per pair of clients (the pairwise distances of SR-FCA, CFL, FL+HC
//! and PACFL, growing with the square of the clients); the per-client
//! bookkeeping of the run (sizes, labels, assignment, replies, records); and
//! the per-thread workspaces. The per-client constants are
//! calibrated against the measured peak (`cli/tests/memory.rs`). A joining
//! process is checked with [`declared_data`] (it may build the data set to
//! take its own clients from it) and then [`joined`], its own clients alone.

use fedcluster_algorithms::{Algorithm, Checked, Visit};
use fedcluster_core::Model;
use fedcluster_data::table::Own;
use fedcluster_data::{DataConfig, DataView};

use crate::config::RunConfig;
use crate::experiment::STORE_SYNTHETIC_UP_TO_BYTES;

mod limit;

pub use limit::{Limit, check, gib, parse_size, peak_resident};

/// Bytes a stored client costs besides its values, per split (the vectors of
/// its features and targets and their allocations).
const STORED_CLIENT_BYTES: u128 = 96;
/// Bytes the run keeps per training client besides its data and its half:
/// its size, label and assignment, its reply while a round is taken in
/// order, and its share of the records (measured: `cli/tests/memory.rs`).
const BOOKKEEPING_BYTES: u128 = 320;
/// Copies of the cluster models a server holds (the models, their sums, the
/// previous round's and a reply being added).
const MODEL_COPIES: u128 = 4;
/// The process itself: code, the runtime, the config, the thread pool.
const BASE_BYTES: u128 = 16 << 20;

/// One term of an estimate.
#[derive(Debug, Clone, PartialEq)]
pub struct Term {
    /// What it counts, e.g. "per-client state, 1000 clients x 208 bytes".
    pub what: String,
    /// Bytes.
    pub bytes: u128,
}

/// The memory a run needs, term by term.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Estimate {
    /// The terms, in no particular order.
    pub terms: Vec<Term>,
}

impl Estimate {
    /// Bytes of every term together.
    pub fn total(&self) -> u128 {
        self.terms.iter().map(|t| t.bytes).sum::<u128>() + BASE_BYTES
    }

    /// The largest term.
    pub fn biggest(&self) -> Option<&Term> {
        self.terms.iter().max_by_key(|t| t.bytes)
    }

    fn add(&mut self, what: String, bytes: u128) {
        self.terms.push(Term { what, bytes });
    }

    fn data(&mut self, split: &str, clients: u128, values: u128, stored: bool) {
        let held = if stored { values * 4 } else { 0 };
        let what = match stored {
            true => format!("{split} data, {clients} clients, {values} values"),
            false => format!("{split} data, {clients} clients generated on demand"),
        };
        self.add(what, held + clients * STORED_CLIENT_BYTES);
    }

    fn bookkeeping(&mut self, clients: u128) {
        let what = format!("per-client bookkeeping, {clients} clients x {BOOKKEEPING_BYTES} bytes");
        self.add(what, clients * BOOKKEEPING_BYTES);
    }
}

/// The data terms of the synthetic kinds, from their config alone (`None`
/// for a kind read from files: its files are bounded by their own limits
/// and it is counted by [`estimate`] once read).
pub fn declared_data(config: &RunConfig) -> Option<Estimate> {
    let (train, test, dim) = match &config.data {
        DataConfig::IfcaSynthetic(s) => {
            let m = s.clients as u128;
            let train = (m, m * s.points_per_client as u128);
            (train, (m, m * s.test_points_per_client as u128), s.dim)
        }
        DataConfig::MixedRegression(s) => {
            let m: u128 = s.client_sizes.iter().map(|g| g.count as u128).sum();
            let points = s.client_sizes.iter();
            let points: u128 = points.map(|g| g.count as u128 * g.points as u128).sum();
            (
                (m, points),
                (m, m * s.test_points_per_client as u128),
                s.dim,
            )
        }
        _ => return None,
    };
    let per_point = dim as u128 + 1;
    let stored = (train.1 + test.1) * per_point * 4 <= STORE_SYNTHETIC_UP_TO_BYTES;
    let mut estimate = Estimate::default();
    estimate.data("training", train.0, train.1 * per_point, stored);
    estimate.data("test", test.0, test.1 * per_point, stored);
    estimate.bookkeeping(train.0);
    Some(estimate)
}

/// The whole estimate of an in-process run of `config` on `data` with
/// `model`: data, models, per-client state and bookkeeping, workspaces.
pub fn estimate(config: &RunConfig, data: &DataView<'_>, model: &dyn Model) -> Estimate {
    let mut estimate = Estimate::default();
    let values = |shards: &dyn fedcluster_core::Shards| -> (u128, u128, u128) {
        let m = shards.num_clients();
        let (all, most) = total_and_largest((0..m).map(|i| shards.samples(i)));
        let per_point = data.dim as u128 + 1;
        (m as u128, all * per_point, most * per_point)
    };
    let (train, test) = (values(data.train.as_ref()), values(data.test.as_ref()));
    let stored =
        declared_data(config).is_none_or(|d| d.terms.iter().all(|t| !t.what.contains("on demand")));
    estimate.data("training", train.0, train.1, stored);
    estimate.data("test", test.0, test.1, stored);
    estimate.bookkeeping(train.0);
    let params = model.num_params() as u128;
    let shape = Shape::of(config);
    let models = shape.clusters * shape.replicas * params;
    let what = format!(
        "models, {} clusters x {params} parameters x {} replicas",
        shape.clusters, shape.replicas
    );
    estimate.add(what, models * 4 * MODEL_COPIES);
    let held = config.algorithm.visit(PerClient).unwrap_or_default();
    let per_client = held.half as u128 + (shape.moments + held.models as u128) * params * 4;
    let what = format!("per-client state, {} clients x {per_client} bytes", train.0);
    estimate.add(what, train.0 * per_client);
    if held.pair_bytes > 0 {
        let pair = held.pair_bytes as u128;
        let what = format!("pairwise, {0} x {0} clients x {pair} bytes", train.0);
        estimate.add(what, train.0 * train.0 * pair);
    }
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let threads = if config.threads == 0 {
        cores
    } else {
        config.threads
    } as u128;
    let workspace = workspace_bytes(train.2.max(test.2), params, shape.replicas);
    let what = format!("workspaces, {threads} threads x {workspace} bytes");
    estimate.add(what, threads * workspace);
    estimate
}

/// The estimate of a joining process (`fedcluster join`) holding the
/// clients of `own`, one thread each: their data, and per client its half,
/// its optimizer moments, the cluster models a message carries down and its
/// reply up, and a thread's workspace.
pub fn joined(config: &RunConfig, own: &Own, model: &dyn Model) -> Estimate {
    let mut estimate = Estimate::default();
    let clients = own.clients.len() as u128;
    let per_point = own.input.dim as u128 + 1;
    let (all, most) = total_and_largest(own.clients.iter().map(|c| c.len()));
    estimate.data("own training", clients, all * per_point, true);
    let params = model.num_params() as u128;
    let shape = Shape::of(config);
    let half = config
        .algorithm
        .visit(PerClient)
        .map_or(0, |held| held.half) as u128;
    let messages = (shape.clusters * shape.replicas + 1) * params * 4;
    let workspace = workspace_bytes(most * per_point, params, shape.replicas);
    let per_client = half + shape.moments * params * 4 + messages + workspace;
    let what =
        format!("per-client state, messages and workspace, {clients} clients x {per_client} bytes");
    estimate.add(what, clients * per_client);
    estimate
}

/// The sum and the largest of the clients' sample counts.
fn total_and_largest(samples: impl Iterator<Item = usize>) -> (u128, u128) {
    samples.fold((0, 0), |(all, most), s| {
        (all + s as u128, most.max(s as u128))
    })
}

/// One thread's workspace: two copies of the largest client's values (`f32`)
/// and four model-sized vectors per replica.
fn workspace_bytes(largest_client_values: u128, params: u128, replicas: u128) -> u128 {
    2 * 4 * largest_client_values + 4 * 4 * params * replicas
}

/// What an algorithm holds per client and per pair of clients besides the
/// cluster models: the size of its client half as stored per client, the
/// model-sized vectors its run holds per client
/// ([`Algorithm::models_per_client`]) and the bytes its server holds per
/// ordered pair of clients ([`Algorithm::bytes_per_client_pair`]).
#[derive(Default)]
struct Held {
    half: usize,
    models: usize,
    pair_bytes: usize,
}

/// Reads [`Held`] off an algorithm's type and config.
struct PerClient;

impl Visit for PerClient {
    type Output = Held;
    fn visit<A: Algorithm>(self, config: Checked<A::Config>) -> Held {
        Held {
            half: std::mem::size_of::<A::Client>(),
            models: A::models_per_client(&config),
            pair_bytes: A::bytes_per_client_pair(&config),
        }
    }
}

/// What an algorithm's config declares of its models and client state.
struct Shape {
    clusters: u128,
    replicas: u128,
    /// Model-sized vectors each client keeps between rounds (optimizer
    /// moments: 1 for momentum, 2 for Adam).
    moments: u128,
}

impl Shape {
    fn of(config: &RunConfig) -> Shape {
        let value = serde_json::to_value(&config.algorithm).unwrap_or_default();
        let count = |key: &str| match value.get(key) {
            Some(serde_json::Value::Number(n)) => n.as_u64().unwrap_or(1).max(1) as u128,
            Some(serde_json::Value::Array(a)) => a.len().max(1) as u128,
            _ => 1,
        };
        let optimizer = value
            .get("optimizer")
            .map(|o| o.to_string())
            .unwrap_or_default();
        let moments = match () {
            _ if optimizer.contains("adam") => 2,
            _ if optimizer.contains("momentum") => 1,
            _ => 0,
        };
        Shape {
            clusters: count("clusters"),
            replicas: count("restarts") * count("lr"),
            moments,
        }
    }
}

#[cfg(test)]
mod tests;
