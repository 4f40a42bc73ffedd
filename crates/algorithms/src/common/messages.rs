//! Messages shared by the FedAvg-style algorithms (FedAvg, oracle, one-shot,
//! local).

use serde::{Deserialize, Serialize};
use std::sync::Arc;

use fedcluster_core::Message;
use fedcluster_core::params::all_finite;

/// Server to client: train from the model of `cluster` (the shared buffer holds
/// all cluster models; only the one named is sent on the wire).
///
/// Wire form: the cluster and that one model (`p` values). Read back, the
/// buffer holds just that model (as cluster 0 of a one-model buffer).
#[derive(Debug, Clone)]
pub struct ClusterModel {
    /// All cluster models, `k x p` values, shared in process.
    pub models: Arc<Vec<f32>>,
    /// Which model this client trains.
    pub cluster: u32,
    /// Parameters per model.
    pub p: usize,
}

impl ClusterModel {
    /// The model this message carries.
    pub fn model(&self) -> &[f32] {
        let c = self.cluster as usize;
        &self.models[c * self.p..(c + 1) * self.p]
    }
}

/// [`ClusterModel`]'s wire form.
#[derive(Serialize, Deserialize)]
struct WireModel<M> {
    cluster: u32,
    model: M,
}

impl Serialize for ClusterModel {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        WireModel {
            cluster: self.cluster,
            model: self.model(),
        }
        .serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for ClusterModel {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let wire = WireModel::<Vec<f32>>::deserialize(deserializer)?;
        Ok(ClusterModel {
            p: wire.model.len(),
            models: Arc::new(wire.model),
            cluster: 0,
        })
    }
}

impl Message for ClusterModel {
    fn wire_bytes(&self) -> u64 {
        self.p as u64 * 4 + 4
    }
    fn is_finite(&self) -> bool {
        all_finite(self.model())
    }
}

/// Client to server: a gradient or a trained model, the loss at the starting
/// point (`None` if it or the update was not finite) and the sample count.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ModelReply {
    /// Gradient or model, `p` values (zeros when `loss` is `None`).
    pub payload: Vec<f32>,
    /// Loss at the received model.
    pub loss: Option<f64>,
    /// Number of local training samples.
    pub samples: usize,
}

impl ModelReply {
    /// A reply that reports non-finite training as `loss: None`.
    pub fn checked(mut payload: Vec<f32>, loss: f64, samples: usize) -> Self {
        if loss.is_finite() && all_finite(&payload) {
            Self {
                payload,
                loss: Some(loss),
                samples,
            }
        } else {
            payload.fill(0.0);
            Self {
                payload,
                loss: None,
                samples,
            }
        }
    }
}

impl Message for ModelReply {
    fn wire_bytes(&self) -> u64 {
        self.payload.len() as u64 * 4 + 16
    }
    fn is_finite(&self) -> bool {
        self.loss.is_none_or(f64::is_finite) && all_finite(&self.payload)
    }
}
