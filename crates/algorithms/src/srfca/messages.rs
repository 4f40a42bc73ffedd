//! SR-FCA messages.

use serde::{Deserialize, Serialize};
use std::sync::Arc;

use fedcluster_core::Message;
use fedcluster_core::params::all_finite;

use crate::common::messages::ModelReply;

/// Server to client. On the wire `Gradient` carries only the client's
/// cluster model (read back as cluster 0 of a one-model buffer); the other
/// variants as they are.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(into = "WireDown", from = "WireDown")]
pub enum Down {
    /// ONE_SHOT: train a local model from `w_0`.
    TrainLocal(Arc<Vec<f32>>),
    /// ONE_SHOT spread over rounds (`local_rounds`): train `steps` steps
    /// from `w_0` (the first part) or on from the model kept since the last
    /// part (`None`); `keep` it for the next part (replying with the loss
    /// only) or send it (the last part).
    TrainLocalPart {
        /// `w_0`, in the first part.
        w0: Option<Arc<Vec<f32>>>,
        /// This part's local steps.
        steps: usize,
        /// Whether more parts follow.
        keep: bool,
    },
    /// Report the loss of each of these models (back to back) on your data.
    Evaluate {
        /// The models.
        models: Arc<Vec<f32>>,
        /// Parameters per model.
        p: usize,
    },
    /// ONE_SHOT-IFCA: pick the lowest-loss model among these and train it.
    Ifca {
        /// All cluster models, back to back.
        models: Arc<Vec<f32>>,
        /// Parameters per model.
        p: usize,
        /// Local gradient steps.
        local_steps: usize,
    },
    /// TrimmedMeanGD: the gradient of your loss at the model of `cluster`
    /// (`local_steps = 1`), or your update after `local_steps` steps from it,
    /// divided by the step size.
    Gradient {
        /// All cluster models, shared in process.
        models: Arc<Vec<f32>>,
        /// The client's cluster.
        cluster: u32,
        /// Parameters per model.
        p: usize,
        /// Local steps.
        local_steps: usize,
    },
}

/// [`Down`] as it crosses the wire.
#[derive(Serialize, Deserialize)]
enum WireDown {
    TrainLocal(Vec<f32>),
    TrainLocalPart {
        w0: Option<Vec<f32>>,
        steps: usize,
        keep: bool,
    },
    Evaluate {
        models: Vec<f32>,
        p: usize,
    },
    Ifca {
        models: Vec<f32>,
        p: usize,
        local_steps: usize,
    },
    Gradient {
        model: Vec<f32>,
        cluster: u32,
        local_steps: usize,
    },
}

impl From<Down> for WireDown {
    fn from(down: Down) -> Self {
        match down {
            Down::TrainLocal(w0) => WireDown::TrainLocal(w0.to_vec()),
            Down::TrainLocalPart { w0, steps, keep } => WireDown::TrainLocalPart {
                w0: w0.map(|w0| w0.to_vec()),
                steps,
                keep,
            },
            Down::Evaluate { models, p } => WireDown::Evaluate {
                models: models.to_vec(),
                p,
            },
            Down::Ifca {
                models,
                p,
                local_steps,
            } => WireDown::Ifca {
                models: models.to_vec(),
                p,
                local_steps,
            },
            Down::Gradient {
                models,
                cluster,
                p,
                local_steps,
            } => {
                let c = cluster as usize;
                WireDown::Gradient {
                    model: models.get(c * p..(c + 1) * p).unwrap_or_default().to_vec(),
                    cluster,
                    local_steps,
                }
            }
        }
    }
}

impl From<WireDown> for Down {
    fn from(wire: WireDown) -> Self {
        match wire {
            WireDown::TrainLocal(w0) => Down::TrainLocal(Arc::new(w0)),
            WireDown::TrainLocalPart { w0, steps, keep } => Down::TrainLocalPart {
                w0: w0.map(Arc::new),
                steps,
                keep,
            },
            WireDown::Evaluate { models, p } => Down::Evaluate {
                models: Arc::new(models),
                p,
            },
            WireDown::Ifca {
                models,
                p,
                local_steps,
            } => Down::Ifca {
                models: Arc::new(models),
                p,
                local_steps,
            },
            WireDown::Gradient {
                model, local_steps, ..
            } => Down::Gradient {
                p: model.len(),
                models: Arc::new(model),
                cluster: 0,
                local_steps,
            },
        }
    }
}

/// Client to server.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub enum Up {
    /// The local model.
    Local(ModelReply),
    /// A part of ONE_SHOT's local training that keeps its model: the
    /// training loss (`None`: diverged) and the sample count.
    Progress {
        /// The mean training loss of the part's steps.
        loss: Option<f64>,
        /// The client's samples.
        samples: usize,
    },
    /// One loss per evaluated model.
    Losses(Vec<f64>),
    /// The gradient at the cluster model.
    Gradient(ModelReply),
    /// ONE_SHOT-IFCA: the chosen cluster and its trained model.
    Trained {
        /// The lowest-loss model.
        cluster: u32,
        /// The trained model, the loss at the start and the sample count.
        reply: ModelReply,
    },
}

impl Message for Down {
    fn wire_bytes(&self) -> u64 {
        4 + match self {
            Down::TrainLocal(w0) => w0.len() as u64 * 4,
            Down::TrainLocalPart { w0, .. } => {
                1 + 8 + 1 + w0.as_ref().map_or(0, |w| w.len()) as u64 * 4
            }
            Down::Evaluate { models, .. } | Down::Ifca { models, .. } => models.len() as u64 * 4,
            Down::Gradient { p, .. } => *p as u64 * 4 + 8,
        }
    }
    fn is_finite(&self) -> bool {
        match self {
            Down::TrainLocalPart { w0, .. } => w0.as_ref().is_none_or(|w| all_finite(w)),
            Down::TrainLocal(m)
            | Down::Evaluate { models: m, .. }
            | Down::Ifca { models: m, .. }
            | Down::Gradient { models: m, .. } => all_finite(m),
        }
    }
}

impl Message for Up {
    fn wire_bytes(&self) -> u64 {
        4 + match self {
            Up::Local(r) | Up::Gradient(r) => r.wire_bytes(),
            Up::Trained { reply, .. } => 4 + reply.wire_bytes(),
            Up::Losses(l) => l.len() as u64 * 8,
            Up::Progress { .. } => 1 + 8 + 8,
        }
    }
    fn is_finite(&self) -> bool {
        match self {
            Up::Local(r) | Up::Gradient(r) | Up::Trained { reply: r, .. } => r.is_finite(),
            Up::Losses(l) => l.iter().all(|v| v.is_finite()),
            Up::Progress { loss, .. } => loss.is_none_or(f64::is_finite),
        }
    }
}
