//! IFCA messages. Model buffers are shared (`Arc`) in process; `wire_bytes`
//! counts what a networked transport would send.

use serde::{Deserialize, Serialize};
use std::sync::Arc;

use fedcluster_core::Message;

/// Server to client: the cluster models of every active replica.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Down {
    /// Active replicas' models, replica-major: `replicas x k x p` values.
    pub models: Arc<Vec<f32>>,
    /// Number of active replicas in `models`.
    pub replicas: usize,
    /// Models per replica.
    pub k: usize,
    /// Step size of each active replica (used by the local update).
    pub lrs: Arc<Vec<f32>>,
    /// Weight sharing: the first `shared` parameters are the same in all `k`
    /// models and cross the wire once per replica (0 without sharing).
    pub shared: usize,
    /// Momentum (CFL-MGD): the clusters' momentum buffers, laid out like `models`.
    pub velocities: Option<Arc<Vec<f32>>>,
    /// Stable identity: for each active replica, the cluster whose model is the
    /// only one sent; the client then skips the assignment step.
    pub own: Option<Vec<u32>>,
}

impl Down {
    /// Parameters per model.
    pub fn params_per_model(&self) -> usize {
        self.models.len() / (self.replicas * self.k).max(1)
    }
}

impl Message for Down {
    fn wire_bytes(&self) -> u64 {
        let p = self.params_per_model() as u64;
        let r = self.replicas as u64;
        let (shared, head) = (self.shared as u64, p - self.shared as u64);
        let models = match &self.own {
            Some(_) => r * ((shared + head) * 4 + 4),
            None => r * (shared + self.k as u64 * head) * 4,
        };
        let velocities = if self.velocities.is_some() { models } else { 0 };
        models + velocities + 4 * r
    }

    fn is_finite(&self) -> bool {
        fedcluster_core::params::all_finite(&self.models)
            && self
                .velocities
                .as_ref()
                .is_none_or(|v| fedcluster_core::params::all_finite(v))
    }
}

/// Client to server: per active replica, the chosen cluster, its loss and the
/// gradient (option I) or updated model (option II).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Up {
    /// Chosen cluster per active replica.
    pub chosen: Vec<u32>,
    /// Loss at the chosen model per replica; `None` where it or the update was
    /// not finite (the replica diverged on this client).
    pub losses: Vec<Option<f64>>,
    /// Gradients (momentum buffers under CFL-MGD) or models, `replicas x p`
    /// values (zeros for a diverged replica).
    pub payload: Vec<f32>,
    /// Model averaging with momentum: the momentum buffers after the local
    /// update, `replicas x p` values; empty otherwise.
    pub velocity: Vec<f32>,
    /// Number of local training samples.
    pub samples: usize,
}

impl Message for Up {
    fn wire_bytes(&self) -> u64 {
        self.chosen.len() as u64 * 4
            + self.losses.len() as u64 * 8
            + (self.payload.len() + self.velocity.len()) as u64 * 4
            + 8
    }

    fn is_finite(&self) -> bool {
        self.losses.iter().flatten().all(|l| l.is_finite())
            && fedcluster_core::params::all_finite(&self.payload)
            && fedcluster_core::params::all_finite(&self.velocity)
    }
}
