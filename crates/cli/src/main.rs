//! `fedcluster`: run, reproduce and benchmark clustered federated learning.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use anyhow::{Context, Result};
use clap::{Parser, Subcommand};

use fedcluster_cli::bench::{BenchOptions, Benchmark, CORE_PEAK_GFLOPS, run_bench};
use fedcluster_cli::config::{DEFAULT_CONFIG, RunConfig, data_dir_override};
use fedcluster_cli::experiment::{build_data, execute, round_bar, show_progress};
use fedcluster_cli::reproduce::{
    EXPERIMENTS, ifca_success, mixed_regression, mixed_regression_mnist, mnist, srfca_mnist,
};
use fedcluster_cli::rundir::{RunDir, free_run_dir, write_run};
use fedcluster_cli::table::{metric, render};

/// mimalloc keeps freed pages for reuse: every round allocates and frees the
/// clients' reply buffers, which with the system allocator cost page faults
/// (16% of a reproduction's time went to the kernel).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[derive(Parser)]
#[command(
    name = "fedcluster",
    version,
    about = "Clustered federated learning: IFCA and friends, fast"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

/// How the synthetic true parameters are scaled by R.
#[derive(Clone, Copy, clap::ValueEnum)]
enum Scale {
    /// Entries in {0, R} (the paper's public code).
    Entries,
    /// ℓ2 norm R (the paper's text).
    Norm,
}

#[derive(Subcommand)]
enum Command {
    /// Run one experiment from a TOML config (the embedded IFCA default if none).
    Run {
        /// Config file; omit to run the embedded default (configs/ifca-synthetic.toml).
        config: Option<PathBuf>,
        /// Run directory to write (default: the first free runs/<config name>[-N]).
        #[arg(long)]
        out: Option<PathBuf>,
        /// Override a config value, e.g. --set rounds=20 --set algorithm.lr=0.1.
        #[arg(long = "set", value_name = "KEY=VALUE")]
        overrides: Vec<String>,
        /// Worker threads (overrides the config's `threads`; 0: one per core).
        #[arg(long)]
        threads: Option<usize>,
        /// Directory of the real data set's files (overrides `data.data_dir`).
        #[arg(long)]
        data_dir: Option<PathBuf>,
        /// Replace an existing run directory.
        #[arg(long)]
        overwrite: bool,
        /// No progress bar.
        #[arg(long, short)]
        quiet: bool,
    },
    /// Reproduce a paper experiment and write its report.
    Reproduce {
        /// Experiment name (see `fedcluster list`).
        name: String,
        /// Data sets per grid cell (default: a quick 2; the paper used 40).
        #[arg(long)]
        trials: Option<usize>,
        /// The paper's full protocol (40 data sets per cell).
        #[arg(long, conflicts_with = "trials")]
        full: bool,
        /// Iterations per run (default 300, as in the paper).
        #[arg(long)]
        rounds: Option<usize>,
        /// Output directory (default: runs/reproduce/<name>).
        #[arg(long)]
        out: Option<PathBuf>,
        /// Worker threads (0: one per core).
        #[arg(long, default_value_t = 0)]
        threads: usize,
        /// ifca-synthetic-success: scale the true parameters as the paper's public
        /// code does (`entries`, θ* in {0, R}^d) or as its text says (`norm`, ‖θ*‖ = R).
        #[arg(long, value_enum, default_value_t = Scale::Entries)]
        truth_scale: Scale,
        /// MNIST and mixed-regression reproductions: seeds per method and setting (default 3).
        #[arg(long)]
        seeds: Option<usize>,
        /// A smoke run: a few rounds, one seed.
        #[arg(long)]
        quick: bool,
        /// Directory of the real data set's files (MNIST reproductions).
        #[arg(long)]
        data_dir: Option<PathBuf>,
        /// MNIST reproductions: run only this (m, n) size, e.g. 2400x100 (repeatable).
        #[arg(long = "only-size", value_name = "MxN", value_parser = parse_size)]
        only_sizes: Vec<(usize, usize)>,
        /// MNIST and srfca-mnist reproductions: run only this method, e.g. IFCA (repeatable).
        #[arg(long = "only-method", value_name = "NAME")]
        only_methods: Vec<String>,
    },
    /// Coordinate a networked run: wait for the config's clients, run the
    /// algorithm's server half round by round, write the run directory.
    Serve(fedcluster_cli::net_commands::ServeArgs),
    /// Join a networked run as one client, holding only that client's data.
    Join(fedcluster_cli::net_commands::JoinArgs),
    /// Write a private CA and certificates for a networked run (PEM files).
    Certs(fedcluster_cli::net_commands::CertsArgs),
    /// Time the hot path of an algorithm and report achieved GFLOP/s.
    Bench {
        /// The benchmark.
        #[arg(value_enum)]
        name: Benchmark,
        /// Timed rounds.
        #[arg(long, default_value_t = 20)]
        rounds: usize,
        /// Worker threads (0: one per core).
        #[arg(long, default_value_t = 0)]
        threads: usize,
        /// Directory of the real data set's files (MNIST benchmarks).
        #[arg(long)]
        data_dir: Option<PathBuf>,
    },
    /// List reproductions and benchmarks.
    List,
}

fn main() -> ExitCode {
    match Cli::parse().command.dispatch() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {}", format!("{e:#}").replace('\n', " "));
            ExitCode::FAILURE
        }
    }
}

impl Command {
    fn dispatch(self) -> Result<()> {
        match self {
            Command::Run {
                config,
                out,
                overrides,
                threads,
                data_dir,
                overwrite,
                quiet,
            } => {
                let mut overrides = overrides;
                overrides.extend(data_dir.as_deref().map(data_dir_override));
                run(config, out, overrides, threads, overwrite, quiet)
            }
            Command::Reproduce {
                name,
                trials,
                full,
                rounds,
                out,
                threads,
                truth_scale,
                seeds,
                quick,
                data_dir,
                only_sizes,
                only_methods,
            } => {
                if matches!(name.as_str(), "ifca-rotated-mnist" | "cflmgd-rotated-mnist") {
                    let only = (only_sizes, only_methods);
                    reproduce_mnist(&name, seeds, rounds, quick, data_dir, out, threads, only)
                } else if name == "mixed-regression" {
                    reproduce_mixed_regression(seeds, rounds, quick, out, threads)
                } else if name == "mixed-regression-mnist" {
                    reproduce_mixed_regression_mnist(seeds, rounds, quick, data_dir, out, threads)
                } else if name == "srfca-mnist" {
                    let only = only_methods;
                    reproduce_srfca_mnist(seeds, rounds, quick, data_dir, out, threads, only)
                } else {
                    reproduce(&name, trials, full, rounds, out, threads, truth_scale)
                }
            }
            Command::Serve(args) => fedcluster_cli::net_commands::serve(args),
            Command::Join(args) => fedcluster_cli::net_commands::join(args),
            Command::Certs(args) => fedcluster_cli::net_commands::certs(args),
            Command::Bench {
                name,
                rounds,
                threads,
                data_dir,
            } => bench(name, rounds, threads, data_dir),
            Command::List => {
                println!("reproductions (fedcluster reproduce NAME):");
                for (n, d) in EXPERIMENTS {
                    println!("  {n:28} {d}");
                }
                println!("benchmarks (fedcluster bench NAME):");
                for b in <Benchmark as clap::ValueEnum>::value_variants() {
                    if let Some(v) = clap::ValueEnum::to_possible_value(b) {
                        let help = v.get_help().map(|h| h.to_string()).unwrap_or_default();
                        println!("  {:28} {help}", v.get_name());
                    }
                }
                Ok(())
            }
        }
    }
}

fn run(
    path: Option<PathBuf>,
    out: Option<PathBuf>,
    mut overrides: Vec<String>,
    threads: Option<usize>,
    overwrite: bool,
    quiet: bool,
) -> Result<()> {
    if let Some(t) = threads {
        overrides.push(format!("threads={t}"));
    }
    let (config, stem) = match &path {
        Some(p) => (
            RunConfig::load(p, &overrides)?,
            p.file_stem()
                .map_or("run".into(), |s| s.to_string_lossy().into_owned()),
        ),
        None => (
            RunConfig::parse(DEFAULT_CONFIG, &overrides, "embedded default config")?,
            "default".to_string(),
        ),
    };
    // Without --out, never fail or clobber: take the first free runs/<name>[-N].
    let out = out.unwrap_or_else(|| free_run_dir(&stem));
    // Problems with the output or the data surface before any directory exists.
    RunDir::check_target(&out, overwrite)?;
    let data = build_data(&config)?;
    let dir = RunDir::create(&out, overwrite)?;
    let result = (|| {
        let bar = round_bar(config.rounds, quiet);
        let outcome = execute(&config, &data, &mut |p| show_progress(&bar, p))?;
        bar.finish_and_clear();
        write_run(&dir, &config, &outcome)
    })();
    let summary = match result {
        Ok(s) => s,
        Err(e) => {
            let partial = dir.fail(&e);
            return Err(e.context(format!("incomplete run left in {}", partial.display())));
        }
    };
    let written = dir.finish()?;
    let f = &summary.final_;
    let rows = vec![
        vec!["algorithm".into(), summary.algorithm.clone()],
        vec!["rounds".into(), summary.rounds.to_string()],
        vec!["train loss".into(), metric(f.train_loss)],
        vec!["param error".into(), metric(f.param_error)],
        vec!["misclustering".into(), metric(f.misclustering)],
        vec!["test misclustering".into(), metric(f.test_misclustering)],
        vec!["test loss".into(), metric(f.test_loss)],
        vec!["test accuracy".into(), metric(f.test_accuracy)],
        vec![
            "seconds / round".into(),
            format!("{:.4}", summary.seconds_per_round),
        ],
        vec![
            "MB down / up".into(),
            format!(
                "{:.1} / {:.1}",
                summary.bytes_down as f64 / 1e6,
                summary.bytes_up as f64 / 1e6
            ),
        ],
    ];
    print!("{}", render(&["metric", "value"], &rows));
    if summary.replicas.len() > 1 {
        println!(
            "selected replica {} of {} (lowest final training loss)",
            summary.selected_replica,
            summary.replicas.len()
        );
    }
    println!("run directory: {}", written.display());
    Ok(())
}

fn reproduce(
    name: &str,
    trials: Option<usize>,
    full: bool,
    rounds: Option<usize>,
    out: Option<PathBuf>,
    threads: usize,
    truth_scale: Scale,
) -> Result<()> {
    let out = out.unwrap_or_else(|| PathBuf::from("runs/reproduce").join(name));
    match name {
        "ifca-synthetic-success" => {
            let mut options = ifca_success::Options {
                threads,
                truth_scale: match truth_scale {
                    Scale::Entries => fedcluster_data::TruthScale::Entries,
                    Scale::Norm => fedcluster_data::TruthScale::Norm,
                },
                ..Default::default()
            };
            if full {
                options.trials = ifca_success::PAPER_TRIALS;
            }
            if let Some(t) = trials {
                options.trials = t.max(1);
            }
            if let Some(r) = rounds {
                options.rounds = r.max(1);
            }
            let start = Instant::now();
            let results = ifca_success::run_grid(&options)?;
            let table =
                ifca_success::write_report(&out, &options, &results, start.elapsed().as_secs_f64())
                    .context("cannot write the report")?;
            print!("{table}");
            println!("report: {}", out.join("report.md").display());
            Ok(())
        }
        _ => anyhow::bail!(
            "unknown experiment `{name}`; known: {}",
            EXPERIMENTS
                .iter()
                .map(|e| e.0)
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

fn reproduce_mixed_regression(
    seeds: Option<usize>,
    rounds: Option<usize>,
    quick: bool,
    out: Option<PathBuf>,
    threads: usize,
) -> Result<()> {
    let mut options = if quick {
        mixed_regression::Options::quick(threads)
    } else {
        mixed_regression::Options::full(threads)
    };
    override_at_least_one(seeds, &mut options.seeds);
    override_at_least_one(rounds, &mut options.rounds);
    write_tables("mixed-regression", out, |out| {
        mixed_regression::reproduce(&options, out)
    })
}

fn reproduce_mixed_regression_mnist(
    seeds: Option<usize>,
    rounds: Option<usize>,
    quick: bool,
    data_dir: Option<PathBuf>,
    out: Option<PathBuf>,
    threads: usize,
) -> Result<()> {
    let data_dir = required_mnist_dir(data_dir)?;
    let mut options = if quick {
        mixed_regression_mnist::Options::quick(data_dir, threads)
    } else {
        mixed_regression_mnist::Options::full(data_dir, threads)
    };
    override_at_least_one(seeds, &mut options.seeds);
    override_at_least_one(rounds, &mut options.rounds);
    write_tables("mixed-regression-mnist", out, |out| {
        mixed_regression_mnist::reproduce(&options, out)
    })
}

fn reproduce_srfca_mnist(
    seeds: Option<usize>,
    rounds: Option<usize>,
    quick: bool,
    data_dir: Option<PathBuf>,
    out: Option<PathBuf>,
    threads: usize,
    only_methods: Vec<String>,
) -> Result<()> {
    let data_dir = required_mnist_dir(data_dir)?;
    let mut options = if quick {
        srfca_mnist::Options::quick(data_dir, threads)
    } else {
        srfca_mnist::Options::full(data_dir, threads)
    };
    override_at_least_one(seeds, &mut options.seeds);
    if let Some(r) = rounds {
        options.rounds = Some(r.max(1));
    }
    options.methods = only_methods;
    write_tables("srfca-mnist", out, |out| {
        srfca_mnist::reproduce(&options, out)
    })
}

/// `--seeds N` / `--rounds N`: replaces the default, never below 1.
fn override_at_least_one(value: Option<usize>, slot: &mut usize) {
    if let Some(v) = value {
        *slot = v.max(1);
    }
}

/// Runs a reproduction into `out` (default `runs/reproduce/<name>`) and prints
/// its tables and where the report is.
fn write_tables(
    name: &str,
    out: Option<PathBuf>,
    reproduce: impl FnOnce(&std::path::Path) -> Result<String>,
) -> Result<()> {
    let out = out.unwrap_or_else(|| PathBuf::from("runs/reproduce").join(name));
    let tables = reproduce(&out)?;
    print!("{tables}");
    println!("report: {}", out.join("report.md").display());
    Ok(())
}

/// The `--data-dir` an MNIST reproduction cannot run without.
fn required_mnist_dir(data_dir: Option<PathBuf>) -> Result<PathBuf> {
    data_dir.context(
        "MNIST reproductions read the IDX files: pass --data-dir DIR (e.g. ../shared/data/mnist)",
    )
}

/// `MxN`, e.g. `2400x100`.
fn parse_size(s: &str) -> Result<(usize, usize), String> {
    let (m, n) = s
        .split_once('x')
        .ok_or_else(|| format!("`{s}`: expected MxN, e.g. 2400x100"))?;
    let parse = |v: &str| v.trim().parse::<usize>().map_err(|e| format!("`{s}`: {e}"));
    Ok((parse(m)?, parse(n)?))
}

#[allow(clippy::too_many_arguments)]
fn reproduce_mnist(
    name: &str,
    seeds: Option<usize>,
    rounds: Option<usize>,
    quick: bool,
    data_dir: Option<PathBuf>,
    out: Option<PathBuf>,
    threads: usize,
    (only_sizes, only_methods): (Vec<(usize, usize)>, Vec<String>),
) -> Result<()> {
    let data_dir = required_mnist_dir(data_dir)?;
    let mut options = if quick {
        mnist::Options::quick(data_dir, threads)
    } else {
        mnist::Options::full(data_dir, threads)
    };
    if let Some(s) = seeds {
        options.seeds = s.max(1);
    }
    options.sizes = only_sizes;
    options.methods = only_methods;
    if let Some(r) = rounds {
        options.rounds = r.max(1);
    }
    let experiment = match name {
        "ifca-rotated-mnist" => &mnist::IFCA_ROTATED_MNIST,
        _ => &mnist::CFLMGD_ROTATED_MNIST,
    };
    let out = out.unwrap_or_else(|| PathBuf::from("runs/reproduce").join(name));
    let table = mnist::reproduce(experiment, &options, &out)?;
    print!("{table}");
    println!("report: {}", out.join("report.md").display());
    Ok(())
}

fn bench(name: Benchmark, rounds: usize, threads: usize, data_dir: Option<PathBuf>) -> Result<()> {
    let r = run_bench(
        name,
        BenchOptions {
            rounds: rounds.max(1),
            threads,
            data_dir,
        },
    )?;
    println!(
        "benchmark {} ({} threads, {} timed rounds)",
        r.name, r.threads, r.rounds
    );
    println!(
        "  seconds per round: {:.4} (best {:.4})",
        r.seconds_per_round, r.best_round
    );
    println!("  GFLOP per round:   {:.3}", r.flops_per_round / 1e9);
    println!(
        "  achieved:          {:.1} GFLOP/s = {:.0}% of {} core(s) x {CORE_PEAK_GFLOPS} GFLOP/s peak",
        r.gflops(),
        100.0 * r.fraction_of_peak(),
        r.threads
    );
    for (part, seconds) in &r.split {
        println!("  {part}: {seconds:.3} s per round (measured on a sample of clients)");
    }
    Ok(())
}
