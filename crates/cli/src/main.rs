//! `fedcluster`: run, reproduce and benchmark clustered federated learning.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Result;
use clap::{Parser, Subcommand};

use fedcluster_cli::bench::{BenchOptions, Benchmark, gemm_peak, run_bench};
use fedcluster_cli::progress::RoundProgress;
use fedcluster_cli::reproduce_command::Reproduce;
use fedcluster_cli::table::{metric, render};
use fedcluster_run::checkpoint::{CHECKPOINT_FILE, Policy};
use fedcluster_run::config::{DEFAULT_CONFIG, RunConfig, data_dir_override, init_from_override};
use fedcluster_run::experiment::{Control, build_data_set, build_model, execute_controlled};
use fedcluster_run::rundir::{Extras, RunDir, free_run_dir, sibling, write_run};

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
        /// Start from the cluster models of a run directory's
        /// models.safetensors (sets the config's `init_from`).
        #[arg(long, value_name = "FILE")]
        init_from: Option<PathBuf>,
        /// Replace an existing run directory.
        #[arg(long)]
        overwrite: bool,
        /// Continue an interrupted run from the checkpoint in <out>.partial
        /// (the same config, --set values and --out).
        #[arg(long, requires = "out")]
        resume: bool,
        /// Checkpoint every N rounds (0: every 60 s, and after the last round).
        #[arg(long, value_name = "N", default_value_t = 0)]
        checkpoint_every: usize,
        /// No progress bar.
        #[arg(long, short)]
        quiet: bool,
    },
    /// Reproduce a paper experiment: run its grid (resumably) and write its report.
    Reproduce {
        #[command(subcommand)]
        experiment: Reproduce,
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
    /// Fetch a data set (MNIST, Fashion-MNIST, CIFAR, Shakespeare) or prepare
    /// one in its published format (LEAF Shakespeare).
    Data {
        #[command(subcommand)]
        command: fedcluster_cli::data_command::DataCommand,
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
                init_from,
                overwrite,
                resume,
                checkpoint_every,
                quiet,
            } => {
                let mut overrides = overrides;
                overrides.extend(data_dir.as_deref().map(data_dir_override));
                overrides.extend(init_from.as_deref().map(init_from_override));
                let output = Output {
                    overwrite,
                    resume,
                    checkpoint_every,
                    quiet,
                };
                run(config, out, overrides, threads, output)
            }
            Command::Reproduce { experiment } => experiment.run(),
            Command::Data { command } => command.run(),
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
                let experiments =
                    <Reproduce as Subcommand>::augment_subcommands(clap::Command::new("x"));
                for e in experiments.get_subcommands() {
                    let about = e.get_about().map(|a| a.to_string()).unwrap_or_default();
                    println!("  {:28} {about}", e.get_name());
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

/// How `run` writes its directory.
struct Output {
    overwrite: bool,
    resume: bool,
    checkpoint_every: usize,
    quiet: bool,
}

fn run(
    path: Option<PathBuf>,
    out: Option<PathBuf>,
    mut overrides: Vec<String>,
    threads: Option<usize>,
    output: Output,
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
    // Problems with the output, the data, the model or the algorithm's setup
    // surface before any directory exists: the target is reserved (checked and
    // locked) now and created just before the first round.
    let reserved = RunDir::reserve_to_resume(&out, output.overwrite, output.resume)?;
    let checkpoint = Policy {
        path: sibling(reserved.path(), "partial").join(CHECKPOINT_FILE),
        every_rounds: output.checkpoint_every,
        every: Duration::from_secs(60),
        resume: output.resume,
    };
    let data_set = build_data_set(&config)?;
    let data = data_set.view();
    let model = build_model(&config, &data)?;
    let progress = RoundProgress::start(&out.display().to_string(), config.rounds, output.quiet);
    let (summary, written) = reserved.run_into(
        |ready| {
            let control = Control {
                ready,
                progress: &mut |p| progress.show(p),
                checkpoint: Some(checkpoint),
            };
            let outcome = execute_controlled(&config, &data, model.as_ref(), control);
            progress.finish();
            outcome
        },
        |dir, outcome| write_run(dir, &config, &outcome, Extras::ALL),
    )?;
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

fn bench(name: Benchmark, rounds: usize, threads: usize, data_dir: Option<PathBuf>) -> Result<()> {
    let reports = run_bench(
        name,
        BenchOptions {
            rounds: rounds.max(1),
            threads,
            data_dir,
        },
    )?;
    let peak = gemm_peak();
    if name == Benchmark::ModelSteps {
        let rows: Vec<Vec<String>> = reports
            .iter()
            .map(|r| {
                vec![
                    r.name.clone(),
                    format!("{:.0}", r.split.first().map_or(0.0, |s| s.1)),
                    format!("{:.2}", 1e3 * r.seconds_per_round),
                    format!("{:.2}", 1e3 * r.best_round),
                    format!("{:.2}", r.flops_per_round / 1e9),
                    format!("{:.1}", r.gflops()),
                    format!("{:.0}%", 100.0 * r.fraction_of(peak)),
                ]
            })
            .collect();
        println!(
            "one local SGD step (forward, backward, update), 1 thread, {rounds} timed calls of 5 steps"
        );
        let header = [
            "model, backend",
            "parameters",
            "ms / step",
            "best",
            "GFLOP / step",
            "GFLOP/s",
            "of peak",
        ];
        print!("{}", render(&header, &rows));
        println!(
            "peak: {peak:.0} GFLOP/s, this machine's single-core f32 GEMM (512^3, in cache), measured now"
        );
        return Ok(());
    }
    for r in reports {
        println!(
            "benchmark {} ({} threads, {} timed rounds)",
            r.name, r.threads, r.rounds
        );
        println!(
            "  seconds per round: {:.3e} mean, {:.3e} median, {:.3e} best",
            r.seconds_per_round, r.median_round, r.best_round
        );
        // A benchmark of data, not arithmetic, counts no flops.
        if r.flops_per_round > 0.0 {
            println!("  GFLOP per round:   {:.3}", r.flops_per_round / 1e9);
            println!(
                "  achieved:          {:.1} GFLOP/s = {:.0}% of {} core(s) x {peak:.0} GFLOP/s (this machine's single-core GEMM, measured now)",
                r.gflops(),
                100.0 * r.fraction_of(peak),
                r.threads
            );
        }
        for (part, seconds) in &r.split {
            println!("  {part}: {seconds:.3} s per round (measured on a sample of clients)");
        }
        for (what, value) in &r.extra {
            println!("  {what}: {value}");
        }
    }
    Ok(())
}
