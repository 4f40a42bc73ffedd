//! The seam between algorithms and transports.
//!
//! An algorithm is a [`ServerHalf`] and a [`ClientHalf`] that exchange typed
//! messages. Each round the engine asks the server for a plan (which client gets
//! which message), a transport delivers the messages and collects the replies,
//! and the server absorbs them. The server sees a client only through its replies;
//! per-client state lives in the client half. Neither half does IO or knows which
//! transport carries its messages.

use thiserror::Error;

use crate::error::CoreError;
use crate::model::{Batch, Model, Workspace};
use crate::newcomer::{LowestLoss, NewcomerRule};
use crate::rng::Rng;

/// Index of a client, `0..num_clients`.
pub type ClientId = usize;

/// What both halves know about the current round.
#[derive(Clone, Copy, Debug)]
pub struct RoundCtx {
    /// Round index, from 0.
    pub round: usize,
    /// Total number of rounds of the run.
    pub rounds: usize,
    /// Number of clients in the federation.
    pub num_clients: usize,
}

/// A message between the halves of an algorithm.
pub trait Message: Send + Sync + 'static {
    /// Bytes this message takes on the wire: 4 per `f32`, 4 per index, 8 per loss.
    fn wire_bytes(&self) -> u64;
    /// Whether every number it carries is finite; the engine rejects replies that
    /// are not, naming the round and the client.
    fn is_finite(&self) -> bool;
}

/// Errors of an algorithm's halves.
#[derive(Debug, Error)]
pub enum AlgoError {
    /// Training diverged (a non-finite loss, gradient or model).
    #[error("training diverged at round {round}{}: {detail}", client.map(|c| format!(", client {c}")).unwrap_or_default())]
    Diverged {
        round: usize,
        client: Option<ClientId>,
        detail: String,
    },
    /// A half received a message it cannot handle in its current phase.
    #[error("protocol error: {0}")]
    Protocol(String),
    /// A reply of the wrong shape (length, phase, cluster) for its round; the
    /// server rejected it before touching its state.
    #[error("protocol error: round {round}: malformed reply from client {client}")]
    Malformed { round: usize, client: ClientId },
    /// A core routine rejected its input.
    #[error(transparent)]
    Core(#[from] CoreError),
}

/// What a client half may use while handling a message: its own data, the model
/// architecture, its random stream for this round and a scratch workspace.
pub struct ClientEnv<'a> {
    /// This client's id.
    pub id: ClientId,
    /// The round, from 0 (for per-round step-size decay).
    pub round: usize,
    /// This client's local training data.
    pub data: Batch<'a>,
    /// The model architecture shared by all clients.
    pub model: &'a dyn Model,
    /// This client's stream for this round, keyed by `(seed, round, client)`.
    pub rng: Rng,
    /// Per-thread scratch space, reused across clients.
    pub ws: &'a mut Workspace,
}

/// The server half of an algorithm.
pub trait ServerHalf: Send {
    /// Server-to-client message.
    type Down: Message;
    /// Client-to-server message.
    type Up: Message;

    /// Who gets which message this round. `rng` is the server's stream for the round.
    fn plan(
        &mut self,
        ctx: &RoundCtx,
        rng: &mut Rng,
    ) -> Result<Vec<(ClientId, Self::Down)>, AlgoError>;

    /// Takes one reply of the round. Replies arrive in client-id order, one at a
    /// time, so a server keeps O(k x params) state however many clients reply.
    fn receive(
        &mut self,
        ctx: &RoundCtx,
        client: ClientId,
        reply: Self::Up,
    ) -> Result<(), AlgoError>;

    /// Ends the round after its last reply.
    fn finish(&mut self, ctx: &RoundCtx) -> Result<(), AlgoError>;

    /// Takes all replies of a round at once, in client-id order: `receive` each,
    /// then `finish`.
    fn absorb(
        &mut self,
        ctx: &RoundCtx,
        replies: Vec<(ClientId, Self::Up)>,
    ) -> Result<(), AlgoError> {
        for (client, reply) in replies {
            self.receive(ctx, client, reply)?;
        }
        self.finish(ctx)
    }

    /// The current models and assignments, for metrics.
    fn snapshot(&self) -> Snapshot<'_>;

    /// How this algorithm gives one of its models to a client it has not
    /// assigned (a new client, a client never sampled), for metrics: by
    /// default the model of lowest loss on the client's data (IFCA's rule).
    fn newcomer(&self) -> &dyn NewcomerRule {
        &LowestLoss
    }
}

/// The client half of an algorithm: one value per client, holding that client's
/// state between rounds.
pub trait ClientHalf: Send {
    /// Server-to-client message.
    type Down: Message;
    /// Client-to-server message.
    type Up: Message;

    /// Handles the round's message and produces the reply.
    fn handle(
        &mut self,
        ctx: &RoundCtx,
        msg: &Self::Down,
        env: &mut ClientEnv<'_>,
    ) -> Result<Self::Up, AlgoError>;
}

impl AlgoError {
    /// A reply of the wrong shape or kind for the round.
    pub fn malformed(round: usize, client: ClientId) -> Self {
        AlgoError::Malformed { round, client }
    }

    /// A client whose loss or update was not finite.
    pub fn client_diverged(round: usize, client: ClientId) -> Self {
        AlgoError::Diverged {
            round,
            client: Some(client),
            detail: "non-finite loss or update".into(),
        }
    }

    /// Models that are not finite after the server's aggregation.
    pub fn models_diverged(round: usize) -> Self {
        AlgoError::Diverged {
            round,
            client: None,
            detail: "non-finite model after aggregation".into(),
        }
    }
}

/// What metrics may read from a server: one view per replica (independent restart
/// run side by side; most algorithms have one) and which replica it would return.
#[derive(Debug)]
pub struct Snapshot<'a> {
    /// One view per replica.
    pub replicas: Vec<ReplicaView<'a>>,
    /// Index of the replica the algorithm would return now.
    pub selected: usize,
}

impl<'a> Snapshot<'a> {
    /// The usual snapshot: one replica whose models are `models`, `p` values
    /// each, back to back.
    pub fn single(
        models: &'a [f32],
        p: usize,
        assignment: &'a [Option<usize>],
        train_loss: Option<f64>,
    ) -> Self {
        Snapshot {
            replicas: vec![ReplicaView {
                models: models.chunks_exact(p).collect(),
                assignment,
                train_loss,
                diverged: false,
            }],
            selected: 0,
        }
    }
}

/// The models of one replica and how clients map onto them.
#[derive(Debug)]
pub struct ReplicaView<'a> {
    /// The models: one per cluster, or one per client for local training.
    pub models: Vec<&'a [f32]>,
    /// For each client, the model it is assigned to (`None` while unknown).
    pub assignment: &'a [Option<usize>],
    /// Sample-weighted mean training loss the clients reported in the last round.
    pub train_loss: Option<f64>,
    /// Whether this replica diverged and was dropped.
    pub diverged: bool,
}
