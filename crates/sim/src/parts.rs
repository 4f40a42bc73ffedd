//! A round exchanged in parts, so that a run can checkpoint between them: a
//! round that takes hours (every client scoring every other client's model,
//! say) need not start again from its beginning when the run is killed.
//!
//! Before each round's plan the engine asks [`Parts::split`] whether to split
//! it (the run decides, and checkpoints the round's start if it has not). A split round sends its plan to the transport a slice
//! at a time, in plan order, and calls [`Parts::part_done`] after every slice
//! but the last, with the server as it stands then. Splitting changes nothing
//! in the results: every client computes from its own half, message, data and
//! stream, and the server takes the replies one at a time in client-id order
//! either way.
//!
//! A round interrupted between parts resumes from three things: the server as
//! the round started (planned again, which gives the same plan: the plan is a
//! function of that server and the round's stream), the server as it stood
//! after the part ([`Interrupted::server`], which replaces the planned one),
//! and the clients' halves of that moment; only the clients after the part
//! are then exchanged.

use fedcluster_core::{ClientId, ServerHalf};

/// What a run does around the parts of a round.
pub trait Parts<S: ServerHalf, T> {
    /// Before round `round` is planned, with the server and the transport
    /// as the round starts: how many planned clients to exchange per part,
    /// or `None` to exchange the whole round at once.
    fn split(&mut self, round: usize, server: &S, transport: &T) -> Result<Option<usize>, String>;

    /// After a part of a split round that leaves planned clients to go.
    fn part_done(&mut self, part: &PartDone<'_, S, T>) -> Result<(), String>;
}

/// Where a split round stands after one of its parts.
pub struct PartDone<'a, S, T> {
    /// The round, from 0.
    pub round: usize,
    /// The server after the replies so far.
    pub server: &'a S,
    /// The transport, holding the clients' halves of this moment.
    pub transport: &'a T,
    /// Planned clients exchanged so far (a prefix of the plan).
    pub done: usize,
    /// The clients that replied so far, in order.
    pub replied: &'a [ClientId],
    /// Bytes the replies so far took.
    pub bytes_up: u64,
    /// Seconds the round has taken so far (every session of it).
    pub seconds: f64,
}

/// Every round exchanged at once.
pub struct WholeRounds;

impl<S: ServerHalf, T> Parts<S, T> for WholeRounds {
    fn split(&mut self, _: usize, _: &S, _: &T) -> Result<Option<usize>, String> {
        Ok(None)
    }

    fn part_done(&mut self, _: &PartDone<'_, S, T>) -> Result<(), String> {
        Ok(())
    }
}

/// A round interrupted after one of its parts, as a checkpoint gives it
/// back. The engine is handed the server as the round started; this is the
/// rest.
#[derive(Debug)]
pub struct Interrupted<S> {
    /// The server after the part.
    pub server: S,
    /// Planned clients exchanged before the interruption.
    pub done: usize,
    /// The clients that replied before it, in order.
    pub replied: Vec<ClientId>,
    /// Bytes their replies took.
    pub bytes_up: u64,
    /// Seconds the round had taken.
    pub seconds: f64,
}
