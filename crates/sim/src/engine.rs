//! The round loop.

use std::time::Instant;

use fedcluster_core::params::all_finite;
use fedcluster_core::{
    ClientId, Message, NewcomerRule, Purpose, RoundCtx, ServerHalf, Snapshot, stream,
};

use crate::error::EngineError;
use crate::parts::{Interrupted, PartDone, Parts, WholeRounds};
use crate::transport::Transport;

/// What the observer learns after each round.
#[derive(Debug)]
pub struct RoundEvent<'a> {
    /// Round index, from 0.
    pub round: usize,
    /// Number of clients that took part.
    pub participants: usize,
    /// The clients that replied this round, in the order their replies came.
    pub replied: &'a [ClientId],
    /// Bytes sent from the server to clients this round.
    pub bytes_down: u64,
    /// Bytes sent from clients to the server this round.
    pub bytes_up: u64,
    /// Wall-clock seconds of the round (plan, exchange, absorb).
    pub seconds: f64,
    /// The server's models and assignments after the round.
    pub snapshot: Snapshot<'a>,
    /// How the algorithm places a client it has not assigned (a new client,
    /// a client never sampled) among the snapshot's models.
    pub newcomer: &'a dyn NewcomerRule,
}

/// Runs `rounds` rounds of `server` over `transport`. The server's stream for
/// round `t` is `(seed, Server, t)`. `observe` sees every round; returning an
/// error from it stops the run.
pub fn run<S, T>(
    server: &mut S,
    transport: &mut T,
    rounds: usize,
    seed: u64,
    observe: impl FnMut(RoundEvent<'_>) -> Result<(), String>,
) -> Result<(), EngineError>
where
    S: ServerHalf,
    T: Transport<S::Down, S::Up>,
{
    run_from(
        server,
        transport,
        0,
        rounds,
        seed,
        observe,
        |_, _, _| Ok(()),
    )
}

/// [`run`] from round `first` (a run resumed from a checkpoint of the
/// server and client state after round `first - 1`), calling `after` with
/// the round, the server and the transport once the round is observed (to
/// checkpoint them).
pub fn run_from<S, T>(
    server: &mut S,
    transport: &mut T,
    first: usize,
    rounds: usize,
    seed: u64,
    observe: impl FnMut(RoundEvent<'_>) -> Result<(), String>,
    after: impl FnMut(usize, &S, &T) -> Result<(), String>,
) -> Result<(), EngineError>
where
    S: ServerHalf,
    T: Transport<S::Down, S::Up>,
{
    let rounds = Rounds {
        first,
        rounds,
        seed,
    };
    run_in_parts(
        server,
        transport,
        rounds,
        None,
        &mut WholeRounds,
        observe,
        after,
    )
}

/// The rounds a run drives: `first..rounds`, with the server's stream for
/// round `t` `(seed, Server, t)`.
#[derive(Debug, Clone, Copy)]
pub struct Rounds {
    /// The first round to run (0, or where a resumed run stopped).
    pub first: usize,
    /// The run's number of rounds.
    pub rounds: usize,
    /// The run's seed.
    pub seed: u64,
}

/// [`run_from`] with rounds that `parts` may split ([`crate::parts`]), and
/// round `rounds.first` resumed after the part `interrupted` left it at
/// (`server` is then the server as that round started).
pub fn run_in_parts<S, T>(
    server: &mut S,
    transport: &mut T,
    rounds: Rounds,
    mut interrupted: Option<Interrupted<S>>,
    parts: &mut dyn Parts<S, T>,
    mut observe: impl FnMut(RoundEvent<'_>) -> Result<(), String>,
    mut after: impl FnMut(usize, &S, &T) -> Result<(), String>,
) -> Result<(), EngineError>
where
    S: ServerHalf,
    T: Transport<S::Down, S::Up>,
{
    let num_clients = transport.num_clients();
    let mut replied: Vec<ClientId> = Vec::new();
    for round in rounds.first..rounds.rounds {
        let start = Instant::now();
        let ctx = RoundCtx {
            round,
            rounds: rounds.rounds,
            num_clients,
        };
        let part = (parts.split(round, server, transport)).map_err(EngineError::Stopped)?;
        let mut rng = stream(rounds.seed, Purpose::Server, round as u64, 0);
        let plan = server
            .plan(&ctx, &mut rng)
            .map_err(|error| EngineError::Server { round, error })?;
        let bytes_down = plan.iter().map(|(_, m)| m.wire_bytes()).sum();
        let (mut done, mut bytes_up, mut earlier) = (0, 0u64, 0.0);
        replied.clear();
        if let Some(cut) = interrupted.take() {
            check_interrupted(round, &cut, &plan)?;
            *server = cut.server;
            (done, bytes_up, earlier) = (cut.done, cut.bytes_up, cut.seconds);
            replied = cut.replied;
        }
        let step = part.unwrap_or(plan.len()).max(1);
        loop {
            let end = (done + step).min(plan.len());
            transport.exchange(&ctx, &plan[done..end], &mut |client, up| {
                take_reply(&ctx, server, &mut replied, &mut bytes_up, client, up)
            })?;
            done = end;
            if done == plan.len() {
                break;
            }
            parts
                .part_done(&PartDone {
                    round,
                    server: &*server,
                    transport: &*transport,
                    done,
                    replied: &replied,
                    bytes_up,
                    seconds: earlier + start.elapsed().as_secs_f64(),
                })
                .map_err(EngineError::Stopped)?;
        }
        drop(plan);
        server
            .finish(&ctx)
            .map_err(|error| EngineError::Server { round, error })?;
        let snapshot = server.snapshot();
        for (r, replica) in snapshot.replicas.iter().enumerate() {
            if !replica.diverged && replica.models.iter().any(|m| !all_finite(m)) {
                return Err(EngineError::NonFinite {
                    round,
                    client: None,
                    what: format!("model of replica {r}"),
                });
            }
        }
        observe(RoundEvent {
            round,
            participants: replied.len(),
            replied: &replied,
            bytes_down,
            bytes_up,
            seconds: earlier + start.elapsed().as_secs_f64(),
            snapshot,
            newcomer: server.newcomer(),
        })
        .map_err(EngineError::Stopped)?;
        after(round, server, transport).map_err(EngineError::Stopped)?;
    }
    Ok(())
}

/// Takes one reply: refused when not finite, else counted and handed to
/// the server.
fn take_reply<S: ServerHalf>(
    ctx: &RoundCtx,
    server: &mut S,
    replied: &mut Vec<ClientId>,
    bytes_up: &mut u64,
    client: ClientId,
    up: S::Up,
) -> Result<(), EngineError> {
    let round = ctx.round;
    if !up.is_finite() {
        return Err(EngineError::NonFinite {
            round,
            client: Some(client),
            what: "reply".into(),
        });
    }
    *bytes_up += up.wire_bytes();
    replied.push(client);
    server
        .receive(ctx, client, up)
        .map_err(|error| EngineError::Server { round, error })
}

/// Checks that an interrupted round fits the plan made again: the part it
/// stopped after ends inside the plan, and its replies came from the
/// plan's clients before that point, in order.
fn check_interrupted<S, D>(
    round: usize,
    cut: &Interrupted<S>,
    plan: &[(ClientId, D)],
) -> Result<(), EngineError> {
    let planned = plan.get(..cut.done).unwrap_or_default();
    let mut ids = planned.iter().map(|(id, _)| *id);
    let fits = cut.done <= plan.len() && cut.replied.iter().all(|r| ids.any(|id| id == *r));
    if fits {
        return Ok(());
    }
    Err(EngineError::Plan(format!(
        "round {round}: the interrupted round's {} exchanged clients do not fit the {} planned \
         again (a checkpoint of another run?)",
        cut.done,
        plan.len()
    )))
}
