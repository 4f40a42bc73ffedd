//! IFCA server half: broadcast, per-cluster aggregation, replica bookkeeping
//! (Algorithm 2, lines 3-4 and 13-16).

use std::sync::Arc;

use fedcluster_core::params::{all_finite, axpy};
use fedcluster_core::{
    AlgoError, ClientId, Model, Purpose, ReplicaView, Rng, RoundCtx, ServerHalf, Snapshot, stream,
};

use super::config::Config;
use super::messages::{Down, Up};
use super::redraw::Redraws;
use super::sequential::{ReplicaState, Sequential};
use crate::common::aggregate::Aggregation;
use crate::common::aggregate::{LossMeter, ModelSums};
use crate::common::checked::{Checked, FieldError};
use crate::common::init::start_from;
use crate::common::sampling::participants;

/// A replica whose training loss exceeds its first-round loss by this factor is
/// declared diverged: gradient descent with a step size beyond the stability
/// limit grows geometrically and never comes back.
pub const DIVERGED_LOSS_GROWTH: f64 = 1e8;

/// One independent IFCA run (a random restart).
#[derive(Debug, serde::Serialize, serde::Deserialize)]
struct Replica {
    /// `k x p` cluster models.
    models: Vec<f32>,
    /// `k x p` momentum buffers (CFL-MGD), empty without momentum.
    velocity: Vec<f32>,
    /// Last known cluster of each client.
    assignment: Vec<Option<usize>>,
    /// Training loss reported in the last round.
    train_loss: Option<f64>,
    /// Training loss reported in the first round.
    first_loss: Option<f64>,
    /// Set when the replica diverged.
    diverged: bool,
    /// `pretrain_rounds`: the clusters' initial heads, `k x (p − trunk)`,
    /// which they take back when pretraining ends (empty otherwise).
    #[serde(default)]
    initial_heads: Vec<f32>,
}

impl Replica {
    /// What `clients = "sequential"` reads and changes.
    fn state(&mut self) -> ReplicaState<'_> {
        ReplicaState {
            models: &mut self.models,
            assignment: &mut self.assignment,
            train_loss: &mut self.train_loss,
        }
    }
}

/// What the server gathers during a round, per active replica.
#[derive(Debug, Default, serde::Serialize, serde::Deserialize)]
struct RoundState {
    /// First client whose reply for the replica was not finite.
    failed: Vec<Option<ClientId>>,
    /// Model averaging: running weighted sums of the received models.
    sums: Vec<ModelSums>,
    /// Weight sharing: running weighted sums of the shared layers of all models.
    shared_sums: Vec<ModelSums>,
    /// Momentum: running weighted sums of the clients' momentum buffers.
    velocity_sums: Vec<ModelSums>,
    /// The training loss.
    loss: Vec<LossMeter>,
    /// `min_share`: how many participants chose each cluster (empty when off).
    #[serde(default)]
    counts: Vec<Vec<usize>>,
}

/// The server half of IFCA.
#[derive(Debug, serde::Serialize, serde::Deserialize)]
pub struct IfcaServer {
    config: Checked<Config>,
    p: usize,
    /// Length of the shared layers (weight sharing), 0 otherwise.
    shared: usize,
    /// Length of the trunk that pretraining hands on (`pretrain_rounds`), 0
    /// otherwise.
    #[serde(default)]
    trunk: usize,
    replicas: Vec<Replica>,
    /// Rounds since any of a client's assignments last changed.
    stable_for: Vec<usize>,
    /// Replicas sent out in the current round, in message order.
    active: Vec<usize>,
    participants: usize,
    round: RoundState,
    /// `min_share`: the candidate initialisations and which replicas are
    /// still checked (`None` when off).
    #[serde(default)]
    redraws: Option<Redraws>,
    /// `clients = "sequential"`: the rounds' assignments and chains.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    sequential: Option<Box<Sequential>>,
}

impl IfcaServer {
    /// Every replica starts from `given` (one model per cluster) instead.
    pub fn start_from(&mut self, given: &[Vec<f32>]) -> Result<(), FieldError> {
        let p = self.p;
        for replica in &mut self.replicas {
            start_from(&mut replica.models, p, given, "clusters")?;
        }
        Ok(())
    }

    /// A server whose replica `r` draws its `k` initial models from the stream
    /// `(seed, Init, r)`.
    pub fn new(config: Checked<Config>, model: &dyn Model, num_clients: usize, seed: u64) -> Self {
        let p = model.num_params();
        let k = config.clusters;
        let replicas = (0..config.replicas())
            .map(|r| {
                // Every step size starts from the same restarts.
                let mut rng = stream(seed, Purpose::Init, (r % config.restarts) as u64, 0);
                let mut models = vec![0.0; k * p];
                for m in models.chunks_exact_mut(p) {
                    config.init.fill(model, &mut rng, m);
                }
                if config.weight_sharing {
                    share_first_model(&mut models, p, model.head_start());
                }
                let velocity = if config.momentum > 0.0 {
                    vec![0.0; k * p]
                } else {
                    Vec::new()
                };
                let initial_heads = if config.pretrain_rounds > 0 {
                    let trunk = model.head_start();
                    models
                        .chunks_exact(p)
                        .flat_map(|m| &m[trunk..])
                        .copied()
                        .collect()
                } else {
                    Vec::new()
                };
                Replica {
                    models,
                    velocity,
                    assignment: vec![None; num_clients],
                    train_loss: None,
                    first_loss: None,
                    diverged: false,
                    initial_heads,
                }
            })
            .collect();
        let shared = if config.weight_sharing {
            model.head_start()
        } else {
            0
        };
        let redraws = Redraws::new(&config, model, seed);
        let sequential = Sequential::for_config(&config).map(Box::new);
        let trunk = if config.pretrain_rounds > 0 {
            model.head_start()
        } else {
            0
        };
        Self {
            config,
            p,
            shared,
            trunk,
            replicas,
            stable_for: vec![0; num_clients],
            active: Vec::new(),
            participants: 0,
            round: RoundState::default(),
            redraws,
            sequential,
        }
    }

    /// How many times replica `r`'s initial models were redrawn (`min_share`).
    pub fn redrawn(&self, r: usize) -> usize {
        self.redraws.as_ref().map_or(0, |d| d.redrawn(r))
    }

    /// Cluster models of replica `r`, `k x p` values.
    pub fn models(&self, r: usize) -> &[f32] {
        &self.replicas[r].models
    }

    /// The end of `pretrain_rounds`: every cluster model takes cluster 0's
    /// pretrained trunk and its own initial head back; the clustering starts
    /// afresh (no assignments, no stable identities, zero momentum).
    fn end_pretraining(&mut self) {
        let (p, trunk) = (self.p, self.trunk);
        for replica in &mut self.replicas {
            let pretrained = replica.models[..trunk].to_vec();
            for (model, head) in replica
                .models
                .chunks_exact_mut(p)
                .zip(replica.initial_heads.chunks_exact(p - trunk))
            {
                model[..trunk].copy_from_slice(&pretrained);
                model[trunk..].copy_from_slice(head);
            }
            replica.velocity.fill(0.0);
            replica.assignment.fill(None);
            replica.first_loss = None;
        }
        self.stable_for.fill(0);
    }

    fn own_clusters(&self, client: ClientId) -> Option<Vec<u32>> {
        let s = self.config.stable_rounds;
        if s == 0 || self.stable_for[client] < s {
            return None;
        }
        self.active
            .iter()
            .map(|&r| self.replicas[r].assignment[client].map(|c| c as u32))
            .collect()
    }
}

impl ServerHalf for IfcaServer {
    type Down = Down;
    type Up = Up;

    fn plan(&mut self, ctx: &RoundCtx, rng: &mut Rng) -> Result<Vec<(ClientId, Down)>, AlgoError> {
        if let Some(sequential) = &mut self.sequential {
            self.active = vec![0];
            return Ok(sequential.plan(&self.config, ctx.round, self.replicas[0].state(), rng));
        }
        let pretraining = ctx.round < self.config.pretrain_rounds;
        self.active = (0..self.replicas.len())
            .filter(|&r| !self.replicas[r].diverged)
            .collect();
        let mut models = Vec::with_capacity(self.active.len() * self.config.clusters * self.p);
        for &r in &self.active {
            models.extend_from_slice(&self.replicas[r].models);
        }
        let models = Arc::new(models);
        let velocities = (self.config.momentum > 0.0).then(|| {
            let mut v = Vec::with_capacity(models.len());
            for &r in &self.active {
                v.extend_from_slice(&self.replicas[r].velocity);
            }
            Arc::new(v)
        });
        let lrs = Arc::new(
            self.active
                .iter()
                .map(|&r| self.config.round_lr(r, ctx.round))
                .collect::<Vec<_>>(),
        );
        let chosen = participants(self.stable_for.len(), self.config.participation, rng);
        self.participants = chosen.len();
        let slots = self.active.len();
        self.round.failed = vec![None; slots];
        self.round.loss = vec![LossMeter::default(); slots];
        if self.redraws.is_some() {
            self.round.counts = vec![vec![0; self.config.clusters]; slots];
        }
        self.round.sums.resize_with(slots, ModelSums::default);
        self.round
            .shared_sums
            .resize_with(slots, ModelSums::default);
        self.round
            .velocity_sums
            .resize_with(slots, ModelSums::default);
        if self.config.momentum > 0.0 {
            for sums in &mut self.round.velocity_sums {
                sums.reset(self.config.clusters, self.p);
            }
        }
        if self.config.aggregation == Aggregation::Model {
            for sums in &mut self.round.sums {
                sums.reset(self.config.clusters, self.p);
            }
            for sums in &mut self.round.shared_sums {
                sums.reset(1, self.shared);
            }
        }
        Ok(chosen
            .into_iter()
            .map(|id| {
                let down = Down {
                    models: Arc::clone(&models),
                    replicas: self.active.len(),
                    k: self.config.clusters,
                    lrs: Arc::clone(&lrs),
                    shared: self.shared,
                    velocities: velocities.clone(),
                    // Pretraining: FedAvg of cluster 0's model, no assignment.
                    own: if pretraining {
                        Some(vec![0; self.active.len()])
                    } else {
                        self.own_clusters(id)
                    },
                    assign_only: false,
                };
                (id, down)
            })
            .collect())
    }

    fn receive(&mut self, ctx: &RoundCtx, id: ClientId, up: Up) -> Result<(), AlgoError> {
        if let Some(sequential) = &mut self.sequential {
            return sequential.receive(ctx, id, up, &self.config, self.replicas[0].state());
        }
        let (p, k) = (self.p, self.config.clusters);
        if up.chosen.len() != self.active.len()
            || up.losses.len() != self.active.len()
            || up.payload.len() != self.active.len() * p
            || !(up.velocity.is_empty() || up.velocity.len() == self.active.len() * p)
            || up.chosen.iter().any(|&c| c as usize >= k)
        {
            return Err(AlgoError::malformed(ctx.round, id));
        }
        let mut changed = false;
        for (slot, &r) in self.active.iter().enumerate() {
            let round = &mut self.round;
            if round.failed[slot].is_some() {
                continue;
            }
            let Some(loss) = up.losses[slot] else {
                round.failed[slot] = Some(id);
                continue;
            };
            let replica = &mut self.replicas[r];
            let c = up.chosen[slot] as usize;
            changed |= replica.assignment[id] != Some(c);
            replica.assignment[id] = Some(c);
            if let Some(counts) = round.counts.get_mut(slot) {
                counts[c] += 1;
            }
            let payload = &up.payload[slot * p..(slot + 1) * p];
            let sh = self.shared;
            match self.config.aggregation {
                Aggregation::Gradient => {
                    let scale =
                        self.config.round_lr(r, ctx.round) / self.participants.max(1) as f32;
                    // Shared layers step in model 0 (copied to the others at the end
                    // of the round), heads in the chosen cluster's model.
                    axpy(-scale, &payload[..sh], &mut replica.models[..sh]);
                    axpy(
                        -scale,
                        &payload[sh..],
                        &mut replica.models[c * p + sh..(c + 1) * p],
                    );
                    // CFL-MGD option I: the payload is the client's momentum buffer.
                    if self.config.momentum > 0.0 {
                        round.velocity_sums[slot].add(c, payload, up.samples as f64);
                    }
                }
                Aggregation::Model => {
                    let weight = self.config.weighting.weight(up.samples);
                    round.sums[slot].add(c, payload, weight);
                    if self.config.momentum > 0.0 {
                        let v = &up.velocity[slot * p..(slot + 1) * p];
                        round.velocity_sums[slot].add(c, v, weight);
                    }
                    if sh > 0 {
                        round.shared_sums[slot].add(0, &payload[..sh], weight);
                    }
                }
            }
            round.loss[slot].add(loss, up.samples);
        }
        self.stable_for[id] = if changed { 0 } else { self.stable_for[id] + 1 };
        Ok(())
    }

    fn finish(&mut self, ctx: &RoundCtx) -> Result<(), AlgoError> {
        if let Some(sequential) = &mut self.sequential {
            return sequential.finish(ctx, self.replicas[0].state());
        }
        let mut last_failure: Option<(Option<ClientId>, String)> = None;
        for (slot, &r) in self.active.iter().enumerate() {
            let replica = &mut self.replicas[r];
            if let Some(id) = self.round.failed[slot] {
                replica.diverged = true;
                last_failure = Some((Some(id), format!("replica {r}: non-finite loss or update")));
                continue;
            }
            let counts = self.round.counts.get(slot).map_or(&[][..], Vec::as_slice);
            let redraw = self
                .redraws
                .as_mut()
                .and_then(|d| d.after_round(r, counts, self.participants));
            if let Some(models) = redraw {
                // The round's update is dropped: the replica starts again.
                replica.models = models;
                if self.shared > 0 {
                    share_first_model(&mut replica.models, self.p, self.shared);
                }
                replica.velocity.fill(0.0);
                replica.train_loss = self.round.loss[slot].mean();
                replica.first_loss = None;
                continue;
            }
            if self.config.aggregation == Aggregation::Model {
                self.round.sums[slot].finish(&mut replica.models);
                if self.shared > 0 {
                    self.round.shared_sums[slot].finish(&mut replica.models[..self.shared]);
                }
            }
            if self.shared > 0 {
                share_first_model(&mut replica.models, self.p, self.shared);
            }
            if self.config.momentum > 0.0 {
                self.round.velocity_sums[slot].finish(&mut replica.velocity);
            }
            replica.train_loss = self.round.loss[slot].mean();
            let first = *replica
                .first_loss
                .get_or_insert(replica.train_loss.unwrap_or(f64::NAN));
            if replica
                .train_loss
                .is_some_and(|l| l > DIVERGED_LOSS_GROWTH * first)
            {
                replica.diverged = true;
                last_failure = Some((
                    None,
                    format!(
                        "replica {r}: training loss grew more than {DIVERGED_LOSS_GROWTH:e}-fold"
                    ),
                ));
            } else if !all_finite(&replica.models) {
                replica.diverged = true;
                last_failure = Some((
                    None,
                    format!("replica {r}: non-finite cluster model after aggregation"),
                ));
            }
        }
        if ctx.round + 1 == self.config.pretrain_rounds {
            self.end_pretraining();
        }
        if self.replicas.iter().all(|r| r.diverged) {
            let (client, detail) = last_failure.unwrap_or((None, "every replica diverged".into()));
            return Err(AlgoError::Diverged {
                round: ctx.round,
                client,
                detail,
            });
        }
        Ok(())
    }

    fn snapshot(&self) -> Snapshot<'_> {
        let p = self.p;
        let replicas = self
            .replicas
            .iter()
            .map(|r| ReplicaView {
                models: r.models.chunks_exact(p).collect(),
                assignment: &r.assignment,
                train_loss: r.train_loss,
                diverged: r.diverged,
            })
            .collect::<Vec<_>>();
        Snapshot {
            selected: select_lowest_loss(&replicas),
            replicas,
        }
    }
}

/// Copies the first `shared` parameters of model 0 into every other model of
/// `models` (`k x p` values).
fn share_first_model(models: &mut [f32], p: usize, shared: usize) {
    let (first, rest) = models.split_at_mut(p);
    for m in rest.chunks_exact_mut(p) {
        m[..shared].copy_from_slice(&first[..shared]);
    }
}

/// Index of the non-diverged replica with the lowest training loss (the first
/// non-diverged one while no loss is known).
pub(crate) fn select_lowest_loss(replicas: &[ReplicaView<'_>]) -> usize {
    let mut best: Option<(usize, f64)> = None;
    for (i, r) in replicas.iter().enumerate() {
        if r.diverged {
            continue;
        }
        let loss = r.train_loss.unwrap_or(f64::INFINITY);
        if best.is_none_or(|(_, b)| loss < b) {
            best = Some((i, loss));
        }
    }
    best.map_or(0, |(i, _)| i)
}
