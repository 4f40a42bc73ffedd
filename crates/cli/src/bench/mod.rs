//! `fedcluster bench`: timed rounds of the hot paths, with achieved FLOP/s
//! against the machine's single-core f32 GEMM peak.

mod cifar;
mod many_clients;
mod mnist;
mod models;
mod small_clients;
mod steps;
mod synthetic;

pub use steps::model_steps_table;

use anyhow::Result;

use fedcluster_core::ServerHalf;
use fedcluster_sim::{Transport, run};

/// This machine's single-core f32 peak in practice, GFLOP/s: the best of six
/// timed products of 512 x 512 matrices (in cache) through the project's GEMM
/// (`core::linalg::matmul`, the `gemm` crate, one thread). Benchmarks report
/// against it rather than a fixed number: `../shared/GUIDE.md` section 3's
/// 70-80 GFLOP/s is an AVX2 Zen 3 core, and an AVX-512 Xeon reaches about twice
/// that.
pub fn gemm_peak() -> f64 {
    use fedcluster_core::linalg::{MatMut, MatRef, matmul};
    let n = 512;
    let a: Vec<f32> = (0..n * n).map(|i| ((i % 7) as f32 - 3.0) * 0.01).collect();
    let b = a.clone();
    let mut c = vec![0.0f32; n * n];
    let mut best = f64::INFINITY;
    for _ in 0..6 {
        let start = std::time::Instant::now();
        for _ in 0..4 {
            matmul(
                MatMut::row_major(&mut c, n, n),
                MatRef::row_major(&a, n, n),
                MatRef::row_major(&b, n, n),
                false,
                1.0,
            );
        }
        best = best.min(start.elapsed().as_secs_f64() / 4.0);
    }
    2.0 * (n * n * n) as f64 / best / 1e9
}

/// The benchmarks `fedcluster bench` knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Benchmark {
    /// IFCA gradient averaging, linear regression, (m, n, d, k) = (400, 100, 1000, 4).
    IfcaSynthetic,
    /// The same with (m, k) = (100, 2) and 10 restarts side by side (the Fig. 3a workload).
    IfcaSyntheticRestarts,
    /// IFCA model averaging, MLP 784-200-10, rotated MNIST, (m, n) = (2400, 100), k = 4,
    /// tau = 10 (MNIST from --data-dir, else mnist/ in the data root).
    IfcaRotatedMnist,
    /// The cross-device round: FedAvg (s = 5) of logistic regression 196 -> 10
    /// over 100 of the 25,004 anchored-MNIST clients of 2 images, k = 4 rotations
    /// (MNIST as above); time per client against the round's arithmetic.
    SmallClients,
    /// 10,000,000 mixed-regression clients of 10 points (d = 100, k = 3),
    /// generated when sampled; IFCA model averaging, 100 clients per round; set-up
    /// time, time per round and peak memory.
    ManyClients,
    /// IFCA's rotated CIFAR-10 partition ((m, n) = (200, 500), k = 2) of a
    /// full-size CIFAR-10 binary set (the real one with --data-dir, else
    /// made-up records): load time, clients produced per second, memory.
    CifarPartition,
    /// One local SGD step of every network (MLP, cnn-cifar, cnn-femnist, ResNet9,
    /// char-LSTM) at the papers' sizes on each backend (native, ndarray, flex):
    /// one thread, then one client per thread (--threads); --only picks cases.
    ModelSteps,
}

/// Options of a benchmark run.
#[derive(Debug, Clone)]
pub struct BenchOptions {
    /// Timed rounds.
    pub rounds: usize,
    /// Worker threads (0: one per core).
    pub threads: usize,
    /// Directory of a real data set's files, for the benchmarks that need one.
    pub data_dir: Option<std::path::PathBuf>,
    /// Only the cases whose label contains this (model-steps).
    pub only: Option<String>,
}

/// The MNIST benchmarks' directory: `--data-dir`, else mnist/ in the data
/// root (where `fedcluster run` finds it), or the one-line error naming every
/// way to give it.
fn mnist_dir(options: &BenchOptions) -> anyhow::Result<std::path::PathBuf> {
    let files = fedcluster_data::DataConfig::files_of("mnist").expect("the table's MNIST kind");
    fedcluster_run::experiment::files_dir(&files, options.data_dir.as_deref())
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
    /// Median round.
    pub median_round: f64,
    /// Floating-point operations per round.
    pub flops_per_round: f64,
    /// Named parts of a round and the seconds each takes per round, where the
    /// benchmark measures them.
    pub split: Vec<(String, f64)>,
    /// Further named measurements (clients per second, peak memory, set-up).
    pub extra: Vec<(String, String)>,
}

impl BenchReport {
    /// Achieved GFLOP/s on the mean round.
    pub fn gflops(&self) -> f64 {
        self.flops_per_round / self.seconds_per_round / 1e9
    }

    /// Fraction of `peak` (GFLOP/s per core) on the cores used.
    pub fn fraction_of(&self, peak: f64) -> f64 {
        self.gflops() / (peak * self.threads as f64)
    }
}

/// Runs `benchmark`, one of the round benchmarks (`model-steps` prints a
/// table of its own: [`model_steps_table`]).
pub fn run_bench(benchmark: Benchmark, options: BenchOptions) -> Result<Vec<BenchReport>> {
    Ok(vec![run_round_bench(benchmark, options)?])
}

fn run_round_bench(benchmark: Benchmark, options: BenchOptions) -> Result<BenchReport> {
    match benchmark {
        Benchmark::IfcaSynthetic => synthetic::ifca_synthetic_round(benchmark, options, 400, 4, 1),
        Benchmark::IfcaSyntheticRestarts => {
            synthetic::ifca_synthetic_round(benchmark, options, 100, 2, 10)
        }
        Benchmark::IfcaRotatedMnist => mnist::ifca_rotated_mnist_round(benchmark, &options),
        Benchmark::SmallClients => small_clients::small_clients_round(benchmark, &options),
        Benchmark::ManyClients => many_clients::many_clients_round(benchmark, &options),
        Benchmark::CifarPartition => cifar::cifar_partition(benchmark, &options),
        Benchmark::ModelSteps => anyhow::bail!("model-steps is run by model_steps_table"),
    }
}

/// Runs `warmup + rounds` rounds of `server` and returns the seconds of each
/// round after the warm-up.
fn timed_rounds<S, T>(
    server: &mut S,
    transport: &mut T,
    warmup: usize,
    rounds: usize,
) -> Result<Vec<f64>>
where
    S: ServerHalf,
    T: Transport<S::Down, S::Up>,
{
    let mut times = Vec::new();
    run(server, transport, warmup + rounds, 1, |e| {
        if e.round >= warmup {
            times.push(e.seconds);
        }
        Ok(())
    })?;
    Ok(times)
}

impl BenchReport {
    /// The report of single-threaded steps named `name`, each of `flops`.
    fn of_steps(name: &str, times: &[f64], flops: f64) -> Self {
        Self {
            name: name.into(),
            threads: 1,
            rounds: times.len(),
            seconds_per_round: times.iter().sum::<f64>() / times.len().max(1) as f64,
            best_round: times.iter().copied().fold(f64::INFINITY, f64::min),
            median_round: median(times),
            flops_per_round: flops,
            split: Vec::new(),
            extra: Vec::new(),
        }
    }

    /// The report of `times` (seconds of each timed round) at `flops_per_round`.
    fn of_rounds(
        benchmark: Benchmark,
        threads: usize,
        times: &[f64],
        flops_per_round: f64,
    ) -> Self {
        Self {
            name: clap::ValueEnum::to_possible_value(&benchmark)
                .map_or_else(String::new, |v| v.get_name().to_string()),
            threads,
            rounds: times.len(),
            seconds_per_round: times.iter().sum::<f64>() / times.len().max(1) as f64,
            best_round: times.iter().copied().fold(f64::INFINITY, f64::min),
            median_round: median(times),
            flops_per_round,
            split: Vec::new(),
            extra: Vec::new(),
        }
    }
}

/// IFCA with `clusters` models trained by `local_steps` steps of `lr` (one
/// gradient with gradient averaging), one restart, full participation, models
/// initialised as the model does and none of the options (stable identities,
/// weight sharing, momentum): what each benchmark adjusts.
fn ifca_config(
    clusters: usize,
    aggregation: fedcluster_algorithms::Aggregation,
    lr: f32,
    local_steps: usize,
) -> fedcluster_algorithms::ifca::Config {
    fedcluster_algorithms::ifca::Config {
        clusters,
        aggregation,
        lr: lr.into(),
        local_steps,
        participation: 1.0,
        restarts: 1,
        init: fedcluster_algorithms::InitScheme::Model,
        stable_rounds: 0,
        min_share: 0.0,
        weight_sharing: false,
        momentum: 0.0,
        optimizer: Default::default(),
        pretrain_rounds: 0,
        freeze_trunk: false,
        weighting: Default::default(),
        clients: Default::default(),
        clients_per_round: None,
        round_schedule: None,
    }
}

/// The median of `times` (the upper one of an even count); 0 for none.
fn median(times: &[f64]) -> f64 {
    let mut sorted = times.to_vec();
    sorted.sort_by(f64::total_cmp);
    sorted.get(sorted.len() / 2).copied().unwrap_or(0.0)
}

/// The thread count `threads` stands for (0: one per core).
pub fn resolve_threads(threads: usize) -> usize {
    if threads == 0 {
        std::thread::available_parallelism().map_or(1, |n| n.get())
    } else {
        threads
    }
}

/// The process's peak resident set (`VmHWM`), MiB; Linux only.
pub(super) fn peak_rss_mib() -> Option<f64> {
    fedcluster_run::memory::peak_resident().map(|bytes| bytes as f64 / (1u64 << 20) as f64)
}
