//! `fedcluster bench`: timed rounds of the hot paths, with achieved FLOP/s
//! against the machine's single-core f32 GEMM peak.

mod mnist;
mod synthetic;

use anyhow::Result;

use fedcluster_core::ServerHalf;
use fedcluster_sim::{Transport, run};

/// Single-core f32 GEMM peak of the reference machine (AMD EPYC Zen 3, AVX2+FMA),
/// GFLOP/s, measured in `../shared/GUIDE.md` section 3.
pub const CORE_PEAK_GFLOPS: f64 = 75.0;

/// The benchmarks `fedcluster bench` knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Benchmark {
    /// IFCA gradient averaging, linear regression, (m, n, d, k) = (400, 100, 1000, 4).
    IfcaSynthetic,
    /// The same with (m, k) = (100, 2) and 10 restarts side by side (the Fig. 3a workload).
    IfcaSyntheticRestarts,
    /// IFCA model averaging, MLP 784-200-10, rotated MNIST, (m, n) = (2400, 100), k = 4,
    /// tau = 10 (needs --data-dir).
    IfcaRotatedMnist,
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

/// Runs `benchmark`.
pub fn run_bench(benchmark: Benchmark, options: BenchOptions) -> Result<BenchReport> {
    match benchmark {
        Benchmark::IfcaSynthetic => synthetic::ifca_synthetic_round(benchmark, options, 400, 4, 1),
        Benchmark::IfcaSyntheticRestarts => {
            synthetic::ifca_synthetic_round(benchmark, options, 100, 2, 10)
        }
        Benchmark::IfcaRotatedMnist => mnist::ifca_rotated_mnist_round(benchmark, &options),
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
            flops_per_round,
            split: Vec::new(),
        }
    }
}

/// The thread count `threads` stands for (0: one per core).
pub fn resolve_threads(threads: usize) -> usize {
    if threads == 0 {
        std::thread::available_parallelism().map_or(1, |n| n.get())
    } else {
        threads
    }
}
