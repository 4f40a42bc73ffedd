//! IFCA server half: broadcast, per-cluster aggregation, replica bookkeeping
//! (Algorithm 2, lines 3-4 and 13-16). One replica's models and checks live in
//! [`super::replica`], what a round gathers in [`super::round_state`].

use std::sync::Arc;

use fedcluster_core::{AlgoError, ClientId, Model, Rng, RoundCtx, ServerHalf, Snapshot};

use super::config::Config;
use super::messages::{Down, Up};
use super::redraw::Redraws;
use super::replica::{Replica, select_lowest_loss};
use super::round_state::RoundState;
use super::sequential::Sequential;
use crate::common::aggregate::Aggregation;
use crate::common::checked::{Checked, FieldError};
use crate::common::init::start_from;
use crate::common::sampling::participants;

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
        let replicas = (0..config.replicas())
            .map(|r| Replica::draw(&config, model, num_clients, seed, r))
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
            replica.end_pretraining(p, trunk);
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
        let counting = self.redraws.is_some();
        self.round
            .start(slots, &self.config, self.p, self.shared, counting);
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
                    replica.step(c, payload, scale, p, sh);
                    // CFL-MGD option I: the payload is the client's momentum buffer.
                    if self.config.momentum > 0.0 {
                        round.velocity_sums[slot].add(c, payload, up.samples as f64);
                    }
                }
                Aggregation::Model => {
                    let weight = self.config.weighting.weight(up.samples);
                    let velocity = (self.config.momentum > 0.0)
                        .then(|| &up.velocity[slot * p..(slot + 1) * p]);
                    round.add_model(slot, c, payload, velocity, weight, sh);
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
                let train_loss = self.round.loss[slot].mean();
                replica.restart_from(models, self.p, self.shared, train_loss);
                continue;
            }
            self.round
                .fold_into(slot, replica, &self.config, self.p, self.shared);
            if let Some(detail) = replica.check_after_round(self.round.loss[slot].mean()) {
                last_failure = Some((None, format!("replica {r}: {detail}")));
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
        let replicas = self
            .replicas
            .iter()
            .map(|r| r.view(self.p))
            .collect::<Vec<_>>();
        Snapshot {
            selected: select_lowest_loss(&replicas),
            replicas,
        }
    }
}
