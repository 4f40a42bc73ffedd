//! The coordinator: a gRPC service the clients pull their work from, and a
//! [`Transport`] through which the engine runs the algorithm's server half
//! exactly as it does in process.
//!
//! Each round the engine's plan is encoded once per client and published; the
//! clients pull it (long polling), compute, and push their replies in chunks.
//! The round closes when every planned client has replied or the round
//! deadline passes; it then needs at least `min_clients` replies. Replies are
//! handed to the server in client-id order, so a run with every client
//! answering is bit-identical to the in-process run of the same config and
//! seed. A reply that does not decode, holds NaN/inf, or has the wrong shape
//! for the server (which checks before it changes anything) is rejected and
//! counted; a client that did not reply in time is counted as dropped and may
//! answer later rounds.

mod service;
mod state;

use std::collections::{BTreeMap, HashMap};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use serde::Serialize;
use serde::de::DeserializeOwned;
use tokio::sync::Notify;

use fedcluster_core::{ClientId, Message, RoundCtx};
use fedcluster_sim::{EngineError, Transport, check_plan, refused_shape};

use crate::checkpoint::{ReplyLog, RoundReplies};
use crate::chunk::{MAX_MESSAGE, chunks};
use crate::pb::Chunk;
use crate::pb::federation_server::FederationServer;
use crate::security::{RequireToken, ServerTls};
use crate::{NetError, codec};

use service::Service;
pub use state::{NetStats, ReplyIssue, SILENT_AFTER};
use state::{RoundState, Shared, State, silent_clients};

/// What the coordinator needs to know before it listens.
#[derive(Debug, Clone)]
pub struct CoordinatorOptions {
    /// Address to listen on (port 0 picks a free one).
    pub listen: SocketAddr,
    /// TLS; `None` only for explicit `--insecure` loopback runs.
    pub tls: Option<ServerTls>,
    /// Shared token every call must carry (`None`: no token).
    pub token: Option<String>,
    /// The run's configuration, sent to every client that registers.
    pub config_toml: String,
    /// Clients of the run (ids `0..num_clients`).
    pub num_clients: usize,
    /// Rounds of the run.
    pub rounds: usize,
    /// How long a round waits for replies.
    pub round_timeout: Duration,
    /// Fewest replies a round may complete with.
    pub min_clients: usize,
    /// Directory of the reply log ([`crate::checkpoint`]); `None`: none.
    pub checkpoint: Option<PathBuf>,
    /// Replay the checkpoint's rounds, then carry on.
    pub resume: bool,
}

/// The coordinator: owns the gRPC server (on its own runtime) and is the
/// engine's transport.
pub struct Coordinator {
    shared: Arc<Shared>,
    log: Option<ReplyLog>,
    /// Logged rounds still to replay, by round.
    replay: Vec<Option<RoundReplies>>,
    runtime: tokio::runtime::Runtime,
    shutdown: Option<tokio::sync::oneshot::Sender<()>>,
    local_addr: SocketAddr,
}

impl Coordinator {
    /// Binds `options.listen` and starts serving.
    pub fn start(options: CoordinatorOptions) -> Result<Self, NetError> {
        if options.min_clients == 0 || options.min_clients > options.num_clients {
            return Err(NetError::Config(format!(
                "min_clients must lie in 1..={}, got {}",
                options.num_clients, options.min_clients
            )));
        }
        let (log, replay) = match (&options.checkpoint, options.resume) {
            (Some(dir), true) => {
                let (log, rounds) = ReplyLog::resume(dir, &options.config_toml, options.rounds)?;
                (Some(log), rounds.into_iter().map(Some).collect())
            }
            (Some(dir), false) => (
                Some(ReplyLog::create(dir, &options.config_toml)?),
                Vec::new(),
            ),
            (None, true) => {
                return Err(NetError::Config(
                    "--resume needs the checkpoint directory of the interrupted run".into(),
                ));
            }
            (None, false) => (None, Vec::new()),
        };
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .map_err(|e| NetError::Io(format!("runtime: {e}")))?;
        let incoming = runtime
            .block_on(async { tonic::transport::server::TcpIncoming::bind(options.listen) })
            .map_err(|e| NetError::Io(format!("cannot listen on {}: {e}", options.listen)))?
            // Small request/response calls: no Nagle delay.
            .with_nodelay(Some(true));
        let local_addr = incoming
            .local_addr()
            .map_err(|e| NetError::Io(e.to_string()))?;
        let shared = Arc::new(Shared {
            state: Mutex::new(State {
                sessions: HashMap::new(),
                joined: HashMap::new(),
                round: RoundState::default(),
                finished: false,
                underway: !replay.is_empty(),
                told: Default::default(),
                stats: NetStats::default(),
                serial: 0,
            }),
            options,
            changed: Condvar::new(),
            work_ready: Notify::new(),
        });
        let mut builder = tonic::transport::Server::builder();
        if let Some(tls) = &shared.options.tls {
            builder = builder
                .tls_config(tls.config())
                .map_err(|e| NetError::Config(format!("TLS: {e}")))?;
        }
        let service = tonic::service::interceptor::InterceptedService::new(
            FederationServer::new(Service(Arc::clone(&shared)))
                .max_decoding_message_size(MAX_MESSAGE)
                .max_encoding_message_size(MAX_MESSAGE),
            RequireToken(shared.options.token.clone()),
        );
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        let router = builder.add_service(service);
        runtime.spawn(async move {
            let _ = router
                .serve_with_incoming_shutdown(incoming, async {
                    let _ = rx.await;
                })
                .await;
        });
        Ok(Self {
            shared,
            log,
            replay,
            runtime,
            shutdown: Some(tx),
            local_addr,
        })
    }

    /// The address the coordinator listens on.
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// Blocks until every client has registered, or fails after `timeout`.
    pub fn wait_for_clients(&self, timeout: Duration) -> Result<(), NetError> {
        let deadline = Instant::now() + timeout;
        let want = self.shared.options.num_clients;
        let mut state = self.shared.lock();
        while state.joined.len() < want {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(NetError::Timeout(format!(
                    "{} of {want} clients registered in {timeout:?}",
                    state.joined.len()
                )));
            }
            // Wake at least once a second to notice clients going silent.
            state = self.shared.wait(state, left.min(Duration::from_secs(1)));
        }
        Ok(())
    }

    /// Rounds a resumed coordinator replays from its checkpoint.
    pub fn replayed_rounds(&self) -> usize {
        self.replay.len()
    }

    /// Counters so far.
    pub fn stats(&self) -> NetStats {
        self.shared.lock().stats.clone()
    }

    /// Tells the clients the run is over, waits until every joined client
    /// has heard it (at most `grace`), and stops serving.
    pub fn finish(self, grace: Duration) -> NetStats {
        self.finish_telling(grace, 0)
    }

    /// [`Coordinator::finish`], waiting until at least `clients` clients
    /// have heard it too, whether they had joined or not: a coordinator
    /// resumed after its last round needs no client, but the clients of the
    /// interrupted run are still trying to reach it, and each that registers
    /// within `grace` is told that the run is complete.
    pub fn finish_telling(mut self, grace: Duration, clients: usize) -> NetStats {
        self.shared.lock().finished = true;
        self.shared.work_ready.notify_waiters();
        let deadline = Instant::now() + grace;
        let mut state = self.shared.lock();
        while state.told.len() < state.joined.len().max(clients) {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break;
            }
            state = self.shared.wait(state, left);
        }
        drop(state);
        // The last replies are on their way out: let them leave.
        std::thread::sleep(Duration::from_millis(50).min(grace));
        self.stop();
        self.stats()
    }

    fn stop(&mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
    }

    /// Publishes a round's encoded messages and waits for the replies; returns
    /// them (in client-id order) once all planned clients replied, or at the
    /// deadline if at least `min_clients` did.
    fn collect(
        &self,
        round: u64,
        work: HashMap<ClientId, Arc<Vec<Chunk>>>,
    ) -> Result<BTreeMap<ClientId, Vec<u8>>, NetError> {
        let planned = work.len();
        let options = &self.shared.options;
        let mut state = self.shared.lock();
        state.underway = true;
        state.round = RoundState {
            round,
            open: true,
            work,
            ..RoundState::default()
        };
        drop(state);
        self.shared.work_ready.notify_waiters();
        let deadline = Instant::now() + options.round_timeout;
        let mut state = self.shared.lock();
        loop {
            let replied = state.round.replies.len();
            let left = deadline.saturating_duration_since(Instant::now());
            let enough = replied >= options.min_clients.min(planned);
            if replied == planned || (left.is_zero() && enough) {
                break;
            }
            // Every client still owing a reply has gone silent (missed its
            // heartbeats): waiting out the deadline would gain nothing.
            if enough && silent_clients(&state) == planned - replied {
                break;
            }
            if left.is_zero() {
                state.round.open = false;
                return Err(NetError::Timeout(format!(
                    "round {round}: {replied} of {planned} replies within {:?}, fewer than min_clients = {}",
                    options.round_timeout, options.min_clients
                )));
            }
            // Wake at least once a second to notice clients going silent.
            state = self.shared.wait(state, left.min(Duration::from_secs(1)));
        }
        state.round.open = false;
        state.stats.dropped += (planned - state.round.replies.len()) as u64;
        let mut missing: Vec<ClientId> = (state.round.work.keys())
            .filter(|id| !state.round.replies.contains_key(id))
            .copied()
            .collect();
        missing.sort_unstable();
        let timeout = options.round_timeout;
        state
            .stats
            .issues
            .extend(missing.into_iter().map(|client| ReplyIssue {
                round,
                client,
                outcome: "dropped",
                reason: format!("no reply within the round timeout ({timeout:?})"),
            }));
        state.round.uploads.clear();
        Ok(std::mem::take(&mut state.round.replies))
    }
}

impl Drop for Coordinator {
    fn drop(&mut self) {
        self.stop();
        // Let the server task see the shutdown before the runtime goes.
        let _ = &self.runtime;
    }
}

impl<Down, Up> Transport<Down, Up> for Coordinator
where
    Down: Serialize,
    Up: DeserializeOwned + Message,
{
    fn exchange(
        &mut self,
        ctx: &RoundCtx,
        plan: &[(ClientId, Down)],
        deliver: &mut dyn FnMut(ClientId, Up) -> Result<(), EngineError>,
    ) -> Result<(), EngineError> {
        check_plan(ctx, plan, self.shared.options.num_clients)?;
        let transport = |e: NetError| EngineError::Transport(e.to_string());
        let replies = match self.replay.get_mut(ctx.round).and_then(Option::take) {
            Some(logged) => logged,
            None => {
                let mut work = HashMap::with_capacity(plan.len());
                // Consecutive clients often get the same message (all cluster
                // models): encode it, but chunk and hash it once.
                let mut previous: Option<(Vec<u8>, Arc<Vec<Chunk>>)> = None;
                for (id, msg) in plan {
                    let bytes = codec::encode(msg).map_err(transport)?;
                    let shared = match &previous {
                        Some((last, pieces)) if *last == bytes => Arc::clone(pieces),
                        _ => {
                            let pieces = Arc::new(chunks(&bytes));
                            previous = Some((bytes, Arc::clone(&pieces)));
                            pieces
                        }
                    };
                    work.insert(*id, shared);
                }
                let replies: RoundReplies = self
                    .collect(ctx.round as u64, work)
                    .map_err(transport)?
                    .into_iter()
                    .collect();
                if let Some(log) = &self.log {
                    log.append(ctx.round, &replies).map_err(transport)?;
                }
                replies
            }
        };
        for (id, bytes) in replies {
            let refused = match codec::decode_reply::<Up>(&bytes) {
                Ok(up) => refused_shape(deliver(id, up))?,
                Err(why) => Some(why),
            };
            if let Some(reason) = refused {
                self.shared
                    .lock()
                    .stats
                    .reject(ctx.round as u64, id, reason);
            }
        }
        Ok(())
    }

    fn num_clients(&self) -> usize {
        self.shared.options.num_clients
    }
}
