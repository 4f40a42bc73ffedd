//! Transports carry a round's messages to the clients and bring the replies back.

use std::collections::HashMap;
use std::sync::Mutex;

use fedcluster_core::kernels::prefetch_item;
use fedcluster_core::{
    ClientEnv, ClientHalf, ClientId, Model, Purpose, RoundCtx, ShardBuf, Shards, Workspace, stream,
};

use crate::error::EngineError;
use crate::largest_first::run_largest_first;

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

/// The outcome of delivering one reply with the reason the server refused
/// it, if it did for its shape (before touching its state: the reply counts
/// as not received); any other error stops the run.
pub fn refused_shape(delivered: Result<(), EngineError>) -> Result<Option<String>, EngineError> {
    match delivered {
        Err(EngineError::Server {
            error: e @ fedcluster_core::AlgoError::Malformed { .. },
            ..
        }) => Ok(Some(e.to_string())),
        other => other.map(|()| None),
    }
}

/// Clients handled in parallel per chunk and thread: their replies are delivered
/// before the next chunk starts, so at most this many replies per thread are in
/// memory at once, and the server's memory does not grow with the client count.
const CLIENTS_PER_THREAD_IN_FLIGHT: usize = 16;

/// Above this many clients, [`InProcess::with_prototype`] keeps only the halves
/// of clients that have taken part.
const DENSE_HALVES_UP_TO: usize = 1 << 16;

/// The client halves of a federation.
enum Halves<C> {
    /// One half per client, client `i` at index `i`.
    Dense(Vec<C>),
    /// Only the halves of clients that have taken part; a client's first round
    /// starts from a copy of `prototype`, which is what a dense store would
    /// have held for it. `out` holds the round's halves while they work.
    Sparse {
        prototype: C,
        kept: HashMap<ClientId, C>,
        out: Vec<(ClientId, C)>,
    },
}

impl<C: Clone> Halves<C> {
    /// No half kept yet: every client starts from `prototype`.
    fn sparse(prototype: C) -> Self {
        Halves::Sparse {
            prototype,
            kept: HashMap::new(),
            out: Vec::new(),
        }
    }

    /// The round's work: each planned client's id, half and message, in plan
    /// order, found in O(participants).
    fn work<'w, D>(&'w mut self, plan: &'w [(ClientId, D)]) -> Vec<(ClientId, &'w mut C, &'w D)> {
        match self {
            Halves::Dense(halves) => {
                let mut work = Vec::with_capacity(plan.len());
                let (mut rest, mut offset) = (halves.as_mut_slice(), 0);
                for (id, msg) in plan {
                    // The plan is sorted, unique and in range (`check_plan`).
                    let (client, tail) = std::mem::take(&mut rest)[id - offset..]
                        .split_first_mut()
                        .expect("checked plan");
                    work.push((*id, client, msg));
                    (rest, offset) = (tail, id + 1);
                }
                work
            }
            Halves::Sparse {
                prototype,
                kept,
                out,
            } => {
                out.extend(
                    plan.iter()
                        .map(|(id, _)| (*id, kept.remove(id).unwrap_or_else(|| prototype.clone()))),
                );
                out.iter_mut()
                    .zip(plan)
                    .map(|((id, client), (_, msg))| (*id, client, msg))
                    .collect()
            }
        }
    }

    /// Every stored half with its client, in id order (sparse: the clients
    /// that have taken part; the others are still the prototype).
    fn stored(&self) -> Vec<(ClientId, &C)> {
        match self {
            Halves::Dense(halves) => halves.iter().enumerate().collect(),
            Halves::Sparse { kept, .. } => {
                let mut stored: Vec<(ClientId, &C)> = kept.iter().map(|(id, c)| (*id, c)).collect();
                stored.sort_unstable_by_key(|(id, _)| *id);
                stored
            }
        }
    }

    /// Puts back halves [`Halves::stored`] gave (from a checkpoint).
    fn restore(&mut self, halves: Vec<(ClientId, C)>) -> Result<(), EngineError> {
        for (id, half) in halves {
            match self {
                Halves::Dense(all) => {
                    let clients = all.len();
                    let slot = all.get_mut(id).ok_or_else(|| {
                        EngineError::Setup(format!("checkpoint names client {id} of {clients}"))
                    })?;
                    *slot = half;
                }
                Halves::Sparse { kept, .. } => {
                    kept.insert(id, half);
                }
            }
        }
        Ok(())
    }

    /// Puts the round's halves back (sparse store).
    fn put_back(&mut self) {
        if let Halves::Sparse { kept, out, .. } = self {
            kept.extend(out.drain(..));
        }
    }
}

/// What every client of the federation shares: the data, the model and the
/// run's seed.
#[derive(Clone, Copy)]
struct Shared<'a> {
    data: &'a dyn Shards,
    model: &'a dyn Model,
    seed: u64,
}

/// One pool thread's scratch: the model's workspace and the buffer a produced
/// client's data is written into.
#[derive(Default)]
struct Slot {
    ws: Workspace,
    buf: ShardBuf,
}

/// Runs every client half in this process: on the calling thread with one
/// thread, otherwise in parallel over a rayon pool, a chunk of clients at a
/// time. Per client it allocates nothing of its own: the workspace and the
/// data buffer are the thread's, the client's data is a view or produced into
/// that buffer, and its stream is built on the stack.
pub struct InProcess<'a, C> {
    halves: Halves<C>,
    env: Shared<'a>,
    pool: rayon::ThreadPool,
    /// One slot per pool thread, reused across clients and rounds.
    slots: Vec<Mutex<Slot>>,
}

impl<'a, C: Clone> InProcess<'a, C> {
    /// Client `i` is `clients[i]` holding `data`'s client `i`; `threads = 0`
    /// uses every core.
    pub fn new(
        clients: Vec<C>,
        data: &'a dyn Shards,
        model: &'a dyn Model,
        seed: u64,
        threads: usize,
    ) -> Result<Self, EngineError> {
        if clients.len() != data.num_clients() {
            return Err(EngineError::Setup(format!(
                "{} client halves for {} data shards",
                clients.len(),
                data.num_clients()
            )));
        }
        Self::build(Halves::Dense(clients), data, model, seed, threads)
    }

    /// Every client starts as a copy of `prototype`. With many clients only
    /// the halves of clients that have taken part are kept, so memory follows
    /// the clients the rounds touch, not the federation's size; results are
    /// the same either way.
    pub fn with_prototype(
        prototype: C,
        data: &'a dyn Shards,
        model: &'a dyn Model,
        seed: u64,
        threads: usize,
    ) -> Result<Self, EngineError> {
        let m = data.num_clients();
        let halves = if m <= DENSE_HALVES_UP_TO {
            Halves::Dense(vec![prototype; m])
        } else {
            Halves::sparse(prototype)
        };
        Self::build(halves, data, model, seed, threads)
    }

    /// [`InProcess::with_prototype`] with the sparse store whatever the number
    /// of clients (for tests that compare the two).
    pub fn sparse(
        prototype: C,
        data: &'a dyn Shards,
        model: &'a dyn Model,
        seed: u64,
        threads: usize,
    ) -> Result<Self, EngineError> {
        Self::build(Halves::sparse(prototype), data, model, seed, threads)
    }

    /// The client halves that hold state of their own, with their ids, in id
    /// order: every client's (dense store) or those that have taken part
    /// (sparse store). What a checkpoint saves.
    pub fn stored_halves(&self) -> Vec<(ClientId, &C)> {
        self.halves.stored()
    }

    /// Worker threads running the client halves: the `threads` asked for,
    /// or for 0 the thread pool's choice (one per core, or
    /// `RAYON_NUM_THREADS`).
    pub fn threads(&self) -> usize {
        self.pool.current_num_threads()
    }

    /// Puts back the halves [`InProcess::stored_halves`] gave (a resumed run).
    pub fn restore_halves(&mut self, halves: Vec<(ClientId, C)>) -> Result<(), EngineError> {
        self.halves.restore(halves)
    }

    fn build(
        halves: Halves<C>,
        data: &'a dyn Shards,
        model: &'a dyn Model,
        seed: u64,
        threads: usize,
    ) -> Result<Self, EngineError> {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .map_err(|e| EngineError::Setup(format!("thread pool: {e}")))?;
        let slots = (0..pool.current_num_threads())
            .map(|_| Mutex::default())
            .collect();
        Ok(Self {
            halves,
            env: Shared { data, model, seed },
            pool,
            slots,
        })
    }
}

/// Client `id` handles `msg` with its data, its stream for the round and the
/// thread's slot.
fn handle_one<C: ClientHalf>(
    ctx: &RoundCtx,
    (id, client, msg): (ClientId, &mut C, &C::Down),
    shared: Shared<'_>,
    slot: &mut Slot,
) -> Result<C::Up, EngineError> {
    let Slot { ws, buf } = slot;
    let mut env = ClientEnv {
        id,
        round: ctx.round,
        data: shared.data.batch(id, buf),
        model: shared.model,
        rng: stream(shared.seed, Purpose::Client, ctx.round as u64, id as u64),
        ws,
    };
    client
        .handle(ctx, msg, &mut env)
        .map_err(|error| EngineError::Client {
            round: ctx.round,
            client: id,
            error,
        })
}

impl<C, Down, Up> Transport<Down, Up> for InProcess<'_, C>
where
    C: ClientHalf<Down = Down, Up = Up> + Clone,
    Down: Sync,
    Up: Send,
{
    fn exchange(
        &mut self,
        ctx: &RoundCtx,
        plan: &[(ClientId, Down)],
        deliver: &mut dyn FnMut(ClientId, Up) -> Result<(), EngineError>,
    ) -> Result<(), EngineError> {
        check_plan(ctx, plan, self.num_clients())?;
        let shared = self.env;
        let (pool, slots) = (&self.pool, &mut self.slots);
        let mut work = self.halves.work(plan);
        let result = if slots.len() == 1 {
            // One thread: no pool hand-off, replies delivered as they come.
            let slot = slots[0].get_mut().unwrap_or_else(|e| e.into_inner());
            // While a client trains, what the next clients need travels to the
            // cache: the next one's half, the data of the one after, and where
            // the third keeps its data (so no prefetch waits on memory).
            let ahead: Vec<(ClientId, *const C)> = work
                .iter()
                .map(|job| (job.0, &*job.1 as *const C))
                .collect();
            ahead
                .iter()
                .take(3)
                .for_each(|&(id, _)| shared.data.prefetch_entry(id));
            if let Some(&(second, _)) = ahead.get(1) {
                shared.data.prefetch(second);
            }
            work.into_iter().enumerate().try_for_each(|(i, job)| {
                if let Some(&(_, half)) = ahead.get(i + 1) {
                    prefetch_item(half);
                }
                if let Some(&(later, _)) = ahead.get(i + 2) {
                    shared.data.prefetch(later);
                }
                if let Some(&(latest, _)) = ahead.get(i + 3) {
                    shared.data.prefetch_entry(latest);
                }
                let id = job.0;
                let up = handle_one(ctx, job, shared, slot)?;
                deliver(id, up)
            })
        } else {
            let slots = &*slots;
            let chunk = CLIENTS_PER_THREAD_IN_FLIGHT * slots.len();
            let mut outcome = Ok(());
            while !work.is_empty() && outcome.is_ok() {
                let rest = work.split_off(chunk.min(work.len()));
                let batch = std::mem::replace(&mut work, rest);
                // Largest clients first (by samples: what an evaluation's
                // cost follows; training a fixed number of steps costs alike),
                // each thread taking the next client left as it frees up.
                let replies = run_largest_first(
                    pool,
                    batch,
                    |job| shared.data.samples(job.0),
                    |thread, job| {
                        // Each pool thread owns one slot: the lock is never contended.
                        let mut slot = slots[thread].lock().unwrap_or_else(|e| e.into_inner());
                        let id = job.0;
                        handle_one(ctx, job, shared, &mut slot).map(|up| (id, up))
                    },
                );
                outcome = replies
                    .into_iter()
                    .try_for_each(|reply| reply.and_then(|(id, up)| deliver(id, up)));
            }
            outcome
        };
        self.halves.put_back();
        result
    }

    fn num_clients(&self) -> usize {
        self.env.data.num_clients()
    }
}

#[cfg(test)]
#[path = "transport_tests.rs"]
mod tests;
