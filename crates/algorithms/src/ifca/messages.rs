//! IFCA messages. Model buffers are shared (`Arc`) in process; `wire_bytes`
//! counts what a networked transport would send.

use serde::{Deserialize, Serialize};
use std::sync::Arc;

use fedcluster_core::Message;

/// Server to client: the cluster models of every active replica.
///
/// Wire form ([`WireDown`]): per active replica, with stable identity only
/// its own cluster's model, else the shared layers once and every cluster's
/// head; the velocities likewise. What crosses the wire is what
/// [`Message::wire_bytes`] counts (tested), and a decoded message is checked
/// for consistent sizes before anything is allocated from them.
#[derive(Debug, Clone)]
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
    /// The assignment alone (`clients = "sequential"`): the client sends each
    /// replica's cluster of lowest loss and that loss, no model.
    pub assign_only: bool,
}

impl Down {
    /// Parameters per model.
    pub fn params_per_model(&self) -> usize {
        self.models.len() / (self.replicas * self.k).max(1)
    }
}

/// [`Down`] as it crosses the wire (see there).
#[derive(Serialize, Deserialize)]
struct WireDown {
    replicas: u32,
    k: u32,
    p: u32,
    shared: u32,
    lrs: Vec<f32>,
    own: Option<Vec<u32>>,
    models: Vec<f32>,
    velocities: Option<Vec<f32>>,
    #[serde(default)]
    assign_only: bool,
}

impl Down {
    /// `full` (laid out like `models`) in the wire's compact layout.
    fn compact(&self, full: &[f32]) -> Vec<f32> {
        let (k, p, shared) = (self.k, self.params_per_model(), self.shared);
        let mut out = Vec::new();
        for (r, replica) in full.chunks_exact(k * p).enumerate() {
            match &self.own {
                Some(own) => {
                    let c = own[r] as usize;
                    out.extend_from_slice(&replica[c * p..(c + 1) * p]);
                }
                None => {
                    out.extend_from_slice(&replica[..shared]);
                    for model in replica.chunks_exact(p) {
                        out.extend_from_slice(&model[shared..]);
                    }
                }
            }
        }
        out
    }
}

impl WireDown {
    /// The full layout (`replicas x k x p`) of `compact`; with stable
    /// identity the other clusters' models are zeros (never read).
    fn expand(&self, compact: &[f32]) -> Vec<f32> {
        let (k, p, shared) = (self.k as usize, self.p as usize, self.shared as usize);
        let mut full = vec![0.0; self.replicas as usize * k * p];
        let mut at = 0;
        for (r, replica) in full.chunks_exact_mut(k * p).enumerate() {
            match &self.own {
                Some(own) => {
                    let c = own[r] as usize;
                    replica[c * p..(c + 1) * p].copy_from_slice(&compact[at..at + p]);
                    at += p;
                }
                None => {
                    let prefix = &compact[at..at + shared];
                    at += shared;
                    for model in replica.chunks_exact_mut(p) {
                        model[..shared].copy_from_slice(prefix);
                        model[shared..].copy_from_slice(&compact[at..at + p - shared]);
                        at += p - shared;
                    }
                }
            }
        }
        full
    }

    /// Why the sizes do not fit together, if they do not.
    fn inconsistent(&self) -> Option<String> {
        let (r, k, p, shared) = (
            u128::from(self.replicas),
            u128::from(self.k),
            u128::from(self.p),
            u128::from(self.shared),
        );
        let per_replica = match &self.own {
            Some(own) => {
                if own.len() as u128 != r || own.iter().any(|&c| c >= self.k) {
                    return Some("own clusters do not fit the replicas and clusters".into());
                }
                p
            }
            None => shared + k * (p - shared.min(p)),
        };
        let full = r * k * p;
        if shared > p || k == 0 || self.lrs.len() as u128 != r {
            Some("inconsistent replicas, clusters, shared layers or step sizes".into())
        } else if full > fedcluster_core::limits::MAX_MODEL_VALUES {
            Some(format!("{full} model values, above the limit"))
        } else if self.models.len() as u128 != r * per_replica
            || self
                .velocities
                .as_ref()
                .is_some_and(|v| v.len() != self.models.len())
        {
            Some("model values do not fit the declared sizes".into())
        } else {
            None
        }
    }
}

impl Serialize for Down {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        WireDown {
            replicas: self.replicas as u32,
            k: self.k as u32,
            p: self.params_per_model() as u32,
            shared: self.shared as u32,
            lrs: self.lrs.to_vec(),
            own: self.own.clone(),
            models: self.compact(&self.models),
            velocities: self.velocities.as_ref().map(|v| self.compact(v)),
            assign_only: self.assign_only,
        }
        .serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for Down {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let wire = WireDown::deserialize(deserializer)?;
        if let Some(why) = wire.inconsistent() {
            return Err(serde::de::Error::custom(format!("IFCA message: {why}")));
        }
        Ok(Down {
            models: Arc::new(wire.expand(&wire.models)),
            replicas: wire.replicas as usize,
            k: wire.k as usize,
            lrs: Arc::new(wire.lrs.clone()),
            shared: wire.shared as usize,
            velocities: wire.velocities.as_ref().map(|v| Arc::new(wire.expand(v))),
            own: wire.own,
            assign_only: wire.assign_only,
        })
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
