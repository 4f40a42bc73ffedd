//! [`RoundRecord`]: one row of `metrics.csv`, the serialized record of a
//! replica after a round.

use serde::{Deserialize, Serialize};

/// One row of `metrics.csv`: a replica after a round. (Read back from a
/// `metrics.csv`, which has neither, `replica` and `seconds` are 0.)
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct RoundRecord {
    /// Round index, from 0.
    pub round: usize,
    /// Replica (restart) index.
    #[serde(default)]
    pub replica: usize,
    /// Sample-weighted training loss reported by the clients.
    pub train_loss: Option<f64>,
    /// Parameter error against the true cluster parameters.
    pub param_error: Option<f64>,
    /// Fraction of misclustered training clients (best one-to-one matching of
    /// models to true clusters).
    pub misclustering: Option<f64>,
    /// Number of cluster models (clustered algorithms only).
    pub clusters_found: Option<usize>,
    /// Misclustering with each found cluster labelled by its majority true
    /// cluster (SR-FCA, Definition 3.1): split clusters are not penalised.
    pub majority_misclustering: Option<f64>,
    /// Mean test loss (when a test set was evaluated this round).
    pub test_loss: Option<f64>,
    /// Test accuracy (classification only).
    pub test_accuracy: Option<f64>,
    /// Fraction of test clients whose lowest-loss model is not their cluster's,
    /// under the best one-to-one matching of models to clusters.
    pub test_misclustering: Option<f64>,
    /// Misclustering of this round's participants alone (their assignments
    /// after the round, best one-to-one matching): how well the clients that
    /// just chose a cluster chose it. `None` when none of them is assigned.
    #[serde(default)]
    pub round_misclustering: Option<f64>,
    /// Adjusted Rand index of the training clients' assignment against their
    /// true clusters (unassigned clients each a cluster of one).
    #[serde(default)]
    pub ari: Option<f64>,
    /// Normalised mutual information (arithmetic mean) of the same two
    /// partitions.
    #[serde(default)]
    pub nmi: Option<f64>,
    /// Clients that took part.
    pub participants: usize,
    /// Bytes sent down this round.
    pub bytes_down: u64,
    /// Bytes sent up this round.
    pub bytes_up: u64,
    /// Seconds this round took.
    #[serde(default)]
    pub seconds: f64,
    /// Whether the replica has diverged.
    pub diverged: bool,
}
