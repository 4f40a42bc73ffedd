//! `fedcluster bench`: timed rounds of the hot paths, with achieved FLOP/s
//! against the machine's single-core f32 GEMM peak.

use anyhow::{Result, bail};

use fedcluster_algorithms::{Aggregation, Checked, InitScheme, ifca};
use fedcluster_core::Model;
use fedcluster_data::synthetic::{IfcaSyntheticSpec, ifca_synthetic};
use fedcluster_models::LinearRegression;
use fedcluster_sim::{InProcess, run};

/// Single-core f32 GEMM peak of the reference machine (AMD EPYC Zen 3, AVX2+FMA),
/// GFLOP/s, measured in `../shared/GUIDE.md` section 3.
pub const CORE_PEAK_GFLOPS: f64 = 75.0;

/// Benchmarks that `fedcluster bench` knows.
pub const BENCHMARKS: &[(&str, &str)] = &[
    (
        "ifca-synthetic",
        "IFCA gradient averaging, linear regression, (m, n, d, k) = (400, 100, 1000, 4)",
    ),
    (
        "ifca-synthetic-restarts",
        "the same with (m, k) = (100, 2) and 10 restarts side by side (the Fig. 3a workload)",
    ),
    (
        "ifca-rotated-mnist",
        "IFCA model averaging, MLP 784-200-10, rotated MNIST, (m, n) = (2400, 100), k = 4, tau = 10 (needs --data-dir)",
    ),
];

/// Options of a benchmark run.
#[derive(Debug, Clone)]
pub struct BenchOptions {
    /// Timed rounds.
    pub rounds: usize,
    /// Worker threads (0: one per core).
    pub threads: usize,
    /// Directory of a real data set's files, for the benchmarks that need one.
    pub data_dir: Option<std::path::PathBuf>,
}

/// What a benchmark measured.
#[derive(Debug, Clone)]
pub struct BenchReport {
    /// Benchmark name.
    pub name: String,
    /// Threads used.
    pub threads: usize,
    /// Timed rounds.
    pub rounds: usize,
    /// Mean seconds per round.
    pub seconds_per_round: f64,
    /// Fastest round.
    pub best_round: f64,
    /// Floating-point operations per round.
    pub flops_per_round: f64,
    /// Named parts of a round and the seconds each takes per round, where the
    /// benchmark measures them.
    pub split: Vec<(String, f64)>,
}

impl BenchReport {
    /// Achieved GFLOP/s on the mean round.
    pub fn gflops(&self) -> f64 {
        self.flops_per_round / self.seconds_per_round / 1e9
    }

    /// Fraction of the peak of the cores used.
    pub fn fraction_of_peak(&self) -> f64 {
        self.gflops() / (CORE_PEAK_GFLOPS * self.threads as f64)
    }
}

/// Runs the named benchmark.
pub fn run_bench(name: &str, options: BenchOptions) -> Result<BenchReport> {
    match name {
        "ifca-synthetic" => ifca_synthetic_round(name, options, 400, 4, 1),
        "ifca-synthetic-restarts" => ifca_synthetic_round(name, options, 100, 2, 10),
        "ifca-rotated-mnist" => crate::bench_mnist::ifca_rotated_mnist_round(&options),
        _ => bail!(
            "unknown benchmark `{name}`; known: {}",
            BENCHMARKS
                .iter()
                .map(|b| b.0)
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

fn ifca_synthetic_round(
    name: &str,
    options: BenchOptions,
    m: usize,
    k: usize,
    restarts: usize,
) -> Result<BenchReport> {
    let (n, d) = (100, 1000);
    let spec = IfcaSyntheticSpec {
        clients: m,
        points_per_client: n,
        test_points_per_client: 1,
        dim: d,
        clusters: k,
        noise_std: 0.1,
        separation: 1.0,
        truth_scale: Default::default(),
    };
    let data = ifca_synthetic(&spec, 1)?;
    let model = LinearRegression::new(d)?;
    let config = Checked::new(ifca::Config {
        clusters: k,
        aggregation: Aggregation::Gradient,
        lr: 0.1.into(),
        local_steps: 1,
        participation: 1.0,
        restarts,
        init: InitScheme::Bernoulli { norm: None },
        stable_rounds: 0,
        weight_sharing: false,
        momentum: 0.0,
        optimizer: Default::default(),
    })?;
    let threads = resolve_threads(options.threads);
    let client = ifca::IfcaClient::new(config.aggregation, config.local_steps);
    let mut server = ifca::IfcaServer::new(config, &model, m, 1);
    let batches = data.train.iter().map(|c| c.batch(d)).collect();
    let mut transport = InProcess::new(vec![client; m], batches, &model, 1, threads)?;
    let warmup = 2;
    let mut times = Vec::new();
    run(
        &mut server,
        &mut transport,
        warmup + options.rounds,
        1,
        |e| {
            if e.round >= warmup {
                times.push(e.seconds);
            }
            Ok(())
        },
    )?;
    // Per client and restart: k forward passes for the assignment, one backward
    // pass (as many flops as a forward) for the gradient.
    let fwd = model.forward_flops_per_sample() as f64 * n as f64;
    let flops_per_round = (m * restarts) as f64 * (k as f64 * fwd + fwd);
    Ok(BenchReport {
        name: name.into(),
        threads,
        rounds: times.len(),
        seconds_per_round: times.iter().sum::<f64>() / times.len().max(1) as f64,
        best_round: times.iter().copied().fold(f64::INFINITY, f64::min),
        flops_per_round,
        split: Vec::new(),
    })
}

/// The thread count `threads` stands for (0: one per core).
pub fn resolve_threads(threads: usize) -> usize {
    if threads == 0 {
        std::thread::available_parallelism().map_or(1, |n| n.get())
    } else {
        threads
    }
}
