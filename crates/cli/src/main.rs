//! `fedcluster`: run, reproduce and benchmark clustered federated learning.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use anyhow::{Context, Result};
use clap::{Parser, Subcommand};
use indicatif::{ProgressBar, ProgressStyle};

use fedcluster_cli::bench::{BENCHMARKS, BenchOptions, CORE_PEAK_GFLOPS, run_bench};
use fedcluster_cli::config::{DEFAULT_CONFIG, RunConfig, data_dir_override};
use fedcluster_cli::experiment::{build_data, execute};
use fedcluster_cli::network;
use fedcluster_cli::reproduce::{
    EXPERIMENTS, ifca_success, mixed_regression, mixed_regression_mnist, mnist, srfca_mnist,
};
use fedcluster_cli::rundir::{RunDir, write_run};
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
    Serve {
        /// Config file (the same as for `run`).
        config: PathBuf,
        /// Address to listen on.
        #[arg(long, default_value = "0.0.0.0:7878")]
        listen: SocketAddr,
        /// Run directory to write (default: the first free runs/<config name>[-N]).
        #[arg(long)]
        out: Option<PathBuf>,
        /// Override a config value, e.g. --set rounds=20.
        #[arg(long = "set", value_name = "KEY=VALUE")]
        overrides: Vec<String>,
        /// Directory of the real data set's files (test data and ground truth).
        #[arg(long)]
        data_dir: Option<PathBuf>,
        /// The coordinator's certificate chain (PEM).
        #[arg(long, requires = "tls_key")]
        tls_cert: Option<PathBuf>,
        /// The coordinator's private key (PEM).
        #[arg(long, requires = "tls_cert")]
        tls_key: Option<PathBuf>,
        /// Demand client certificates signed by this CA (mutual TLS).
        #[arg(long, requires = "tls_cert")]
        client_ca: Option<PathBuf>,
        /// File holding the shared token clients must present (or set FEDCLUSTER_TOKEN).
        #[arg(long)]
        token_file: Option<PathBuf>,
        /// Plaintext, for loopback demos only.
        #[arg(long, conflicts_with_all = ["tls_cert", "client_ca"])]
        insecure: bool,
        /// Seconds to wait for every client to register.
        #[arg(long, default_value_t = 300.0)]
        join_timeout: f64,
        /// Seconds a round waits for replies.
        #[arg(long, default_value_t = 600.0)]
        round_timeout: f64,
        /// Fewest replies a round may complete with (default: every client).
        #[arg(long)]
        min_clients: Option<usize>,
        /// Directory of the checkpoint (every round's replies; default <out>.checkpoint).
        #[arg(long)]
        checkpoint: Option<PathBuf>,
        /// Continue an interrupted run from its checkpoint (same config and --out).
        #[arg(long)]
        resume: bool,
        /// Replace an existing run directory.
        #[arg(long)]
        overwrite: bool,
        /// No progress bar.
        #[arg(long, short)]
        quiet: bool,
    },
    /// Join a networked run as one client, holding only that client's data.
    Join {
        /// The coordinator, host:port.
        #[arg(long)]
        server: String,
        /// Which clients this process holds: partition:ID (the ID-th client of the
        /// run's data set) or partition:A-B (clients A to B, a connection each).
        #[arg(long)]
        data: String,
        /// Directory of the real data set's files on this machine.
        #[arg(long)]
        data_dir: Option<PathBuf>,
        /// CA certificate that signed the coordinator's (PEM).
        #[arg(long)]
        ca: Option<PathBuf>,
        /// Name on the coordinator's certificate (default: the server's host).
        #[arg(long, requires = "ca")]
        domain: Option<String>,
        /// This client's certificate (PEM), for mutual TLS.
        #[arg(long, requires_all = ["key", "ca"])]
        cert: Option<PathBuf>,
        /// This client's private key (PEM).
        #[arg(long, requires = "cert")]
        key: Option<PathBuf>,
        /// File holding the shared token (or set FEDCLUSTER_TOKEN).
        #[arg(long)]
        token_file: Option<PathBuf>,
        /// Plaintext, for loopback demos only.
        #[arg(long, conflicts_with = "ca")]
        insecure: bool,
        /// Seconds to keep trying to reach the coordinator.
        #[arg(long, default_value_t = 60.0)]
        connect_timeout: f64,
        /// Fault injection (tests): stop answering once round R's message arrives.
        #[arg(long, hide = true)]
        crash_at_round: Option<u64>,
    },
    /// Write a private CA and certificates for a networked run (PEM files).
    Certs {
        /// Directory to write ca.pem, ca.key, server.pem, server.key, client.pem, client.key.
        #[arg(long)]
        out: PathBuf,
        /// A name the coordinator is reached by: DNS name or IP address (repeatable).
        #[arg(long = "server-name", default_values_t = ["localhost".to_string(), "127.0.0.1".to_string()])]
        server_names: Vec<String>,
    },
    /// Time the hot path of an algorithm and report achieved GFLOP/s.
    Bench {
        /// Benchmark name (see `fedcluster list`).
        name: String,
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
            Command::Serve {
                config,
                listen,
                out,
                overrides,
                data_dir,
                tls_cert,
                tls_key,
                client_ca,
                token_file,
                insecure,
                join_timeout,
                round_timeout,
                min_clients,
                checkpoint,
                resume,
                overwrite,
                quiet,
            } => {
                let mut overrides = overrides;
                overrides.extend(data_dir.as_deref().map(data_dir_override));
                let tls = match (tls_cert, tls_key) {
                    (Some(cert), Some(key)) => {
                        Some(network::server_tls(&cert, &key, client_ca.as_deref())?)
                    }
                    _ if insecure => {
                        network::check_insecure(&listen.to_string(), listen.ip().is_loopback())?;
                        None
                    }
                    _ => anyhow::bail!(
                        "serve needs --tls-cert and --tls-key (or --insecure on a loopback address)"
                    ),
                };
                let options = network::ServeOptions {
                    listen,
                    tls,
                    token: token(token_file.as_deref())?,
                    join_timeout: seconds("--join-timeout", join_timeout)?,
                    round_timeout: seconds("--round-timeout", round_timeout)?,
                    min_clients,
                    checkpoint: checkpoint.unwrap_or_default(),
                    resume,
                };
                serve(&config, out, overrides, options, overwrite, quiet)
            }
            Command::Join {
                server,
                data,
                data_dir,
                ca,
                domain,
                cert,
                key,
                token_file,
                insecure,
                connect_timeout,
                crash_at_round,
            } => {
                let ids = network::parse_data_spec(&data)?;
                let tls = match ca {
                    Some(ca) => Some(network::client_tls(&ca, domain, cert.zip(key))?),
                    None if insecure => {
                        let host = server.rsplit_once(':').map_or(server.as_str(), |(h, _)| h);
                        let loopback = host == "localhost"
                            || host
                                .trim_matches(|c| c == '[' || c == ']')
                                .parse::<std::net::IpAddr>()
                                .is_ok_and(|ip| ip.is_loopback());
                        network::check_insecure(&server, loopback)?;
                        None
                    }
                    None => anyhow::bail!(
                        "join needs --ca (the CA that signed the coordinator's certificate), or --insecure for a loopback server"
                    ),
                };
                let options = fedcluster_net::JoinOptions {
                    server,
                    tls,
                    token: token(token_file.as_deref())?,
                    client_id: ids[0],
                    connect_timeout: seconds("--connect-timeout", connect_timeout)?,
                    crash_at_round,
                };
                for (id, stats) in network::join(&options, &ids, data_dir.as_deref())? {
                    eprintln!(
                        "client {id}: {} rounds, {:.1} MB down, {:.1} MB up",
                        stats.rounds,
                        stats.bytes_down as f64 / 1e6,
                        stats.bytes_up as f64 / 1e6
                    );
                }
                Ok(())
            }
            Command::Certs { out, server_names } => {
                fedcluster_cli::certs::generate(&out, &server_names)?;
                println!(
                    "wrote {} into {} (keep ca.key, server.key and client.key private)",
                    fedcluster_cli::certs::FILES.join(", "),
                    out.display()
                );
                Ok(())
            }
            Command::Bench {
                name,
                rounds,
                threads,
                data_dir,
            } => bench(&name, rounds, threads, data_dir),
            Command::List => {
                println!("reproductions (fedcluster reproduce NAME):");
                for (n, d) in EXPERIMENTS {
                    println!("  {n:28} {d}");
                }
                println!("benchmarks (fedcluster bench NAME):");
                for (n, d) in BENCHMARKS {
                    println!("  {n:28} {d}");
                }
                Ok(())
            }
        }
    }
}

/// The shared token: from `--token-file`, else `FEDCLUSTER_TOKEN`, else none.
fn token(file: Option<&std::path::Path>) -> Result<Option<String>> {
    match file {
        Some(f) => {
            let t = std::fs::read_to_string(f)
                .with_context(|| format!("cannot read token file {}", f.display()))?;
            let t = t.trim().to_string();
            anyhow::ensure!(!t.is_empty(), "token file {} is empty", f.display());
            Ok(Some(t))
        }
        None => Ok(std::env::var("FEDCLUSTER_TOKEN")
            .ok()
            .filter(|t| !t.is_empty())),
    }
}

/// A positive number of seconds.
fn seconds(flag: &str, s: f64) -> Result<std::time::Duration> {
    anyhow::ensure!(
        s.is_finite() && s > 0.0,
        "{flag} must be a positive number of seconds, got {s}"
    );
    Ok(std::time::Duration::from_secs_f64(s))
}

/// `fedcluster serve`: the coordinator of a networked run.
fn serve(
    path: &std::path::Path,
    out: Option<PathBuf>,
    overrides: Vec<String>,
    mut options: network::ServeOptions,
    overwrite: bool,
    quiet: bool,
) -> Result<()> {
    let config = RunConfig::load(path, &overrides)?;
    let stem = path
        .file_stem()
        .map_or("run".into(), |s| s.to_string_lossy().into_owned());
    let out = match out {
        Some(o) => o,
        None if options.resume => {
            anyhow::bail!("--resume needs the --out of the interrupted run")
        }
        None => free_run_dir(&stem),
    };
    if options.checkpoint.as_os_str().is_empty() {
        let mut dir = out.as_os_str().to_owned();
        dir.push(".checkpoint");
        options.checkpoint = PathBuf::from(dir);
    }
    let options = &options;
    RunDir::check_target(&out, overwrite)?;
    let dir = RunDir::create(&out, overwrite)?;
    let bar = if quiet {
        ProgressBar::hidden()
    } else {
        ProgressBar::new(config.rounds as u64)
    };
    bar.set_style(
        ProgressStyle::with_template("{bar:40} round {pos}/{len} {msg} [{elapsed_precise}]")
            .expect("template"),
    );
    let result = network::serve(
        &config,
        options,
        &mut |addr| {
            // Scripts (and the tests) read this line to find the port.
            println!("listening on {addr}");
            use std::io::Write as _;
            let _ = std::io::stdout().flush();
        },
        &mut |p| {
            bar.set_position(p.round as u64 + 1);
            if let Some(l) = p.train_loss {
                bar.set_message(format!("train loss {l:.4}"));
            }
        },
    )
    .and_then(|(outcome, stats)| Ok((write_run(&dir, &config, &outcome)?, stats)));
    bar.finish_and_clear();
    let (summary, stats) = match result {
        Ok(s) => s,
        Err(e) => {
            let partial = dir.fail(&e);
            return Err(e.context(format!("incomplete run left in {}", partial.display())));
        }
    };
    let written = dir.finish()?;
    // The run is safely written: its checkpoint is no longer needed.
    std::fs::remove_dir_all(&options.checkpoint).with_context(|| {
        format!(
            "cannot remove the checkpoint {}",
            options.checkpoint.display()
        )
    })?;
    println!(
        "{} rounds in {:.1} s; {:.1} MB down, {:.1} MB up on the wire; {} replies rejected, {} dropped",
        summary.rounds,
        summary.seconds_per_round * summary.rounds as f64,
        stats.bytes_down as f64 / 1e6,
        stats.bytes_up as f64 / 1e6,
        stats.rejected,
        stats.dropped
    );
    println!("run written to {}", written.display());
    Ok(())
}

/// The first free `runs/<stem>[-N]`.
fn free_run_dir(stem: &str) -> PathBuf {
    let base = PathBuf::from("runs").join(stem);
    (1..)
        .map(|i| {
            if i == 1 {
                base.clone()
            } else {
                PathBuf::from(format!("{}-{i}", base.display()))
            }
        })
        .find(|p| !p.exists())
        .expect("an unused name")
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
        let bar = if quiet {
            ProgressBar::hidden()
        } else {
            ProgressBar::new(config.rounds as u64)
        };
        bar.set_style(
            ProgressStyle::with_template("{bar:40} round {pos}/{len} {msg} [{elapsed_precise}]")
                .expect("template"),
        );
        let outcome = execute(&config, &data, &mut |p| {
            bar.set_position(p.round as u64 + 1);
            if let Some(l) = p.train_loss {
                bar.set_message(format!("train loss {l:.4}"));
            }
        })?;
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

fn bench(name: &str, rounds: usize, threads: usize, data_dir: Option<PathBuf>) -> Result<()> {
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
