//! FedEM and FedRC messages.

use std::sync::Arc;

use serde::{Deserialize, Serialize};

use fedcluster_core::Message;
use fedcluster_core::params::all_finite;

/// Server to client: the components and, for FedRC, their label priors.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Components {
    /// The `M` components, back to back.
    pub models: Arc<Vec<f32>>,
    /// FedRC's `P_k(y)`, `M × C` row-major; empty under FedEM and before
    /// FedRC's first aggregation.
    pub label_prior: Arc<Vec<f64>>,
}

/// Client to server.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct MixtureReply {
    /// The locally trained components, back to back (zeros when `loss` is
    /// `None`).
    pub models: Vec<f32>,
    /// The client's mixture weights `π` after this round's E-step.
    pub weights: Vec<f64>,
    /// FedRC's soft label counts, `M × C` (empty under FedEM).
    pub label_mass: Vec<f64>,
    /// The mixture's negative log-likelihood at the start (`None` if training
    /// diverged).
    pub loss: Option<f64>,
    /// `n_i`.
    pub samples: usize,
}

impl Message for Components {
    fn wire_bytes(&self) -> u64 {
        self.models.len() as u64 * 4 + self.label_prior.len() as u64 * 8
    }
    fn is_finite(&self) -> bool {
        all_finite(&self.models) && self.label_prior.iter().all(|p| p.is_finite())
    }
}

impl Message for MixtureReply {
    fn wire_bytes(&self) -> u64 {
        self.models.len() as u64 * 4 + (self.weights.len() + self.label_mass.len()) as u64 * 8 + 16
    }
    fn is_finite(&self) -> bool {
        all_finite(&self.models)
            && self.weights.iter().all(|w| w.is_finite())
            && self.label_mass.iter().all(|m| m.is_finite())
            && self.loss.is_none_or(f64::is_finite)
    }
}
