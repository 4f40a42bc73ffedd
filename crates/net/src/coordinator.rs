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

use std::collections::{BTreeMap, HashMap};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use serde::Serialize;
use serde::de::DeserializeOwned;
use tokio::sync::Notify;
use tonic::{Request, Response, Status};

use fedcluster_core::{AlgoError, ClientId, Message, RoundCtx};
use fedcluster_sim::{EngineError, Transport, check_plan};

use crate::checkpoint::{ReplyLog, RoundReplies};
use crate::chunk::{Assembler, MAX_MESSAGE, chunks};
use crate::pb::Chunk;
use crate::pb::federation_server::{Federation, FederationServer};
use crate::pb::pull_reply::Status as PullStatus;
use crate::pb::{
    HeartbeatReply, HeartbeatRequest, PullReply, PullRequest, PushReply, PushRequest,
    RegisterReply, RegisterRequest,
};
use crate::security::{RequireToken, ServerTls};
use crate::{NetError, PROTOCOL_VERSION, codec};

/// How long a pull waits for work before answering `WAIT`.
const LONG_POLL: Duration = Duration::from_secs(1);

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

/// A planned reply that did not reach the server: which round (from 0, as
/// the engine counts), which client, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReplyIssue {
    /// The round, from 0.
    pub round: u64,
    /// The client.
    pub client: ClientId,
    /// `dropped` (no reply before the round closed), `rejected`, or
    /// `restarted` (a new process joined mid-run: its client's state is lost).
    pub outcome: &'static str,
    /// Why.
    pub reason: String,
}

/// Counters of what crossed the wire, and every reply that did not count.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NetStats {
    /// Replies (or chunks of them) refused: bad hash, wrong round,
    /// undecodable, NaN/inf, wrong shape.
    pub rejected: u64,
    /// Planned replies that did not arrive before their round closed.
    pub dropped: u64,
    /// Client processes that joined anew mid-run (their state lost).
    pub restarted: u64,
    /// Payload bytes sent to clients (chunks pulled).
    pub bytes_down: u64,
    /// Payload bytes received from clients (chunks pushed).
    pub bytes_up: u64,
    /// Every dropped or rejected reply, in the order they happened.
    pub issues: Vec<ReplyIssue>,
}

impl NetStats {
    /// Counts a rejected reply of `client` in `round`.
    fn reject(&mut self, round: u64, client: ClientId, reason: impl Into<String>) {
        self.rejected += 1;
        self.issues.push(ReplyIssue {
            round,
            client,
            outcome: "rejected",
            reason: reason.into(),
        });
    }
}

/// One round's messages and replies.
#[derive(Debug, Default)]
struct RoundState {
    round: u64,
    open: bool,
    /// Each planned client's message, in hashed chunks (clients sent the
    /// same bytes share them).
    work: HashMap<ClientId, Arc<Vec<Chunk>>>,
    uploads: HashMap<ClientId, Assembler>,
    replies: BTreeMap<ClientId, Vec<u8>>,
}

#[derive(Debug)]
struct State {
    /// Session of each registered client.
    sessions: HashMap<String, ClientId>,
    joined: HashMap<ClientId, (String, Instant)>,
    round: RoundState,
    finished: bool,
    /// Rounds have been run (or replayed): a new client process joining now
    /// has lost its client's state.
    underway: bool,
    /// Clients told the run is over (by a pull or a heartbeat).
    told: std::collections::HashSet<ClientId>,
    stats: NetStats,
    serial: u64,
}

struct Shared {
    options: CoordinatorOptions,
    state: Mutex<State>,
    /// Wakes the engine when a reply or a client arrives.
    changed: Condvar,
    /// Wakes long-polling pulls when a round is published or the run ends.
    work_ready: Notify,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Waits at most `left` for a reply or a registration.
    fn wait<'a>(&self, state: MutexGuard<'a, State>, left: Duration) -> MutexGuard<'a, State> {
        self.changed
            .wait_timeout(state, left)
            .unwrap_or_else(|e| e.into_inner())
            .0
    }

    fn client_of(&self, state: &mut State, session: &str) -> Result<ClientId, Status> {
        let id = *state
            .sessions
            .get(session)
            .ok_or_else(|| Status::unauthenticated("unknown session: register first"))?;
        if let Some(j) = state.joined.get_mut(&id) {
            j.1 = Instant::now();
        }
        Ok(id)
    }
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
                let (log, rounds) = ReplyLog::resume(dir, &options.config_toml)?;
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
    pub fn finish(mut self, grace: Duration) -> NetStats {
        self.shared.lock().finished = true;
        self.shared.work_ready.notify_waiters();
        let deadline = Instant::now() + grace;
        let mut state = self.shared.lock();
        while state.told.len() < state.joined.len() {
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

/// A client unheard of for this long (three missed heartbeats of
/// [`crate::Session`]) is silent: a round stops waiting for it once every
/// other planned client has replied.
pub const SILENT_AFTER: Duration = Duration::from_secs(3 * crate::client::HEARTBEAT.as_secs());

/// Planned clients of the open round that have not replied and have not been
/// heard from (any request) for [`SILENT_AFTER`].
fn silent_clients(state: &State) -> usize {
    let round = &state.round;
    round
        .work
        .keys()
        .filter(|id| !round.replies.contains_key(id))
        .filter(|id| {
            state
                .joined
                .get(id)
                .is_none_or(|(_, seen)| seen.elapsed() >= SILENT_AFTER)
        })
        .count()
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
            let refused = match codec::decode::<Up>(&bytes) {
                Ok(up) if up.is_finite() => match deliver(id, up) {
                    // The server refused its shape before touching its state.
                    Err(EngineError::Server {
                        error: e @ AlgoError::Malformed { .. },
                        ..
                    }) => Some(e.to_string()),
                    other => other.map(|()| None)?,
                },
                Ok(_) => Some("non-finite values (NaN or infinity)".to_string()),
                Err(e) => Some(format!("undecodable: {e}")),
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

/// The gRPC service over the shared state.
struct Service(Arc<Shared>);

#[tonic::async_trait]
impl Federation for Service {
    async fn register(
        &self,
        request: Request<RegisterRequest>,
    ) -> Result<Response<RegisterReply>, Status> {
        let r = request.into_inner();
        let shared = &self.0;
        if r.protocol != PROTOCOL_VERSION {
            return Err(Status::failed_precondition(format!(
                "protocol {} is not spoken here (version {PROTOCOL_VERSION})",
                r.protocol
            )));
        }
        let id = r.client_id as ClientId;
        if id >= shared.options.num_clients {
            return Err(Status::invalid_argument(format!(
                "client {id}: this run has clients 0..{}",
                shared.options.num_clients
            )));
        }
        let mut state = shared.lock();
        if r.fresh && state.underway {
            let round = state.round.round;
            state.stats.restarted += 1;
            state.stats.issues.push(ReplyIssue {
                round,
                client: id,
                outcome: "restarted",
                reason: "a new process joined mid-run: the client's own state (optimizer \
                         moments, importance weights, local model) starts over"
                    .into(),
            });
        }
        state.serial += 1;
        let session = format!("{id}-{}-{:x}", state.serial, nanos());
        // A client that registers again (restarted) replaces its old session.
        if let Some((old, _)) = state.joined.insert(id, (session.clone(), Instant::now())) {
            state.sessions.remove(&old);
        }
        state.sessions.insert(session.clone(), id);
        drop(state);
        shared.changed.notify_all();
        Ok(Response::new(RegisterReply {
            session,
            config_toml: shared.options.config_toml.clone(),
        }))
    }

    async fn heartbeat(
        &self,
        request: Request<HeartbeatRequest>,
    ) -> Result<Response<HeartbeatReply>, Status> {
        let mut state = self.0.lock();
        let id = self.0.client_of(&mut state, &request.get_ref().session)?;
        if state.finished {
            state.told.insert(id);
            self.0.changed.notify_all();
        }
        Ok(Response::new(HeartbeatReply {
            finished: state.finished,
        }))
    }

    async fn pull(&self, request: Request<PullRequest>) -> Result<Response<PullReply>, Status> {
        let r = request.into_inner();
        let shared = &self.0;
        for attempt in 0..2 {
            let notified = shared.work_ready.notified();
            {
                let mut state = shared.lock();
                let id = shared.client_of(&mut state, &r.session)?;
                let reply = |status: PullStatus, round: u64, chunk| PullReply {
                    status: status as i32,
                    round,
                    rounds: shared.options.rounds as u64,
                    num_clients: shared.options.num_clients as u64,
                    chunk,
                };
                if state.finished {
                    state.told.insert(id);
                    shared.changed.notify_all();
                    return Ok(Response::new(reply(PullStatus::Finished, 0, None)));
                }
                let round = &state.round;
                let pending =
                    round.open && round.round >= r.from_round && !round.replies.contains_key(&id);
                if let Some(pieces) = round.work.get(&id).filter(|_| pending) {
                    let number = round.round;
                    let piece = pieces.get(r.chunk as usize).cloned().ok_or_else(|| {
                        Status::out_of_range(format!("no chunk {} in this message", r.chunk))
                    })?;
                    state.stats.bytes_down += piece.data.len() as u64;
                    return Ok(Response::new(reply(PullStatus::Work, number, Some(piece))));
                }
                if attempt == 1 {
                    return Ok(Response::new(reply(PullStatus::Wait, 0, None)));
                }
            }
            let _ = tokio::time::timeout(LONG_POLL, notified).await;
        }
        unreachable!("the second attempt always answers")
    }

    async fn push(&self, request: Request<PushRequest>) -> Result<Response<PushReply>, Status> {
        let r = request.into_inner();
        let shared = &self.0;
        let mut state = shared.lock();
        let id = shared.client_of(&mut state, &r.session)?;
        let refuse = |reason: String| {
            Ok(Response::new(PushReply {
                accepted: false,
                reason,
            }))
        };
        if state.round.round != r.round {
            // Not the current round at all: a broken or hostile client.
            let why = format!(
                "round {} is not the current round {}",
                r.round, state.round.round
            );
            let current = state.round.round;
            state.stats.reject(current, id, why.clone());
            return refuse(why);
        }
        let round = &mut state.round;
        if !round.open || !round.work.contains_key(&id) {
            return refuse(format!(
                "round {} is not open for client {id} (late or stale reply)",
                r.round
            ));
        }
        if round.replies.contains_key(&id) {
            return refuse(format!("round {}: client {id} already replied", r.round));
        }
        let Some(piece) = r.chunk else {
            return refuse("no chunk".into());
        };
        let size = piece.data.len() as u64;
        let added = round.uploads.entry(id).or_default().add(piece);
        match added {
            Err(e) => {
                round.uploads.remove(&id);
                let current = round.round;
                state.stats.reject(current, id, e.to_string());
                refuse(e.to_string())
            }
            Ok(done) => {
                if let Some(bytes) = done {
                    round.uploads.remove(&id);
                    round.replies.insert(id, bytes);
                }
                state.stats.bytes_up += size;
                drop(state);
                shared.changed.notify_all();
                Ok(Response::new(PushReply {
                    accepted: true,
                    reason: String::new(),
                }))
            }
        }
    }
}

fn nanos() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0)
}
