//! The coordinator's shared state: what the gRPC service and the engine's
//! transport both see behind one mutex (sessions, the open round, the
//! counters and the record of every reply that did not count), and when a
//! client counts as silent.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use tokio::sync::Notify;
use tonic::Status;

use fedcluster_core::ClientId;

use super::CoordinatorOptions;
use crate::chunk::Assembler;
use crate::pb::Chunk;

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
    pub(super) fn reject(&mut self, round: u64, client: ClientId, reason: impl Into<String>) {
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
pub(super) struct RoundState {
    pub(super) round: u64,
    pub(super) open: bool,
    /// Each planned client's message, in hashed chunks (clients sent the
    /// same bytes share them).
    pub(super) work: HashMap<ClientId, Arc<Vec<Chunk>>>,
    pub(super) uploads: HashMap<ClientId, Assembler>,
    pub(super) replies: BTreeMap<ClientId, Vec<u8>>,
}

#[derive(Debug)]
pub(super) struct State {
    /// Session of each registered client.
    pub(super) sessions: HashMap<String, ClientId>,
    pub(super) joined: HashMap<ClientId, (String, Instant)>,
    pub(super) round: RoundState,
    pub(super) finished: bool,
    /// Rounds have been run (or replayed): a new client process joining now
    /// has lost its client's state.
    pub(super) underway: bool,
    /// Clients told the run is over (by a pull or a heartbeat).
    pub(super) told: HashSet<ClientId>,
    pub(super) stats: NetStats,
    pub(super) serial: u64,
}

pub(super) struct Shared {
    pub(super) options: CoordinatorOptions,
    pub(super) state: Mutex<State>,
    /// Wakes the engine when a reply or a client arrives.
    pub(super) changed: Condvar,
    /// Wakes long-polling pulls when a round is published or the run ends.
    pub(super) work_ready: Notify,
}

impl Shared {
    pub(super) fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Waits at most `left` for a reply or a registration.
    pub(super) fn wait<'a>(
        &self,
        state: MutexGuard<'a, State>,
        left: Duration,
    ) -> MutexGuard<'a, State> {
        self.changed
            .wait_timeout(state, left)
            .unwrap_or_else(|e| e.into_inner())
            .0
    }

    pub(super) fn client_of(&self, state: &mut State, session: &str) -> Result<ClientId, Status> {
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

/// A client unheard of for this long (three missed heartbeats of
/// [`crate::Session`]) is silent: a round stops waiting for it once every
/// other planned client has replied.
pub const SILENT_AFTER: Duration = Duration::from_secs(3 * crate::client::HEARTBEAT.as_secs());

/// Planned clients of the open round that have not replied and have not been
/// heard from (any request) for [`SILENT_AFTER`].
pub(super) fn silent_clients(state: &State) -> usize {
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
