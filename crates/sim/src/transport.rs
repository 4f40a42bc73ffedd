//! Transports carry a round's messages to the clients and bring the replies back.

use std::sync::Mutex;

use rayon::prelude::*;

use fedcluster_core::{
    AlgoError, Batch, ClientEnv, ClientHalf, ClientId, Model, Purpose, RoundCtx, Workspace, stream,
};

use crate::engine::EngineError;

/// Delivers a round's plan and collects the replies, in client-id order.
pub trait Transport<Down, Up> {
    /// Sends `plan` (sorted by client id, no repeats) and returns the replies.
    fn exchange(
        &mut self,
        ctx: &RoundCtx,
        plan: &[(ClientId, Down)],
    ) -> Result<Vec<(ClientId, Up)>, EngineError>;
    /// Number of clients reachable through this transport.
    fn num_clients(&self) -> usize;
}

/// Runs every client half in this process, in parallel over a rayon pool.
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
    ) -> Result<Vec<(ClientId, Up)>, EngineError> {
        let m = self.clients.len();
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
        // Pair each planned message with its client's half, in id order.
        let mut work = Vec::with_capacity(plan.len());
        let mut next = plan.iter().peekable();
        for (id, client) in self.clients.iter_mut().enumerate() {
            if let Some((_, msg)) = next.next_if(|(pid, _)| *pid == id) {
                work.push((id, client, msg));
            }
        }
        let (data, model, seed, workspaces) = (&self.data, self.model, self.seed, &self.workspaces);
        let results: Vec<Result<(ClientId, Up), (ClientId, AlgoError)>> = self.pool.install(|| {
            work.into_par_iter()
                .map(|(id, client, msg)| {
                    // Each pool thread owns one slot, so the lock is never contended.
                    let slot = rayon::current_thread_index().unwrap_or(0) % workspaces.len();
                    let mut ws = workspaces[slot].lock().unwrap_or_else(|e| e.into_inner());
                    let mut env = ClientEnv {
                        id,
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
        results
            .into_iter()
            .map(|r| {
                r.map_err(|(client, source)| EngineError::Client {
                    round: ctx.round,
                    client,
                    source,
                })
            })
            .collect()
    }

    fn num_clients(&self) -> usize {
        self.clients.len()
    }
}
