//! The joining client: registers, then pulls each round's message, runs the
//! algorithm's client half on its own data, and pushes the reply. Its raw data
//! never leave the process; only the algorithm's messages do.

use std::time::Duration;

use serde::Serialize;
use serde::de::DeserializeOwned;
use tonic::service::interceptor::InterceptedService;
use tonic::transport::{Channel, Endpoint};

use fedcluster_core::{
    Batch, ClientEnv, ClientHalf, ClientId, Model, Purpose, RoundCtx, Workspace, stream,
};

use crate::chunk::{Assembler, MAX_MESSAGE, chunks};
use crate::pb::federation_client::FederationClient;
use crate::pb::pull_reply::Status as PullStatus;
use crate::pb::{HeartbeatRequest, PullRequest, PushRequest, RegisterRequest};
use crate::security::{AttachToken, ClientTls};
use crate::{NetError, PROTOCOL_VERSION, codec};

/// How often a computing client says it is alive.
pub(crate) const HEARTBEAT: Duration = Duration::from_secs(5);

/// Where and how to join.
#[derive(Debug, Clone)]
pub struct JoinOptions {
    /// The coordinator, `host:port`.
    pub server: String,
    /// TLS; `None` only for explicit `--insecure` loopback runs.
    pub tls: Option<ClientTls>,
    /// The shared token, if the coordinator wants one.
    pub token: Option<String>,
    /// The client (data partition) this process holds.
    pub client_id: ClientId,
    /// How long to keep retrying to reach the coordinator.
    pub connect_timeout: Duration,
    /// Fault injection for tests: stop answering (as a crashed process
    /// would) once the message of this round has arrived.
    pub crash_at_round: Option<u64>,
}

type Rpc = FederationClient<InterceptedService<Channel, AttachToken>>;

/// A registered client: its connection and session.
pub struct Session {
    runtime: &'static tokio::runtime::Runtime,
    endpoint: Endpoint,
    options: JoinOptions,
    rpc: Rpc,
    session: String,
    id: ClientId,
    crash_at_round: Option<u64>,
    /// The last round answered and the reply sent, resent unchanged if a
    /// restarted coordinator asks for that round again.
    last: Option<(u64, Vec<u8>)>,
    /// The run's configuration as the coordinator sent it.
    pub config_toml: String,
}

/// What a client did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ClientStats {
    /// Rounds answered.
    pub rounds: usize,
    /// Payload bytes pulled.
    pub bytes_down: u64,
    /// Payload bytes pushed.
    pub bytes_up: u64,
}

/// The process's one Tokio runtime for every session (two workers): the
/// sessions of a `join` process share its threads instead of each starting
/// a runtime of its own (a thread pool and a heap per client).
fn shared_runtime() -> Result<&'static tokio::runtime::Runtime, NetError> {
    static RUNTIME: std::sync::OnceLock<tokio::runtime::Runtime> = std::sync::OnceLock::new();
    if let Some(runtime) = RUNTIME.get() {
        return Ok(runtime);
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| NetError::Io(format!("runtime: {e}")))?;
    Ok(RUNTIME.get_or_init(|| runtime))
}

impl Session {
    /// Connects (retrying until `options.connect_timeout`) and registers.
    pub fn join(options: &JoinOptions) -> Result<Self, NetError> {
        let runtime = shared_runtime()?;
        let host = host_of(&options.server);
        let scheme = if options.tls.is_some() {
            "https"
        } else {
            "http"
        };
        let mut endpoint = Endpoint::from_shared(format!("{scheme}://{}", options.server))
            .map_err(|e| NetError::Config(format!("server address `{}`: {e}", options.server)))?
            .connect_timeout(Duration::from_secs(5));
        if let Some(tls) = &options.tls {
            endpoint = endpoint
                .tls_config(tls.config(&host))
                .map_err(|e| NetError::Config(format!("TLS: {e}")))?;
        }
        let (rpc, session, config_toml) = register(runtime, &endpoint, options, true)?;
        Ok(Self {
            runtime,
            endpoint,
            options: options.clone(),
            rpc,
            session,
            id: options.client_id,
            crash_at_round: options.crash_at_round,
            last: None,
            config_toml,
        })
    }

    /// Connects again and registers anew (the coordinator restarted or the
    /// connection broke); a coordinator still unreachable after the connect
    /// timeout is one error saying so.
    fn rejoin(&mut self) -> Result<(), NetError> {
        let (rpc, session, _) = register(self.runtime, &self.endpoint, &self.options, false)
            .map_err(|e| match recoverable(&e) {
                true => NetError::Io(format!(
                    "no coordinator at {} for {:?}: it stopped before the run was complete \
                     (a `serve --resume` within --connect-timeout continues it) ({e})",
                    self.options.server, self.options.connect_timeout
                )),
                false => e,
            })?;
        self.rpc = rpc;
        self.session = session;
        Ok(())
    }

    /// This client's id.
    pub fn id(&self) -> ClientId {
        self.id
    }

    /// Answers rounds until the coordinator says the run is over: each round's
    /// message goes to `client` with this client's data, the model, and the
    /// stream `(seed, Client, round, id)`, exactly as in process.
    pub fn serve<C>(
        &mut self,
        client: &mut C,
        data: Batch<'_>,
        model: &dyn Model,
        seed: u64,
    ) -> Result<ClientStats, NetError>
    where
        C: ClientHalf,
        C::Down: DeserializeOwned,
        C::Up: Serialize,
    {
        let mut stats = ClientStats::default();
        let mut ws = Workspace::default();
        let mut from_round = 0u64;
        let mut heartbeat = self.spawn_heartbeat();
        let result = loop {
            let pulled = match self.pull(from_round, &mut stats) {
                Ok(p) => p,
                Err(e) if recoverable(&e) => {
                    self.rejoin()?;
                    heartbeat.abort();
                    heartbeat = self.spawn_heartbeat();
                    continue;
                }
                Err(e) => break Err(e),
            };
            let Some((round, rounds, num_clients, payload)) = pulled else {
                break Ok(stats);
            };
            if self.crash_at_round == Some(round) {
                heartbeat.abort();
                return Err(NetError::Algorithm(format!(
                    "stopped at round {round} (injected crash)"
                )));
            }
            // A restarted coordinator asking again gets the same reply, not a
            // second step of the client's state.
            let (answered, bytes) = match self.last.take() {
                Some((answered, bytes)) if answered == round => (answered, bytes),
                _ => {
                    let msg: C::Down = codec::decode(&payload)?;
                    let ctx = RoundCtx {
                        round: round as usize,
                        rounds: rounds as usize,
                        num_clients: num_clients as usize,
                    };
                    let mut env = ClientEnv {
                        id: self.id,
                        round: round as usize,
                        data,
                        model,
                        rng: stream(seed, Purpose::Client, round, self.id as u64),
                        ws: &mut ws,
                    };
                    let up = client
                        .handle(&ctx, &msg, &mut env)
                        .map_err(|e| NetError::Algorithm(format!("round {round}: {e}")))?;
                    stats.rounds += 1;
                    (round, codec::encode(&up)?)
                }
            };
            let pushed = loop {
                match self.push(round, &bytes, &mut stats) {
                    Ok(()) => break Ok(()),
                    Err(e) if recoverable(&e) => match self.rejoin() {
                        Ok(()) => {
                            heartbeat.abort();
                            heartbeat = self.spawn_heartbeat();
                        }
                        Err(e) => break Err(e),
                    },
                    Err(e) => break Err(e),
                }
            };
            self.last = Some((answered, bytes));
            if let Err(e) = pushed {
                heartbeat.abort();
                return Err(e);
            }
            // The coordinator hands out no round this client has answered,
            // unless it restarted and needs the reply again.
            from_round = round;
        };
        heartbeat.abort();
        result
    }

    /// The next round's whole message, or `None` once the run is over.
    #[allow(clippy::type_complexity)]
    fn pull(
        &mut self,
        from_round: u64,
        stats: &mut ClientStats,
    ) -> Result<Option<(u64, u64, u64, Vec<u8>)>, NetError> {
        let session = self.session.clone();
        let rpc = &mut self.rpc;
        self.runtime.block_on(async {
            let mut assembler = Assembler::default();
            let mut round = from_round;
            let mut index = 0u32;
            loop {
                let reply = rpc
                    .pull(PullRequest {
                        session: session.clone(),
                        from_round: round,
                        chunk: index,
                    })
                    .await
                    .map_err(NetError::from)?
                    .into_inner();
                match PullStatus::try_from(reply.status) {
                    Ok(PullStatus::Finished) => return Ok(None),
                    Ok(PullStatus::Wait) => {
                        // A round that closed while we assembled it: start over.
                        assembler = Assembler::default();
                        index = 0;
                        round = from_round;
                        continue;
                    }
                    Ok(PullStatus::Work) => {}
                    Err(_) => {
                        return Err(NetError::Protocol(format!(
                            "unknown pull status {}",
                            reply.status
                        )));
                    }
                }
                let piece = reply
                    .chunk
                    .ok_or_else(|| NetError::Protocol("work without a chunk".into()))?;
                stats.bytes_down += piece.data.len() as u64;
                round = reply.round;
                index += 1;
                if let Some(payload) = assembler.add(piece)? {
                    return Ok(Some((
                        reply.round,
                        reply.rounds,
                        reply.num_clients,
                        payload,
                    )));
                }
            }
        })
    }

    fn push(&mut self, round: u64, bytes: &[u8], stats: &mut ClientStats) -> Result<(), NetError> {
        let session = self.session.clone();
        let rpc = &mut self.rpc;
        self.runtime.block_on(async {
            for piece in chunks(bytes) {
                stats.bytes_up += piece.data.len() as u64;
                let reply = rpc
                    .push(PushRequest {
                        session: session.clone(),
                        round,
                        chunk: Some(piece),
                    })
                    .await
                    .map_err(NetError::from)?
                    .into_inner();
                if !reply.accepted {
                    // A late reply: the round closed without us. Carry on.
                    return Ok(());
                }
            }
            Ok(())
        })
    }

    fn spawn_heartbeat(&self) -> tokio::task::JoinHandle<()> {
        let mut rpc = self.rpc.clone();
        let session = self.session.clone();
        self.runtime.spawn(async move {
            loop {
                tokio::time::sleep(HEARTBEAT).await;
                let beat = rpc
                    .heartbeat(HeartbeatRequest {
                        session: session.clone(),
                    })
                    .await;
                if beat.map(|r| r.into_inner().finished).unwrap_or(false) {
                    break;
                }
            }
        })
    }
}

/// Whether `host:port` names this machine (`localhost` or a loopback IP).
pub fn is_loopback(server: &str) -> bool {
    let host = host_of(server);
    host == "localhost"
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

/// The host part of `host:port` (brackets of an IPv6 literal removed).
fn host_of(server: &str) -> String {
    let host = server.rsplit_once(':').map_or(server, |(h, _)| h);
    host.trim_start_matches('[')
        .trim_end_matches(']')
        .to_string()
}

/// Connects to the coordinator and registers (`fresh`: as a new process),
/// retrying on any transport error (refused, reset, a coordinator still
/// starting) until the options' connect timeout: returns the client stub, the
/// session and the run's config.
fn register(
    runtime: &tokio::runtime::Runtime,
    endpoint: &Endpoint,
    options: &JoinOptions,
    fresh: bool,
) -> Result<(Rpc, String, String), NetError> {
    let token = AttachToken::new(options.token.as_deref())?;
    let id = options.client_id;
    runtime.block_on(async {
        let deadline = tokio::time::Instant::now() + options.connect_timeout;
        loop {
            let attempt = async {
                let channel = endpoint
                    .connect()
                    .await
                    .map_err(|e| NetError::Io(format!("cannot reach {}: {e}", options.server)))?;
                let mut rpc = FederationClient::with_interceptor(channel, token.clone())
                    .max_decoding_message_size(MAX_MESSAGE)
                    .max_encoding_message_size(MAX_MESSAGE);
                let reply = rpc
                    .register(RegisterRequest {
                        client_id: u32::try_from(id).unwrap_or(u32::MAX),
                        client_id_64: id as u64,
                        protocol: PROTOCOL_VERSION,
                        fresh,
                    })
                    .await
                    .map_err(NetError::from)?
                    .into_inner();
                Ok::<_, NetError>((rpc, reply.session, reply.config_toml))
            };
            match attempt.await {
                Ok(ok) => return Ok(ok),
                Err(e) if recoverable(&e) && tokio::time::Instant::now() < deadline => {
                    tokio::time::sleep(Duration::from_millis(200)).await;
                }
                Err(e) => return Err(e),
            }
        }
    })
}

/// Errors after which a client reconnects and registers again: the
/// coordinator went away (and may come back with `--resume`) or forgot the
/// session.
fn recoverable(e: &NetError) -> bool {
    match e {
        NetError::Rpc { code, message } => {
            matches!(
                code,
                tonic::Code::Unavailable | tonic::Code::Unknown | tonic::Code::Cancelled
            ) || (*code == tonic::Code::Unauthenticated && message.contains("unknown session"))
        }
        other => other.is_retryable(),
    }
}
