//! One-shot clustering messages: the ERM phase, then FedAvg's.

use fedcluster_core::Message;
use serde::{Deserialize, Serialize};

use crate::common::messages::{ClusterModel, ModelReply};

/// Server to client.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub enum Down {
    /// Phase 1: compute and send your local ERM, from this start when the
    /// server sends one (`erm_start = "shared"`).
    Erm(Option<ClusterModel>),
    /// Phase 2: a FedAvg round inside your cluster.
    Train(ClusterModel),
}

/// Client to server.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub enum Up {
    /// Phase 1: the local ERM.
    Erm(ModelReply),
    /// Phase 2: the FedAvg reply.
    Train(ModelReply),
}

impl Message for Down {
    fn wire_bytes(&self) -> u64 {
        match self {
            Down::Erm(None) => 4,
            Down::Erm(Some(m)) | Down::Train(m) => 4 + m.wire_bytes(),
        }
    }
    fn is_finite(&self) -> bool {
        match self {
            Down::Erm(None) => true,
            Down::Erm(Some(m)) | Down::Train(m) => m.is_finite(),
        }
    }
}

impl Message for Up {
    fn wire_bytes(&self) -> u64 {
        match self {
            Up::Erm(m) | Up::Train(m) => 4 + m.wire_bytes(),
        }
    }
    fn is_finite(&self) -> bool {
        match self {
            Up::Erm(m) | Up::Train(m) => m.is_finite(),
        }
    }
}
