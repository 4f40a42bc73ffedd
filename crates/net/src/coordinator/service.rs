//! The coordinator's gRPC service: registration, heartbeats, long-polled
//! pulls of the round's work and chunked pushes of replies, all against the
//! [`Shared`] state.

use std::sync::Arc;
use std::time::{Duration, Instant};

use tonic::{Request, Response, Status};

use fedcluster_core::ClientId;

use super::state::{ReplyIssue, Shared};
use crate::PROTOCOL_VERSION;
use crate::pb::federation_server::Federation;
use crate::pb::pull_reply::Status as PullStatus;
use crate::pb::{
    HeartbeatReply, HeartbeatRequest, PullReply, PullRequest, PushReply, PushRequest,
    RegisterReply, RegisterRequest,
};

/// How long a pull waits for work before answering `WAIT`.
const LONG_POLL: Duration = Duration::from_secs(1);

/// The gRPC service over the shared state.
pub(super) struct Service(pub(super) Arc<Shared>);

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
        // 64 bits end to end: an id above 2^32 never wraps onto another.
        let wide = if r.client_id_64 != 0 {
            r.client_id_64
        } else {
            u64::from(r.client_id)
        };
        let id = ClientId::try_from(wide).unwrap_or(ClientId::MAX);
        if id >= shared.options.num_clients {
            return Err(Status::invalid_argument(format!(
                "client {wide}: this run has clients 0..{}",
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
