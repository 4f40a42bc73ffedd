//! PACFL messages: the one-shot subspace phase, then FedAvg's.

use fedcluster_core::Message;
use fedcluster_core::params::all_finite;
use serde::{Deserialize, Serialize};

use crate::common::messages::{ClusterModel, ModelReply};

/// Server to client.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub enum Down {
    /// Round 0: send the principal vectors of your data.
    Basis,
    /// Later rounds: a FedAvg round inside your cluster.
    Train(ClusterModel),
}

/// A client's data subspace: unit columns of `dim` values, back to back.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Basis {
    /// Values per column (the data's features).
    pub dim: u32,
    /// The columns, `dim` values each.
    pub columns: Vec<f32>,
}

impl Basis {
    /// The number of columns, or `None` when the values are not whole
    /// columns.
    pub fn cols(&self) -> Option<usize> {
        let d = self.dim as usize;
        (d > 0 && self.columns.len().is_multiple_of(d)).then(|| self.columns.len() / d)
    }
}

/// Client to server.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub enum Up {
    /// Round 0: the client's subspace.
    Basis(Basis),
    /// Later rounds: the FedAvg reply.
    Train(ModelReply),
}

impl Message for Down {
    fn wire_bytes(&self) -> u64 {
        match self {
            Down::Basis => 4,
            Down::Train(m) => 4 + m.wire_bytes(),
        }
    }
    fn is_finite(&self) -> bool {
        match self {
            Down::Basis => true,
            Down::Train(m) => m.is_finite(),
        }
    }
}

impl Message for Up {
    fn wire_bytes(&self) -> u64 {
        match self {
            Up::Basis(b) => 4 + 4 + 4 * b.columns.len() as u64,
            Up::Train(m) => 4 + m.wire_bytes(),
        }
    }
    fn is_finite(&self) -> bool {
        match self {
            Up::Basis(b) => all_finite(&b.columns),
            Up::Train(m) => m.is_finite(),
        }
    }
}
