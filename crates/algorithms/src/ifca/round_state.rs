//! What the IFCA server gathers during a round, per active replica (steps 4-5
//! of the round protocol): the first client whose reply failed, the running
//! sums of option II, weight sharing and momentum, the training loss and, with
//! `min_share`, how many participants chose each cluster; emptied when the
//! round is planned and folded into the replica's models when it finishes.

use fedcluster_core::ClientId;

use super::config::Config;
use super::replica::{Replica, share_first_model};
use crate::common::aggregate::Aggregation;
use crate::common::aggregate::{LossMeter, ModelSums};

/// What the server gathers during a round, per active replica.
#[derive(Debug, Default, serde::Serialize, serde::Deserialize)]
pub(super) struct RoundState {
    /// First client whose reply for the replica was not finite.
    pub(super) failed: Vec<Option<ClientId>>,
    /// Model averaging: running weighted sums of the received models.
    pub(super) sums: Vec<ModelSums>,
    /// Weight sharing: running weighted sums of the shared layers of all models.
    pub(super) shared_sums: Vec<ModelSums>,
    /// Momentum: running weighted sums of the clients' momentum buffers.
    pub(super) velocity_sums: Vec<ModelSums>,
    /// The training loss.
    pub(super) loss: Vec<LossMeter>,
    /// `min_share`: how many participants chose each cluster (empty when off).
    #[serde(default)]
    pub(super) counts: Vec<Vec<usize>>,
}

impl RoundState {
    /// Empties the state for a round of `slots` active replicas, their models
    /// `p` values each, the first `shared` of them shared (weight sharing, 0
    /// otherwise); `counting`: whether the clusters' choices are counted
    /// (`min_share`).
    pub(super) fn start(
        &mut self,
        slots: usize,
        config: &Config,
        p: usize,
        shared: usize,
        counting: bool,
    ) {
        self.failed = vec![None; slots];
        self.loss = vec![LossMeter::default(); slots];
        if counting {
            self.counts = vec![vec![0; config.clusters]; slots];
        }
        self.sums.resize_with(slots, ModelSums::default);
        self.shared_sums.resize_with(slots, ModelSums::default);
        self.velocity_sums.resize_with(slots, ModelSums::default);
        if config.momentum > 0.0 {
            for sums in &mut self.velocity_sums {
                sums.reset(config.clusters, p);
            }
        }
        if config.aggregation == Aggregation::Model {
            for sums in &mut self.sums {
                sums.reset(config.clusters, p);
            }
            for sums in &mut self.shared_sums {
                sums.reset(1, shared);
            }
        }
    }

    /// Option II (step 5): adds a participant's model `payload`, which chose
    /// cluster `c`, with `weight` to the replica in `slot`: the model to its
    /// cluster's sum, its momentum buffer `velocity` (with momentum) to the
    /// cluster's momentum sum, and its first `shared` parameters (weight
    /// sharing) to the sum of all models' shared layers.
    pub(super) fn add_model(
        &mut self,
        slot: usize,
        c: usize,
        payload: &[f32],
        velocity: Option<&[f32]>,
        weight: f64,
        shared: usize,
    ) {
        self.sums[slot].add(c, payload, weight);
        if let Some(v) = velocity {
            self.velocity_sums[slot].add(c, v, weight);
        }
        if shared > 0 {
            self.shared_sums[slot].add(0, &payload[..shared], weight);
        }
    }

    /// The end of step 5 for the replica in `slot`: option II's averages
    /// replace its models (a cluster that received none keeps its model), the
    /// shared layers are copied from model 0 to the others and the momentum
    /// buffers take their averages.
    pub(super) fn fold_into(
        &mut self,
        slot: usize,
        replica: &mut Replica,
        config: &Config,
        p: usize,
        shared: usize,
    ) {
        if config.aggregation == Aggregation::Model {
            self.sums[slot].finish(&mut replica.models);
            if shared > 0 {
                self.shared_sums[slot].finish(&mut replica.models[..shared]);
            }
        }
        if shared > 0 {
            share_first_model(&mut replica.models, p, shared);
        }
        if config.momentum > 0.0 {
            self.velocity_sums[slot].finish(&mut replica.velocity);
        }
    }
}
