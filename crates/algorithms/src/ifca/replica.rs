//! One IFCA replica (a random restart, or a step size of a sweep): its `k`
//! cluster models and what the server keeps about it, from its initial draw
//! through redraws (`min_share`) and the end of pretraining to the divergence
//! checks after each round; and the choice of the replica a run reports.

use fedcluster_core::params::{all_finite, axpy};
use fedcluster_core::{Model, Purpose, ReplicaView, stream};

use super::config::Config;
use super::sequential::ReplicaState;

/// A replica whose training loss exceeds its first-round loss by this factor is
/// declared diverged: gradient descent with a step size beyond the stability
/// limit grows geometrically and never comes back.
pub const DIVERGED_LOSS_GROWTH: f64 = 1e8;

/// One independent IFCA run (a random restart).
#[derive(Debug, serde::Serialize, serde::Deserialize)]
pub(super) struct Replica {
    /// `k x p` cluster models.
    pub(super) models: Vec<f32>,
    /// `k x p` momentum buffers (CFL-MGD), empty without momentum.
    pub(super) velocity: Vec<f32>,
    /// Last known cluster of each client.
    pub(super) assignment: Vec<Option<usize>>,
    /// Training loss reported in the last round.
    pub(super) train_loss: Option<f64>,
    /// Training loss reported in the first round.
    pub(super) first_loss: Option<f64>,
    /// Set when the replica diverged.
    pub(super) diverged: bool,
    /// `pretrain_rounds`: the clusters' initial heads, `k x (p − trunk)`,
    /// which they take back when pretraining ends (empty otherwise).
    #[serde(default)]
    initial_heads: Vec<f32>,
}

impl Replica {
    /// Replica `r` of `config`, its `k` initial models drawn from the stream
    /// `(seed, Init, r mod restarts)`: every step size starts from the same
    /// restarts.
    pub(super) fn draw(
        config: &Config,
        model: &dyn Model,
        num_clients: usize,
        seed: u64,
        r: usize,
    ) -> Self {
        let p = model.num_params();
        let k = config.clusters;
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
    }

    /// What `clients = "sequential"` reads and changes.
    pub(super) fn state(&mut self) -> ReplicaState<'_> {
        ReplicaState {
            models: &mut self.models,
            assignment: &mut self.assignment,
            train_loss: &mut self.train_loss,
        }
    }

    /// Option I (step 5): steps the first `shared` parameters in model 0
    /// (copied to the others when the round ends) and the rest in cluster
    /// `c`'s model by `-scale` times the `gradient` (`p` values).
    pub(super) fn step(&mut self, c: usize, gradient: &[f32], scale: f32, p: usize, shared: usize) {
        axpy(-scale, &gradient[..shared], &mut self.models[..shared]);
        axpy(
            -scale,
            &gradient[shared..],
            &mut self.models[c * p + shared..(c + 1) * p],
        );
    }

    /// `min_share`: the round's update is dropped and the replica starts again
    /// from the redrawn `models` (`k x p` values, the first `shared` of each
    /// taken from model 0), keeping the round's training loss `train_loss`.
    pub(super) fn restart_from(
        &mut self,
        models: Vec<f32>,
        p: usize,
        shared: usize,
        train_loss: Option<f64>,
    ) {
        self.models = models;
        if shared > 0 {
            share_first_model(&mut self.models, p, shared);
        }
        self.velocity.fill(0.0);
        self.train_loss = train_loss;
        self.first_loss = None;
    }

    /// The end of `pretrain_rounds`: every cluster model takes cluster 0's
    /// pretrained trunk (the first `trunk` of its `p` parameters) and its own
    /// initial head back; the clustering starts afresh (no assignments, zero
    /// momentum).
    pub(super) fn end_pretraining(&mut self, p: usize, trunk: usize) {
        let pretrained = self.models[..trunk].to_vec();
        for (model, head) in self
            .models
            .chunks_exact_mut(p)
            .zip(self.initial_heads.chunks_exact(p - trunk))
        {
            model[..trunk].copy_from_slice(&pretrained);
            model[trunk..].copy_from_slice(head);
        }
        self.velocity.fill(0.0);
        self.assignment.fill(None);
        self.first_loss = None;
    }

    /// Records the round's training loss `train_loss` (the first one also as
    /// the reference) and marks the replica diverged when that loss grew
    /// [`DIVERGED_LOSS_GROWTH`]-fold or a cluster model is not finite; the
    /// returned line says which.
    pub(super) fn check_after_round(&mut self, train_loss: Option<f64>) -> Option<String> {
        self.train_loss = train_loss;
        let first = *self
            .first_loss
            .get_or_insert(self.train_loss.unwrap_or(f64::NAN));
        if self
            .train_loss
            .is_some_and(|l| l > DIVERGED_LOSS_GROWTH * first)
        {
            self.diverged = true;
            Some(format!(
                "training loss grew more than {DIVERGED_LOSS_GROWTH:e}-fold"
            ))
        } else if !all_finite(&self.models) {
            self.diverged = true;
            Some("non-finite cluster model after aggregation".into())
        } else {
            None
        }
    }

    /// Replica `self` as a run reports it, its models `p` values each.
    pub(super) fn view(&self, p: usize) -> ReplicaView<'_> {
        ReplicaView {
            models: self.models.chunks_exact(p).collect(),
            assignment: &self.assignment,
            train_loss: self.train_loss,
            diverged: self.diverged,
        }
    }
}

/// Copies the first `shared` parameters of model 0 into every other model of
/// `models` (`k x p` values).
pub(super) fn share_first_model(models: &mut [f32], p: usize, shared: usize) {
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
