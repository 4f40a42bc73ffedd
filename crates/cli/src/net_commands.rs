//! The networked mode's commands: `fedcluster serve`, `join` and `certs`.

use std::net::SocketAddr;
use std::path::PathBuf;

use anyhow::{Context, Result};

use crate::progress::RoundProgress;
use fedcluster_run::config::{RunConfig, data_dir_override};
use fedcluster_run::network;
use fedcluster_run::rundir::{Extras, RunDir, free_run_dir, sibling, write_run};

/// `fedcluster serve`'s arguments.
#[derive(Debug, clap::Args)]
pub struct ServeArgs {
    /// Config file (the same as for `run`).
    pub config: PathBuf,
    /// Address to listen on.
    #[arg(long, default_value = "0.0.0.0:7878")]
    pub listen: SocketAddr,
    /// Run directory to write (default: the first free runs/<config name>[-N]).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Override a config value, e.g. --set rounds=20.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub overrides: Vec<String>,
    /// Directory of the real data set's files (test data and ground truth;
    /// overrides `data.data_dir`; without either: $FEDCLUSTER_DATA/<name>,
    /// else data/<name>).
    #[arg(long)]
    pub data_dir: Option<PathBuf>,
    /// The coordinator's certificate chain (PEM).
    #[arg(long, requires = "tls_key")]
    pub tls_cert: Option<PathBuf>,
    /// The coordinator's private key (PEM).
    #[arg(long, requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,
    /// Demand client certificates signed by this CA (mutual TLS).
    #[arg(long, requires = "tls_cert")]
    pub client_ca: Option<PathBuf>,
    /// File holding the shared token clients must present (or set FEDCLUSTER_TOKEN).
    #[arg(long)]
    pub token_file: Option<PathBuf>,
    /// Plaintext, for loopback demos only.
    #[arg(long, conflicts_with_all = ["tls_cert", "client_ca"])]
    pub insecure: bool,
    /// Seconds to wait for every client to register.
    #[arg(long, default_value_t = 300.0)]
    pub join_timeout: f64,
    /// Seconds a round waits for replies.
    #[arg(long, default_value_t = 600.0)]
    pub round_timeout: f64,
    /// Fewest replies a round may complete with (default: every client).
    #[arg(long)]
    pub min_clients: Option<usize>,
    /// Directory of the checkpoint (every round's replies; default <out>.checkpoint).
    #[arg(long)]
    pub checkpoint: Option<PathBuf>,
    /// Continue an interrupted run from its checkpoint (same config and --out).
    #[arg(long)]
    pub resume: bool,
    /// Replace an existing run directory.
    #[arg(long)]
    pub overwrite: bool,
    /// No progress bar.
    #[arg(long, short)]
    pub quiet: bool,
    /// Refuse the run when the memory its data set declares exceeds SIZE
    /// (e.g. 2G; default: the memory the machine has).
    #[arg(long, value_name = "SIZE", value_parser = fedcluster_run::memory::parse_size)]
    pub max_memory: Option<u64>,
    /// Fault injection (tests): exit as if killed once round R is logged.
    #[arg(long, hide = true)]
    pub crash_after_round: Option<usize>,
}

/// `fedcluster join`'s arguments.
#[derive(Debug, clap::Args)]
pub struct JoinArgs {
    /// The coordinator, host:port.
    #[arg(long)]
    pub server: String,
    /// Which clients this process holds: partition:ID (the ID-th client of the
    /// run's data set) or partition:A-B (clients A to B, a connection each).
    #[arg(long)]
    pub data: String,
    /// Directory of the real data set's files on this machine (overrides
    /// `data.data_dir`; without either: $FEDCLUSTER_DATA/<name>, else
    /// data/<name>, on this machine).
    #[arg(long)]
    pub data_dir: Option<PathBuf>,
    /// CA certificate that signed the coordinator's (PEM).
    #[arg(long)]
    pub ca: Option<PathBuf>,
    /// Name on the coordinator's certificate (default: the server's host).
    #[arg(long, requires = "ca")]
    pub domain: Option<String>,
    /// This client's certificate (PEM), for mutual TLS.
    #[arg(long, requires_all = ["key", "ca"])]
    pub cert: Option<PathBuf>,
    /// This client's private key (PEM).
    #[arg(long, requires = "cert")]
    pub key: Option<PathBuf>,
    /// File holding the shared token (or set FEDCLUSTER_TOKEN).
    #[arg(long)]
    pub token_file: Option<PathBuf>,
    /// Plaintext, for loopback demos only.
    #[arg(long, conflicts_with = "ca")]
    pub insecure: bool,
    /// Seconds to keep trying to reach the coordinator.
    #[arg(long, default_value_t = 60.0)]
    pub connect_timeout: f64,
    /// Refuse to join when this process's clients would need more memory than
    /// SIZE (e.g. 2G; default: the memory the machine has).
    #[arg(long, value_name = "SIZE", value_parser = fedcluster_run::memory::parse_size)]
    pub max_memory: Option<u64>,
    /// Fault injection (tests): stop answering once round R's message arrives.
    #[arg(long, hide = true)]
    pub crash_at_round: Option<u64>,
}

/// `fedcluster certs`'s arguments.
#[derive(Debug, clap::Args)]
pub struct CertsArgs {
    /// Directory to write ca.pem, ca.key, server.pem, server.key, client.pem, client.key.
    #[arg(long)]
    pub out: PathBuf,
    /// A name the coordinator is reached by: DNS name or IP address (repeatable).
    #[arg(long = "server-name", default_values_t = ["localhost".to_string(), "127.0.0.1".to_string()])]
    pub server_names: Vec<String>,
    /// Replace existing certificates (and the CA: every certificate it signed
    /// stops being trusted).
    #[arg(long)]
    pub overwrite: bool,
}

/// `fedcluster serve`: the coordinator of a networked run.
pub fn serve(args: ServeArgs) -> Result<()> {
    let ServeArgs {
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
        crash_after_round,
        quiet,
        max_memory,
    } = args;
    let mut overrides = overrides;
    overrides.extend(data_dir.as_deref().map(data_dir_override));
    let tls = match (tls_cert, tls_key) {
        (Some(cert), Some(key)) => Some(network::server_tls(&cert, &key, client_ca.as_deref())?),
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
        crash_after_round,
    };
    let output = (overwrite, quiet, max_memory);
    serve_run(&config, out, overrides, options, output)
}

/// `fedcluster join`: one or more clients of a networked run.
pub fn join(args: JoinArgs) -> Result<()> {
    let JoinArgs {
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
        max_memory,
        crash_at_round,
    } = args;
    let ids = network::parse_data_spec(&data)?;
    let tls = match ca {
        Some(ca) => Some(network::client_tls(&ca, domain, cert.zip(key))?),
        None if insecure => {
            network::check_insecure(&server, fedcluster_net::client::is_loopback(&server))?;
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
    for (id, stats) in network::join(&options, &ids, data_dir.as_deref(), max_memory)? {
        eprintln!(
            "client {id}: {} rounds, {:.1} MB down, {:.1} MB up",
            stats.rounds,
            stats.bytes_down as f64 / 1e6,
            stats.bytes_up as f64 / 1e6
        );
    }
    eprintln!("the run at {} is complete", options.server);
    Ok(())
}

/// `fedcluster certs`: a private CA and certificates.
pub fn certs(args: CertsArgs) -> Result<()> {
    crate::certs::generate(&args.out, &args.server_names, args.overwrite)?;
    println!(
        "wrote {} into {} (keep ca.key, server.key and client.key private)",
        crate::certs::FILES.join(", "),
        args.out.display()
    );
    Ok(())
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
fn serve_run(
    path: &std::path::Path,
    out: Option<PathBuf>,
    overrides: Vec<String>,
    mut options: network::ServeOptions,
    (overwrite, quiet, max_memory): (bool, bool, Option<u64>),
) -> Result<()> {
    let config = RunConfig::load(path, &overrides)?;
    if let Some(declared) = fedcluster_run::memory::declared_data(&config) {
        fedcluster_run::memory::check(&declared, max_memory)?;
    }
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
    let reserved = RunDir::reserve(&out, overwrite)?;
    if options.checkpoint.as_os_str().is_empty() {
        options.checkpoint = sibling(reserved.path(), "checkpoint");
    }
    let options = &options;
    let progress = RoundProgress::start(&out.display().to_string(), config.rounds, quiet);
    let ((summary, stats), written) = reserved.run_into(
        |ready| {
            let served = network::serve(
                &config,
                options,
                &mut |addr| {
                    // Scripts (and the tests) read this line to find the port.
                    println!("listening on {addr}");
                    use std::io::Write as _;
                    let _ = std::io::stdout().flush();
                },
                ready,
                &mut |p| progress.show(p),
            );
            progress.finish();
            served
        },
        |dir, (outcome, stats)| {
            let summary = write_run(dir, &config, &outcome, Extras::ALL)?;
            dir.write("replies.csv", &network::replies_csv(&stats.issues))?;
            Ok((summary, stats))
        },
    )?;
    // The run is safely written: its checkpoint is no longer needed.
    std::fs::remove_dir_all(&options.checkpoint).with_context(|| {
        format!(
            "cannot remove the checkpoint {}",
            options.checkpoint.display()
        )
    })?;
    println!(
        "{} rounds in {:.1} s; {:.1} MB down, {:.1} MB up on the wire (payload measured: {} and {} bytes); {} replies rejected, {} dropped, {} client processes restarted",
        summary.rounds,
        summary.seconds_per_round * summary.rounds as f64,
        stats.bytes_down as f64 / 1e6,
        stats.bytes_up as f64 / 1e6,
        stats.bytes_down,
        stats.bytes_up,
        stats.rejected,
        stats.dropped,
        stats.restarted
    );
    println!("run written to {}", written.display());
    Ok(())
}
