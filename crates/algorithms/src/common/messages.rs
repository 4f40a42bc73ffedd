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
    /// Whether the constructor found `payload` finite ([`ModelReply::checked`],
    /// [`ModelReply::trained`]), so that the engine's check of the reply
    /// scans nothing again; never a peer's say, as it is not on the wire.
    /// It holds while `payload` is not edited after construction (nothing
    /// here edits a built reply).
    #[serde(skip)]
    vouched_finite: bool,
}

impl ModelReply {
    /// A reply as it stands, checked only where it is received.
    pub fn new(payload: Vec<f32>, loss: Option<f64>, samples: usize) -> Self {
        Self {
            payload,
            loss,
            samples,
            vouched_finite: false,
        }
    }

    /// A reply that reports non-finite training as `loss: None`.
    pub fn checked(payload: Vec<f32>, loss: f64, samples: usize) -> Self {
        let finite = loss.is_finite() && all_finite(&payload);
        Self::vouched(payload, loss, finite, samples)
    }

    /// [`ModelReply::checked`] for the parameters a
    /// [`crate::common::trainer::LocalTrainer`] trained from finite ones and
    /// the loss it returned, which is finite only if they are: no second scan
    /// of them.
    pub fn trained(params: Vec<f32>, loss: f64, samples: usize) -> Self {
        debug_assert!(!loss.is_finite() || all_finite(&params), "trainer contract");
        Self::vouched(params, loss, loss.is_finite(), samples)
    }

    fn vouched(mut payload: Vec<f32>, loss: f64, finite: bool, samples: usize) -> Self {
        if !finite {
            payload.fill(0.0);
        }
        Self {
            payload,
            loss: finite.then_some(loss),
            samples,
            vouched_finite: true,
        }
    }
}

impl Message for ModelReply {
    fn wire_bytes(&self) -> u64 {
        self.payload.len() as u64 * 4 + 16
    }
    fn is_finite(&self) -> bool {
        self.loss.is_none_or(f64::is_finite) && (self.vouched_finite || all_finite(&self.payload))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_reply_built_here_skips_the_receivers_scan() {
        let nan = vec![1.0, f32::NAN];
        // Built from a diverged training: reported, zeroed, finite.
        let checked = ModelReply::checked(nan.clone(), 0.5, 3);
        assert_eq!(
            (checked.loss, &checked.payload[..]),
            (None, &[0.0, 0.0][..])
        );
        assert!(checked.is_finite());
        assert!(ModelReply::trained(nan.clone(), f64::NAN, 3).loss.is_none());
        // As it stands: the receiver's check scans it.
        assert!(!ModelReply::new(nan.clone(), Some(0.5), 3).is_finite());
        // A peer's bytes never carry the vouching, however the sender built it.
        let mut vouched = ModelReply::checked(vec![1.0, 2.0], 0.5, 3);
        let bytes = postcard::to_allocvec(&vouched).unwrap();
        let read: ModelReply = postcard::from_bytes(&bytes).unwrap();
        assert!(!read.vouched_finite && read.is_finite());
        vouched.payload[1] = f32::INFINITY;
        let bytes = postcard::to_allocvec(&vouched).unwrap();
        let read: ModelReply = postcard::from_bytes(&bytes).unwrap();
        assert!(!read.is_finite(), "an infinity from the wire is caught");
    }
}
