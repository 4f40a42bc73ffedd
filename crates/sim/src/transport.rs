//! Transports carry a round's messages to the clients and bring the replies back.

use std::sync::Mutex;

use rayon::prelude::*;

use fedcluster_core::{
    AlgoError, Batch, ClientEnv, ClientHalf, ClientId, Model, Purpose, RoundCtx, Workspace, stream,
};

use crate::error::EngineError;

/// Delivers a round's plan and hands the replies to `deliver`, one at a time and
/// in client-id order.
pub trait Transport<Down, Up> {
    /// Sends `plan` (sorted by client id, no repeats) and delivers every reply.
    fn exchange(
        &mut self,
        ctx: &RoundCtx,
        plan: &[(ClientId, Down)],
        deliver: &mut dyn FnMut(ClientId, Up) -> Result<(), EngineError>,
    ) -> Result<(), EngineError>;
    /// Number of clients reachable through this transport.
    fn num_clients(&self) -> usize;
}

/// Checks that `plan` is sorted by client id, without repeats, and names only
/// clients below `m`: what every transport may assume.
pub fn check_plan<Down>(
    ctx: &RoundCtx,
    plan: &[(ClientId, Down)],
    m: usize,
) -> Result<(), EngineError> {
    if let Some(w) = plan.windows(2).find(|w| w[0].0 >= w[1].0) {
        return Err(EngineError::Plan(format!(
            "round {}: client {} planned out of order or twice",
            ctx.round, w[1].0
        )));
    }
    if let Some((id, _)) = plan.iter().find(|(id, _)| *id >= m) {
        return Err(EngineError::Plan(format!(
            "round {}: no client {id} (there are {m})",
            ctx.round
        )));
    }
    Ok(())
}

/// Clients handled in parallel per chunk and thread: their replies are delivered
/// before the next chunk starts, so at most this many replies per thread are in
/// memory at once, and the server's memory does not grow with the client count.
const CLIENTS_PER_THREAD_IN_FLIGHT: usize = 16;

/// Runs every client half in this process, in parallel over a rayon pool, a chunk
/// of clients at a time.
pub struct InProcess<'a, C> {
    clients: Vec<C>,
    data: Vec<Batch<'a>>,
    model: &'a dyn Model,
    seed: u64,
    pool: rayon::ThreadPool,
    /// One workspace per pool thread, reused across clients and rounds.
    workspaces: Vec<Mutex<Workspace>>,
}

impl<'a, C> InProcess<'a, C> {
    /// Client `i` is `clients[i]` holding `data[i]`; `threads = 0` uses every core.
    pub fn new(
        clients: Vec<C>,
        data: Vec<Batch<'a>>,
        model: &'a dyn Model,
        seed: u64,
        threads: usize,
    ) -> Result<Self, EngineError> {
        if clients.len() != data.len() {
            return Err(EngineError::Setup(format!(
                "{} client halves for {} data shards",
                clients.len(),
                data.len()
            )));
        }
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .map_err(|e| EngineError::Setup(format!("thread pool: {e}")))?;
        let workspaces = (0..pool.current_num_threads())
            .map(|_| Mutex::default())
            .collect();
        Ok(Self {
            clients,
            data,
            model,
            seed,
            pool,
            workspaces,
        })
    }

    /// The client halves (for inspection after a run).
    pub fn clients(&self) -> &[C] {
        &self.clients
    }
}

impl<C, Down, Up> Transport<Down, Up> for InProcess<'_, C>
where
    C: ClientHalf<Down = Down, Up = Up>,
    Down: Sync,
    Up: Send,
{
    fn exchange(
        &mut self,
        ctx: &RoundCtx,
        plan: &[(ClientId, Down)],
        deliver: &mut dyn FnMut(ClientId, Up) -> Result<(), EngineError>,
    ) -> Result<(), EngineError> {
        check_plan(ctx, plan, self.clients.len())?;
        // Pair each planned message with its client's half, in id order.
        let mut work = Vec::with_capacity(plan.len());
        let mut next = plan.iter().peekable();
        for (id, client) in self.clients.iter_mut().enumerate() {
            if let Some((_, msg)) = next.next_if(|(pid, _)| *pid == id) {
                work.push((id, client, msg));
            }
        }
        let (data, model, seed) = (&self.data, self.model, self.seed);
        let workspaces = &self.workspaces;
        let chunk = CLIENTS_PER_THREAD_IN_FLIGHT * workspaces.len();
        while !work.is_empty() {
            let rest = work.split_off(chunk.min(work.len()));
            let batch = std::mem::replace(&mut work, rest);
            let replies: Vec<Result<(ClientId, Up), (ClientId, AlgoError)>> =
                self.pool.install(|| {
                    batch
                        .into_par_iter()
                        .map(|(id, client, msg)| {
                            // Each pool thread owns one slot: the lock is never contended.
                            let slot =
                                rayon::current_thread_index().unwrap_or(0) % workspaces.len();
                            let mut ws = workspaces[slot].lock().unwrap_or_else(|e| e.into_inner());
                            let mut env = ClientEnv {
                                id,
                                round: ctx.round,
                                data: data[id],
                                model,
                                rng: stream(seed, Purpose::Client, ctx.round as u64, id as u64),
                                ws: &mut ws,
                            };
                            client
                                .handle(ctx, msg, &mut env)
                                .map(|up| (id, up))
                                .map_err(|e| (id, e))
                        })
                        .collect()
                });
            for reply in replies {
                let (id, up) = reply.map_err(|(client, source)| EngineError::Client {
                    round: ctx.round,
                    client,
                    source,
                })?;
                deliver(id, up)?;
            }
        }
        Ok(())
    }

    fn num_clients(&self) -> usize {
        self.clients.len()
    }
}
