//! The round loop.

use std::time::Instant;

use fedcluster_core::params::all_finite;
use fedcluster_core::{
    ClientId, Message, NewcomerRule, Purpose, RoundCtx, ServerHalf, Snapshot, stream,
};

use crate::error::EngineError;
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
    mut observe: impl FnMut(RoundEvent<'_>) -> Result<(), String>,
    mut after: impl FnMut(usize, &S, &T) -> Result<(), String>,
) -> Result<(), EngineError>
where
    S: ServerHalf,
    T: Transport<S::Down, S::Up>,
{
    let num_clients = transport.num_clients();
    let mut replied: Vec<ClientId> = Vec::new();
    for round in first..rounds {
        let start = Instant::now();
        let ctx = RoundCtx {
            round,
            rounds,
            num_clients,
        };
        let mut rng = stream(seed, Purpose::Server, round as u64, 0);
        let plan = server
            .plan(&ctx, &mut rng)
            .map_err(|error| EngineError::Server { round, error })?;
        let bytes_down = plan.iter().map(|(_, m)| m.wire_bytes()).sum();
        let mut bytes_up = 0u64;
        replied.clear();
        transport.exchange(&ctx, &plan, &mut |client, up| {
            if !up.is_finite() {
                return Err(EngineError::NonFinite {
                    round,
                    client: Some(client),
                    what: "reply".into(),
                });
            }
            bytes_up += up.wire_bytes();
            replied.push(client);
            server
                .receive(&ctx, client, up)
                .map_err(|error| EngineError::Server { round, error })
        })?;
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
            seconds: start.elapsed().as_secs_f64(),
            snapshot,
            newcomer: server.newcomer(),
        })
        .map_err(EngineError::Stopped)?;
        after(round, server, transport).map_err(EngineError::Stopped)?;
    }
    Ok(())
}
