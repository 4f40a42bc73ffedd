//! `fedcluster serve` and `fedcluster join`: the networked mode. The
//! coordinator runs the configured algorithm's server half through the same
//! engine and records as `fedcluster run`; each client process holds one
//! client's data and runs the client half.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, Result, bail};

use fedcluster_algorithms::{Algorithm, Checked, Setup, Visit};
use fedcluster_core::{Batch, ClientId, Model};
use fedcluster_net::{
    ClientStats, ClientTls, Coordinator, CoordinatorOptions, JoinOptions, NetStats, ReplyIssue,
    ServerTls, Session,
};

use crate::config::{RunConfig, data_dir_override};
use crate::experiment::{
    Driver, Progress, algorithm_field, build_data_set, build_model, check_starts_from,
    client_sizes, initial_models, setup,
};
use crate::outcome::Outcome;
use crate::own_clients::own_clients;

/// How the coordinator listens and whom it admits.
#[derive(Debug, Clone)]
pub struct ServeOptions {
    /// Address to listen on.
    pub listen: SocketAddr,
    /// TLS material; `None` means plaintext (loopback only).
    pub tls: Option<ServerTls>,
    /// Shared token every client must present.
    pub token: Option<String>,
    /// How long to wait for all clients to register.
    pub join_timeout: Duration,
    /// How long a round waits for replies.
    pub round_timeout: Duration,
    /// Fewest replies a round may complete with (default: every client).
    pub min_clients: Option<usize>,
    /// Where the coordinator logs every round's replies.
    pub checkpoint: PathBuf,
    /// Replay `checkpoint`'s rounds, then carry on.
    pub resume: bool,
    /// Fault injection (tests): exit with status 137, as if killed, once this
    /// many rounds are logged.
    pub crash_after_round: Option<usize>,
}

/// Most bytes a PEM file may hold (a long certificate chain is a few KB).
const MAX_PEM_BYTES: u64 = 1 << 20;

/// What a PEM file must hold.
#[derive(Clone, Copy)]
enum Pem {
    /// One or more certificates.
    Certificates,
    /// A private key.
    Key,
}

/// A certificate and its private key (PEM), read and checked to belong
/// together: the certificate's public key is the key's (TLS itself would
/// report a mismatch only as "transport error" at the first connection).
fn identity_pem(cert: &Path, key: &Path) -> Result<(Vec<u8>, Vec<u8>)> {
    use rustls_pki_types::CertificateDer;
    use rustls_pki_types::pem::PemObject as _;
    let (cert_pem, key_pem) = (read_pem(cert, Pem::Certificates)?, read_pem(key, Pem::Key)?);
    // A key that rcgen cannot read (a kind it does not sign with) is left to TLS.
    let public = std::str::from_utf8(&key_pem)
        .ok()
        .and_then(|text| rcgen::KeyPair::from_pem(text).ok())
        .map(|pair| rcgen::PublicKeyData::subject_public_key_info(&pair));
    let leaf = CertificateDer::pem_slice_iter(&cert_pem)
        .next()
        .and_then(|c| c.ok());
    if let (Some(public), Some(leaf)) = (public, leaf)
        && !leaf.windows(public.len()).any(|w| w == public.as_slice())
    {
        bail!(
            "{} is not the private key of {}: the certificate holds another public key",
            key.display(),
            cert.display()
        );
    }
    Ok((cert_pem, key_pem))
}

/// Reads a PEM file and checks that it holds what `kind` says, naming the
/// file on failure (TLS itself would report only "transport error").
fn read_pem(path: &Path, kind: Pem) -> Result<Vec<u8>> {
    use rustls_pki_types::pem::PemObject as _;
    use rustls_pki_types::{CertificateDer, PrivateKeyDer};
    use std::io::Read as _;
    let mut bytes = Vec::new();
    std::fs::File::open(path)
        .and_then(|f| f.take(MAX_PEM_BYTES + 1).read_to_end(&mut bytes))
        .with_context(|| format!("cannot read {}", path.display()))?;
    if bytes.len() as u64 > MAX_PEM_BYTES {
        bail!(
            "{}: larger than {MAX_PEM_BYTES} bytes, not a PEM file",
            path.display()
        );
    }
    let found = match kind {
        Pem::Certificates => {
            let certs: Result<Vec<_>, _> = CertificateDer::pem_slice_iter(&bytes).collect();
            certs.map(|c| !c.is_empty())
        }
        Pem::Key => PrivateKeyDer::from_pem_slice(&bytes).map(|_| true),
    };
    match found {
        Ok(true) => Ok(bytes),
        Ok(false) | Err(rustls_pki_types::pem::Error::NoItemsFound) => bail!(
            "{}: holds no PEM {}",
            path.display(),
            match kind {
                Pem::Certificates => "certificate",
                Pem::Key => "private key",
            }
        ),
        Err(e) => bail!("{}: not valid PEM: {e}", path.display()),
    }
}

/// TLS for the coordinator from PEM files (`client_ca` turns on mutual TLS).
pub fn server_tls(cert: &Path, key: &Path, client_ca: Option<&Path>) -> Result<ServerTls> {
    let (cert_pem, key_pem) = identity_pem(cert, key)?;
    Ok(ServerTls {
        cert_pem,
        key_pem,
        client_ca_pem: client_ca
            .map(|ca| read_pem(ca, Pem::Certificates))
            .transpose()?,
    })
}

/// Plaintext is for loopback demos only.
pub fn check_insecure(listen_or_server: &str, loopback: bool) -> Result<()> {
    if !loopback {
        bail!(
            "--insecure sends models in the clear: only loopback addresses are allowed, got {listen_or_server}"
        );
    }
    Ok(())
}

/// Runs `config` as the coordinator: waits for its clients, runs every round
/// through them, and returns the records (as `run` would) and the wire counters.
/// `ready` is called once the clients have joined and the server half is
/// built, just before the first round (so a config that cannot run leaves no
/// run directory).
pub fn serve(
    config: &RunConfig,
    options: &ServeOptions,
    on_listening: &mut dyn FnMut(SocketAddr),
    ready: &mut dyn FnMut() -> Result<()>,
    progress: &mut dyn FnMut(Progress),
) -> Result<(Outcome, NetStats)> {
    let data_set = build_data_set(config)?;
    let data = data_set.view();
    let model = build_model(config, &data)?;
    let driver = Driver::new(config, &data, model.as_ref())?;
    let m = data.train.num_clients();
    let min_clients = options.min_clients.unwrap_or(m);
    if min_clients == 0 || min_clients > m {
        bail!("--min-clients must lie in 1..={m} (the config's clients), got {min_clients}");
    }
    let coordinator = Coordinator::start(CoordinatorOptions {
        listen: options.listen,
        tls: options.tls.clone(),
        token: options.token.clone(),
        config_toml: config.to_toml()?,
        num_clients: m,
        rounds: config.rounds,
        round_timeout: options.round_timeout,
        min_clients,
        checkpoint: Some(options.checkpoint.clone()),
        resume: options.resume,
    })?;
    on_listening(coordinator.local_addr());
    if options.resume {
        eprintln!(
            "resuming: replaying {} finished rounds from {}",
            coordinator.replayed_rounds(),
            options.checkpoint.display()
        );
    }
    // A coordinator resumed after its last round needs no client: every
    // round is replayed from its log.
    let needs_clients = coordinator.replayed_rounds() < config.rounds;
    if needs_clients {
        coordinator.wait_for_clients(options.join_timeout)?;
    }
    let sizes = client_sizes(&data);
    let initial = initial_models(config, model.as_ref())?;
    let mut run = CoordinatorRun {
        driver,
        setup: setup(config, &data, model.as_ref(), &sizes, initial.as_deref()),
        coordinator,
        ready,
        progress: &mut |p| {
            progress(p);
            if options.crash_after_round == Some(p.round + 1) {
                std::process::exit(137);
            }
        },
    };
    let outcome = config
        .algorithm
        .visit(&mut run)
        .map_err(algorithm_field)??;
    let stats = match needs_clients {
        true => run.coordinator.finish(Duration::from_millis(1500)),
        // The interrupted run's clients, retrying to reach it, hear that the
        // run is complete and exit, instead of waiting out their timeout.
        false => run.coordinator.finish_telling(COMPLETE_GRACE, m),
    };
    Ok((outcome, stats))
}

/// How long a coordinator that needed no client stays to tell the clients of
/// the run it resumed that the run is complete (they retry every 200 ms); a
/// `serve --resume` whose clients are gone ends this much later.
const COMPLETE_GRACE: Duration = Duration::from_secs(3);

/// `replies.csv` of a networked run: every planned reply that did not reach
/// the server, `round,client,outcome,reason` (round from 0, as in
/// `metrics.csv`; outcome `dropped` or `rejected`); the header alone when
/// every reply counted.
pub fn replies_csv(issues: &[ReplyIssue]) -> String {
    let mut out = String::from("round,client,outcome,reason\n");
    for i in issues {
        let reason = i.reason.replace('"', "\"\"");
        out.push_str(&format!(
            "{},{},{},\"{reason}\"\n",
            i.round, i.client, i.outcome
        ));
    }
    out
}

/// The coordinator: the server half only, its clients across the network.
struct CoordinatorRun<'a, 'p> {
    driver: Driver<'a>,
    setup: Setup<'a>,
    coordinator: Coordinator,
    ready: &'p mut dyn FnMut() -> Result<()>,
    progress: &'p mut dyn FnMut(Progress),
}

impl Visit for &mut CoordinatorRun<'_, '_> {
    type Output = Result<Outcome>;
    fn visit<A: Algorithm>(self, config: Checked<A::Config>) -> Result<Outcome> {
        check_starts_from::<A>(self.driver.config, &self.setup)?;
        let server = A::server(config, &self.setup).map_err(algorithm_field)?;
        (self.ready)()?;
        self.driver
            .drive(server, &mut self.coordinator, self.progress)
    }
}

/// The most clients one `fedcluster join` process answers for (a connection
/// and a thread each).
pub const MAX_JOINED_CLIENTS: usize = 10_000;

/// Which clients a joining process holds: `partition:ID`, the ID-th client
/// of the data set the coordinator's config describes, or `partition:A-B`,
/// clients A to B (each on its own thread and connection).
pub fn parse_data_spec(spec: &str) -> Result<Vec<ClientId>> {
    let Some(ids) = spec.strip_prefix("partition:") else {
        bail!(
            "--data `{spec}`: expected partition:ID or partition:A-B (clients of the run's data set)"
        );
    };
    let id = |text: &str| -> Result<ClientId> {
        text.trim()
            .parse()
            .with_context(|| format!("--data `{spec}`: `{text}` is not a client id"))
    };
    match ids.split_once('-') {
        None => Ok(vec![id(ids)?]),
        Some((a, b)) => {
            let (a, b) = (id(a)?, id(b)?);
            if a > b {
                bail!("--data `{spec}`: the range {a}-{b} is empty");
            }
            // Checked before a list of ids is allocated: each id is a
            // connection and a thread of this process.
            if b - a >= MAX_JOINED_CLIENTS {
                bail!(
                    "--data `{spec}`: {} clients, above the limit of {MAX_JOINED_CLIENTS} per \
                     joining process (start several processes)",
                    (b - a) as u128 + 1
                );
            }
            Ok((a..=b).collect())
        }
    }
}

/// Joins a coordinator as the clients `ids` (one connection and thread each,
/// sharing this process's copy of the data) and answers their rounds until the
/// run ends. `data_dir` replaces the config's `data.data_dir` (the files on
/// this machine); the clients' memory is checked against `max_memory`
/// (`--max-memory`, else the machine's) before their data is built.
pub fn join(
    options: &JoinOptions,
    ids: &[ClientId],
    data_dir: Option<&Path>,
    max_memory: Option<u64>,
) -> Result<Vec<(ClientId, ClientStats)>> {
    let Some(&first_id) = ids.first() else {
        bail!("no client to join as");
    };
    let with_id = |id| JoinOptions {
        client_id: id,
        ..options.clone()
    };
    let first = Session::join(&with_id(first_id))?;
    let overrides: Vec<String> = data_dir.map(data_dir_override).into_iter().collect();
    let config = RunConfig::parse(&first.config_toml, &overrides, "the coordinator's config")?;
    if let Some(declared) = crate::memory::declared_data(&config) {
        crate::memory::check(&declared, max_memory)?;
    }
    // Only this process's clients: never the others, the test set or the truth.
    let data = own_clients(&config, ids)?;
    let model = config.model.build(&data.input)?;
    crate::memory::check(
        &crate::memory::joined(&config, &data, model.as_ref()),
        max_memory,
    )?;
    let (config, data, model) = (&config, &data, model.as_ref());
    let mut first = Some(first);
    std::thread::scope(|scope| {
        let threads: Vec<_> = ids
            .iter()
            .enumerate()
            .map(|(i, &id)| {
                let joined = first.take();
                let options = with_id(id);
                scope.spawn(move || -> Result<(ClientId, ClientStats)> {
                    let mut session = match joined {
                        Some(s) => s,
                        None => Session::join(&options)?,
                    };
                    let run = ClientRun {
                        session: &mut session,
                        data: data.batch(i),
                        model,
                        seed: config.seed,
                    };
                    Ok((id, config.algorithm.visit(run).map_err(algorithm_field)??))
                })
            })
            .collect();
        threads
            .into_iter()
            .map(|t| {
                t.join()
                    .unwrap_or_else(|_| Err(anyhow::anyhow!("a client thread panicked")))
            })
            .collect()
    })
}

/// One networked client: the client half only, never a server.
struct ClientRun<'a, 's> {
    session: &'s mut Session,
    data: Batch<'a>,
    model: &'a dyn Model,
    seed: u64,
}

impl Visit for ClientRun<'_, '_> {
    type Output = Result<ClientStats>;
    fn visit<A: Algorithm>(self, config: Checked<A::Config>) -> Result<ClientStats> {
        let mut client = A::client(&config);
        Ok(self
            .session
            .serve(&mut client, self.data, self.model, self.seed)?)
    }
}

/// A TLS client config from PEM files.
pub fn client_tls(
    ca: &Path,
    domain: Option<String>,
    identity: Option<(PathBuf, PathBuf)>,
) -> Result<ClientTls> {
    Ok(ClientTls {
        ca_pem: read_pem(ca, Pem::Certificates)?,
        domain,
        identity: identity.map(|(c, k)| identity_pem(&c, &k)).transpose()?,
    })
}
