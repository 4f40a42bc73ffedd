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
//! client half keeps between rounds (its size, plus optimizer moments); the
//! per-client bookkeeping of the run (sizes, labels, assignment, replies,
//! records); and the per-thread workspaces. The per-client constants are
//! calibrated against the measured peak (`cli/tests/memory.rs`).

use anyhow::{Result, bail};

use fedcluster_algorithms::{Algorithm, Checked, Visit};
use fedcluster_core::Model;
use fedcluster_data::{DataConfig, DataView};

use crate::config::RunConfig;
use crate::experiment::STORE_SYNTHETIC_UP_TO_BYTES;

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

/// The memory a run may use: `given` (`--max-memory`), else what the
/// machine has; `None` when neither is known.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Limit {
    /// Bytes.
    pub bytes: u128,
    /// Where the number comes from, as the refusal names it.
    pub source: &'static str,
}

impl Limit {
    /// `--max-memory` when given, else the smaller of `MemAvailable` and the
    /// cgroup's `memory.max` (Linux; `None` elsewhere).
    pub fn resolve(given: Option<u64>) -> Option<Limit> {
        if let Some(bytes) = given {
            return Some(Limit {
                bytes: bytes.into(),
                source: "--max-memory",
            });
        }
        let available = read_kib("/proc/meminfo", "MemAvailable:").map(|kib| Limit {
            bytes: kib * 1024,
            source: "MemAvailable",
        });
        let cgroup = std::fs::read_to_string("/sys/fs/cgroup/memory.max")
            .ok()
            .and_then(|s| s.trim().parse::<u128>().ok())
            .map(|bytes| Limit {
                bytes,
                source: "cgroup memory.max",
            });
        [available, cgroup]
            .into_iter()
            .flatten()
            .min_by_key(|l| l.bytes)
    }

    /// Fails with one line when `estimate` does not fit.
    pub fn check(&self, estimate: &Estimate) -> Result<()> {
        let total = estimate.total();
        if total <= self.bytes {
            return Ok(());
        }
        let biggest = estimate
            .biggest()
            .map_or(String::new(), |t| format!(" (biggest: {})", t.what));
        bail!(
            "run needs about {}{biggest}; {} available ({}); lower the config's sizes or give more with --max-memory",
            gib(total),
            gib(self.bytes),
            self.source
        )
    }
}

/// Checks `estimate` against `given` (`--max-memory`) or the machine.
pub fn check(estimate: &Estimate, given: Option<u64>) -> Result<()> {
    Limit::resolve(given).map_or(Ok(()), |limit| limit.check(estimate))
}

fn read_kib(path: &str, key: &str) -> Option<u128> {
    let text = std::fs::read_to_string(path).ok()?;
    let line = text.lines().find(|l| l.starts_with(key))?;
    line[key.len()..]
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()
}

/// `bytes` in GiB with one decimal (MiB below 1 GiB).
pub fn gib(bytes: u128) -> String {
    match bytes >= 1 << 30 {
        true => format!("{:.1} GiB", bytes as f64 / (1u64 << 30) as f64),
        false => format!("{:.1} MiB", bytes as f64 / (1u64 << 20) as f64),
    }
}

/// A size as `--max-memory` takes it: bytes, or a number with K, M, G or T
/// (powers of 1024; an optional trailing `B` or `iB`).
pub fn parse_size(text: &str) -> Result<u64> {
    let t = text.trim();
    let t = t
        .strip_suffix("iB")
        .or_else(|| t.strip_suffix('B'))
        .unwrap_or(t);
    let (number, shift) = match t.char_indices().last() {
        Some((i, c)) if c.is_ascii_alphabetic() => {
            let shift = match c.to_ascii_uppercase() {
                'K' => 10,
                'M' => 20,
                'G' => 30,
                'T' => 40,
                _ => bail!("`{text}`: a size is a number with K, M, G or T, e.g. 2G"),
            };
            (&t[..i], shift)
        }
        _ => (t, 0),
    };
    let value: f64 = match number.trim().parse() {
        Ok(v) => v,
        Err(_) => bail!("`{text}`: a size is a number with K, M, G or T, e.g. 2G"),
    };
    let bytes = value * (1u64 << shift) as f64;
    if !(bytes.is_finite() && bytes >= 1.0 && bytes < u64::MAX as f64) {
        bail!("`{text}`: a size must be at least 1 byte and finite");
    }
    Ok(bytes as u64)
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
        let samples = (0..m).map(|i| shards.samples(i) as u128);
        let (all, most) = samples.fold((0, 0), |(a, b), s| (a + s, b.max(s)));
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
    let half = config.algorithm.visit(HalfBytes).unwrap_or(0) as u128;
    let per_client = half + shape.moments * params * 4;
    let what = format!("per-client state, {} clients x {per_client} bytes", train.0);
    estimate.add(what, train.0 * per_client);
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let threads = if config.threads == 0 {
        cores
    } else {
        config.threads
    } as u128;
    let workspace = 2 * 4 * train.2.max(test.2) + 4 * 4 * params * shape.replicas;
    let what = format!("workspaces, {threads} threads x {workspace} bytes");
    estimate.add(what, threads * workspace);
    estimate
}

/// The size of an algorithm's client half as it is stored per client.
struct HalfBytes;

impl Visit for HalfBytes {
    type Output = usize;
    fn visit<A: Algorithm>(self, _: Checked<A::Config>) -> usize {
        std::mem::size_of::<A::Client>()
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
mod tests {
    use super::*;

    #[test]
    fn sizes_parse_with_their_unit() {
        assert_eq!(parse_size("2G").unwrap(), 2 << 30);
        assert_eq!(parse_size("512MiB").unwrap(), 512 << 20);
        assert_eq!(parse_size("1.5k").unwrap(), 1536);
        assert_eq!(parse_size("100").unwrap(), 100);
        assert!(parse_size("0").is_err());
        assert!(parse_size("2X").is_err());
        assert!(parse_size("").is_err());
    }

    #[test]
    fn a_refusal_names_the_biggest_term_and_the_limit() {
        let estimate = Estimate {
            terms: vec![
                Term {
                    what: "small".into(),
                    bytes: 1,
                },
                Term {
                    what: "per-client state".into(),
                    bytes: 5 << 30,
                },
            ],
        };
        let limit = Limit {
            bytes: 2 << 30,
            source: "--max-memory",
        };
        let e = limit.check(&estimate).unwrap_err().to_string();
        assert!(e.starts_with("run needs about 5.0 GiB (biggest: per-client state); 2.0 GiB available (--max-memory)"), "{e}");
        let roomy = Limit {
            bytes: 6 << 30,
            source: "--max-memory",
        };
        assert!(roomy.check(&estimate).is_ok());
    }
}
