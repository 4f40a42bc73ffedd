//! Checkpoints within a long round ([`WithinRounds`]): the run's side of
//! [`fedcluster_sim::parts`]. Before a round the run decides whether to
//! split it and, if so, makes sure the checkpoint on disk is the round's
//! start (writing it if the last round's end was not checkpointed); after a
//! part, when a checkpoint is due, it writes the part file beside it: the
//! server and the clients' halves of that moment and the clients exchanged
//! ([`crate::checkpoint::Schedule::save_part`]). Nothing of the server is copied in memory.

use std::cell::RefCell;
use std::time::Duration;

use anyhow::Result;
use serde::Serialize;

use fedcluster_core::{ClientHalf, ServerHalf};
use fedcluster_sim::InProcess;
use fedcluster_sim::parts::{PartDone, Parts};

use crate::checkpoint::{PartRef, Schedule, WithinRounds};
use crate::outcome::SoFar;

/// What a driven run does around the parts of a round, with the records of
/// the rounds before it.
pub(crate) trait RunParts<S, T> {
    /// Before round `round`, with the server and the transport as it
    /// starts: planned clients per part, or `None` for the whole round at
    /// once.
    fn split(
        &mut self,
        round: usize,
        server: &S,
        transport: &T,
        so_far: &SoFar,
    ) -> Result<Option<usize>>;
    /// After a part of a split round that leaves clients to go.
    fn part_done(&mut self, part: &PartDone<'_, S, T>) -> Result<()>;
}

/// Every round at once.
pub(crate) struct WholeRounds;

impl<S, T> RunParts<S, T> for WholeRounds {
    fn split(&mut self, _: usize, _: &S, _: &T, _: &SoFar) -> Result<Option<usize>> {
        Ok(None)
    }

    fn part_done(&mut self, _: &PartDone<'_, S, T>) -> Result<()> {
        Ok(())
    }
}

/// [`RunParts`] as the engine's [`Parts`], the records read from `so_far`.
pub(crate) struct WithRecords<'a, P: ?Sized> {
    pub(crate) parts: &'a mut P,
    pub(crate) so_far: &'a RefCell<SoFar>,
}

impl<S: ServerHalf, T, P: RunParts<S, T> + ?Sized> Parts<S, T> for WithRecords<'_, P> {
    fn split(&mut self, round: usize, server: &S, transport: &T) -> Result<Option<usize>, String> {
        let so_far = self.so_far.borrow();
        (self.parts.split(round, server, transport, &so_far)).map_err(|e| format!("{e:#}"))
    }

    fn part_done(&mut self, part: &PartDone<'_, S, T>) -> Result<(), String> {
        (self.parts.part_done(part)).map_err(|e| format!("{e:#}"))
    }
}

/// Clients per worker thread in a part of a long round: enough that one
/// large client does not leave the other threads idle for long (the engine
/// waits for a part's last reply before the next part starts), few enough
/// that a part is a small share of a round of hours.
const PART_CLIENTS_PER_THREAD: usize = 4;

/// Checkpoints within the long rounds of an in-process run.
pub(crate) struct MidRound<'a> {
    schedule: &'a RefCell<Schedule>,
    key: &'a str,
    /// Worker threads: a part of a long round is `PART_CLIENTS_PER_THREAD`
    /// clients a thread, with [`WithinRounds::EveryClient`] one a thread.
    threads: usize,
    /// Whether the first round resumes an interrupted one (split again).
    resumes_a_part: bool,
}

impl<'a> MidRound<'a> {
    pub(crate) fn new(
        schedule: &'a RefCell<Schedule>,
        key: &'a str,
        threads: usize,
        resumes_a_part: bool,
    ) -> Self {
        Self {
            schedule,
            key,
            threads: threads.max(1),
            resumes_a_part,
        }
    }
}

impl<S, C> RunParts<S, InProcess<'_, C>> for MidRound<'_>
where
    S: ServerHalf + Serialize,
    C: ClientHalf + Clone + Serialize,
{
    fn split(
        &mut self,
        round: usize,
        server: &S,
        transport: &InProcess<'_, C>,
        so_far: &SoFar,
    ) -> Result<Option<usize>> {
        let mut schedule = self.schedule.borrow_mut();
        let within = schedule.policy().within_rounds;
        let last = so_far.records.last().map(|r| r.seconds);
        let split = std::mem::take(&mut self.resumes_a_part)
            || splits(within, schedule.policy().every, last);
        if !split {
            return Ok(None);
        }
        if !schedule.holds_the_start_of(round) {
            schedule.save(self.key, round, so_far, server, transport.stored_halves())?;
        }
        Ok(Some(match within {
            WithinRounds::EveryClient => self.threads,
            _ => PART_CLIENTS_PER_THREAD * self.threads,
        }))
    }

    fn part_done(&mut self, part: &PartDone<'_, S, InProcess<'_, C>>) -> Result<()> {
        let mut schedule = self.schedule.borrow_mut();
        if !schedule.due_within() {
            return Ok(());
        }
        schedule.save_part(&PartRef {
            config: self.key,
            round: part.round,
            server: part.server,
            clients: part.transport.stored_halves(),
            done: part.done,
            replied: part.replied,
            bytes_up: part.bytes_up,
            seconds: part.seconds,
        })
    }
}

/// Whether a round is split under `within`, the last round having taken
/// `last` seconds (`None`: no round before it in the records).
fn splits(within: WithinRounds, every: Duration, last: Option<f64>) -> bool {
    match within {
        WithinRounds::Never => false,
        WithinRounds::EveryClient => true,
        WithinRounds::LongRounds => last.is_some_and(|s| s >= every.as_secs_f64()),
    }
}

#[cfg(test)]
#[path = "mid_round_tests.rs"]
mod tests;
