//! The `fedcluster` command line: its clap definition, the dispatch of its
//! subcommands and [`main_with_args`], the whole command as a function. The
//! Rust binary (`main.rs`) and the Python package's `fedcluster` console
//! command (`fedcluster._native.main`, crates/python) both call it, so the two
//! are one command: the same flags, output and exit codes.

use std::ffi::OsString;
use std::io::Write;
use std::path::PathBuf;

use anyhow::Result;
use clap::{Parser, Subcommand};

use crate::bench::{BenchOptions, Benchmark, gemm_peak, model_steps_table, run_bench};
use crate::reproduce_command::Reproduce;
use crate::run_command::{Output, run};
use fedcluster_run::config::{data_dir_override, init_from_override};

/// Exit status of a command that failed (its error printed on one line).
pub const EXIT_FAILURE: u8 = 1;

/// Runs the `fedcluster` command with `args` (the first is the program's
/// name, as in `std::env::args_os`) and returns its exit status: 0 when it
/// succeeded, [`EXIT_FAILURE`] when it failed (the error printed to standard
/// error on one line), clap's status for a usage error (2; `--help` and
/// `--version` print and return 0). Never exits the process itself, so a
/// caller embedding the command (Python) keeps control.
pub fn main_with_args<I, T>(args: I) -> u8
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    let code = match Cli::try_parse_from(args) {
        Ok(cli) => match cli.command.dispatch() {
            Ok(()) => 0,
            Err(e) => {
                eprintln!("error: {}", format!("{e:#}").replace('\n', " "));
                EXIT_FAILURE
            }
        },
        Err(e) => {
            // Help and version go to standard output, usage errors to standard error.
            let _ = e.print();
            u8::try_from(e.exit_code()).unwrap_or(EXIT_FAILURE)
        }
    };
    // A process that embeds the command does not exit now: what is printed
    // must not wait in the buffer.
    let _ = std::io::stdout().flush();
    code
}

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
        /// Directory of the real data set's files (overrides `data.data_dir`;
        /// without either: $FEDCLUSTER_DATA/<name>, else data/<name>).
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
        /// Checkpoint every N rounds (0: every 60 s, and after the last round;
        /// then a round that follows one of 60 s or more is checkpointed
        /// between its clients too).
        #[arg(long, value_name = "N", default_value_t = 0)]
        checkpoint_every: usize,
        /// Also checkpoint every round after each client (one a worker
        /// thread at a time), so a killed run redoes at most a client a
        /// thread; each checkpoint writes the whole state.
        #[arg(long)]
        checkpoint_within_rounds: bool,
        /// Without a checkpoint of its own, start from the checkpoint in DIR:
        /// another run's <out>.partial/ (or a copy of it), read with the
        /// config.toml the run wrote there; the two configs may differ only
        /// in `rounds` and where the algorithm allows (SR-FCA into ONE_SHOT-IFCA
        /// before ONE_SHOT's clustering), and the result is what this run
        /// computes from its first round.
        #[arg(long, value_name = "DIR")]
        fork_from: Option<PathBuf>,
        /// No progress bar.
        #[arg(long, short)]
        quiet: bool,
        /// Refuse the run when its memory estimate exceeds SIZE (e.g. 2G;
        /// default: the memory the machine has).
        #[arg(long, value_name = "SIZE", value_parser = fedcluster_run::memory::parse_size)]
        max_memory: Option<u64>,
    },
    /// Reproduce a paper experiment: run its grid (resumably) and write its report.
    Reproduce {
        #[command(subcommand)]
        experiment: Reproduce,
    },
    /// Coordinate a networked run: wait for the config's clients, run the
    /// algorithm's server half round by round, write the run directory.
    Serve(crate::net_commands::ServeArgs),
    /// Join a networked run as one client, holding only that client's data.
    Join(crate::net_commands::JoinArgs),
    /// Write a private CA and certificates for a networked run (PEM files).
    Certs(crate::net_commands::CertsArgs),
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
        /// model-steps: only the cases whose label contains this (e.g. flex).
        #[arg(long)]
        only: Option<String>,
    },
    /// Fetch a data set (MNIST, Fashion-MNIST, CIFAR, Shakespeare) or prepare
    /// one in its published format (LEAF Shakespeare).
    Data {
        #[command(subcommand)]
        command: crate::data_command::DataCommand,
    },
    /// List reproductions and benchmarks.
    List,
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
                checkpoint_within_rounds,
                fork_from,
                quiet,
                max_memory,
            } => {
                let mut overrides = overrides;
                overrides.extend(data_dir.as_deref().map(data_dir_override));
                overrides.extend(init_from.as_deref().map(init_from_override));
                let output = Output {
                    overwrite,
                    resume,
                    checkpoint_every,
                    checkpoint_within_rounds,
                    fork_from,
                    quiet,
                    max_memory,
                };
                run(config, out, overrides, threads, output)
            }
            Command::Reproduce { experiment } => experiment.run(),
            Command::Data { command } => command.run(),
            Command::Serve(args) => crate::net_commands::serve(args),
            Command::Join(args) => crate::net_commands::join(args),
            Command::Certs(args) => crate::net_commands::certs(args),
            Command::Bench {
                name,
                rounds,
                threads,
                data_dir,
                only,
            } => bench(name, rounds, threads, data_dir, only),
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

fn bench(
    name: Benchmark,
    rounds: usize,
    threads: usize,
    data_dir: Option<PathBuf>,
    only: Option<String>,
) -> Result<()> {
    let options = BenchOptions {
        rounds: rounds.max(1),
        threads,
        data_dir,
        only,
    };
    if name == Benchmark::ModelSteps {
        print!("{}", model_steps_table(&options)?);
        return Ok(());
    }
    let reports = run_bench(name, options)?;
    let peak = gemm_peak();
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
