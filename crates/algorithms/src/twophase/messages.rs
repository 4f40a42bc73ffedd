//! Messages of the two-phase method. Matrices travel row-major as `f32`.

use serde::{Deserialize, Serialize};
use std::sync::Arc;

use fedcluster_core::Message;
use fedcluster_core::params::all_finite;

use crate::common::messages::ModelReply;

/// What a subspace client computes from its residuals at each anchor's
/// estimate: their pair moment `M` (see `moments::add_moment`).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub enum MomentRequest {
    /// The whole `d x d` moment `M` (direct-SVD mode).
    Full,
    /// `M Q` with each anchor's `d x k` basis `Q` (one step of the federated
    /// orthogonal iteration; `M` is symmetric, so `Mᵀ Q` is the same).
    Apply {
        /// One `d x k` basis per anchor, back to back.
        bases: Arc<Vec<f32>>,
    },
}

/// Server to client.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub enum Down {
    /// Phase 1, step 9: residual moments at the anchors' current estimates.
    Moments {
        /// The estimates `θ_{i,t}` of the active anchors, `d` values each.
        estimates: Arc<Vec<f32>>,
        /// Full moments or one orthogonal-iteration product.
        request: MomentRequest,
    },
    /// Phase 1, steps 10-15: an anchor's moment-descent step.
    AnchorStep {
        /// The anchor's estimate `θ_{i,t}`.
        estimate: Vec<f32>,
        /// The estimated subspace `Ũ_{i,t}`, `d x k`.
        basis: Vec<f32>,
        /// Iteration `t` (selects fresh points in the exact mode).
        iteration: usize,
    },
    /// Phase 2: all `k` models `θ_{t−1}`, back to back.
    Models(Arc<Vec<f32>>),
    /// Phase 2 with known labels (the oracle): refine the model of `cluster`
    /// (only that model goes on the wire).
    Assigned {
        /// All `k` models, shared in process.
        models: Arc<Vec<f32>>,
        /// The client's true cluster.
        cluster: u32,
        /// Parameters per model.
        p: usize,
    },
}

/// Client to server.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub enum Up {
    /// One `d x d` or `d x k` matrix per anchor, back to back, and the weight
    /// `n_i` of this client.
    Moments {
        /// The matrices.
        values: Vec<f32>,
        /// Local sample count.
        samples: usize,
    },
    /// The anchor's new estimate and `σ̂`.
    AnchorStep {
        /// `θ_{i,t+1}` (unchanged when the anchor stopped).
        estimate: Vec<f32>,
        /// `σ̂_{i,t}`.
        sigma: f64,
        /// Whether the anchor stopped (`σ̂ <= ε α Δ / √2`).
        stopped: bool,
    },
    /// Phase 2: the chosen cluster and its refined model.
    Refined {
        /// `z_{i,t}`, the lowest-loss model.
        cluster: u32,
        /// The refined model, the loss of `θ_{z,t−1}` and the sample count.
        reply: ModelReply,
    },
}

impl Message for Down {
    fn wire_bytes(&self) -> u64 {
        4 + match self {
            Down::Moments { estimates, request } => {
                let bases = match request {
                    MomentRequest::Full => 0,
                    MomentRequest::Apply { bases, .. } => bases.len() as u64 * 4,
                };
                estimates.len() as u64 * 4 + bases
            }
            Down::AnchorStep {
                estimate, basis, ..
            } => (estimate.len() + basis.len()) as u64 * 4 + 4,
            Down::Models(models) => models.len() as u64 * 4,
            Down::Assigned { p, .. } => 4 + *p as u64 * 4,
        }
    }
    fn is_finite(&self) -> bool {
        match self {
            Down::Moments { estimates, request } => {
                all_finite(estimates)
                    && match request {
                        MomentRequest::Full => true,
                        MomentRequest::Apply { bases, .. } => all_finite(bases),
                    }
            }
            Down::AnchorStep {
                estimate, basis, ..
            } => all_finite(estimate) && all_finite(basis),
            Down::Models(models) | Down::Assigned { models, .. } => all_finite(models),
        }
    }
}

impl Message for Up {
    fn wire_bytes(&self) -> u64 {
        4 + match self {
            Up::Moments { values, .. } => values.len() as u64 * 4 + 8,
            Up::AnchorStep { estimate, .. } => estimate.len() as u64 * 4 + 9,
            Up::Refined { reply, .. } => 4 + reply.wire_bytes(),
        }
    }
    fn is_finite(&self) -> bool {
        match self {
            Up::Moments { values, .. } => all_finite(values),
            Up::AnchorStep {
                estimate, sigma, ..
            } => all_finite(estimate) && sigma.is_finite(),
            Up::Refined { reply, .. } => reply.is_finite(),
        }
    }
}
