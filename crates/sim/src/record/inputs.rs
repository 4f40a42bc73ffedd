//! What records are computed from besides the round event: the ground truth
//! of the federation ([`Truth`]) and the held-out test clients ([`TestSet`])
//! with the way each picks its model ([`TestPick`]).

use serde::{Deserialize, Serialize};

use fedcluster_core::{Model, Shards};

#[cfg(doc)]
use fedcluster_core::NewcomerRule;

/// What is known to be true about the federation (metrics only).
#[derive(Debug, Clone, Copy)]
pub struct Truth<'a> {
    /// Number of true clusters.
    pub clusters: usize,
    /// True cluster of each training client.
    pub labels: &'a [usize],
    /// True cluster of each test client.
    pub test_labels: &'a [usize],
    /// True cluster parameters, where the data are synthetic.
    pub params: Option<&'a [Vec<f32>]>,
}

/// Held-out test clients. Test client `i` is a new client: it is evaluated
/// with the model the algorithm's newcomer rule places it on from its own
/// data ([`NewcomerRule`]; for every algorithm the model of lowest loss, IFCA
/// paper, Section VI-B), unless [`TestPick`] says otherwise. Under local training each client's model is
/// evaluated on all test data of its true cluster and the accuracies (losses)
/// are averaged over the models, as in the IFCA paper's public code (or, with
/// [`TestPick::Own`], on the client's own test split).
#[derive(Clone, Copy)]
pub struct TestSet<'a> {
    /// The model architecture.
    pub model: &'a dyn Model,
    /// The test clients, stored or produced on demand.
    pub clients: &'a dyn Shards,
    /// The training clients: [`TestPick::Personal`] places a training client
    /// the algorithm never assigned from its training data.
    pub train: &'a dyn Shards,
    /// How a test client picks its model among several.
    pub pick: TestPick,
    /// Local training: score at most this many of the clients' models (evenly
    /// spaced by client id) on their cluster's test data; 0 scores them all.
    pub local_models: usize,
}

/// How a test client picks its model.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum TestPick {
    /// The model the algorithm's newcomer rule places it on, from its data
    /// ([`NewcomerRule`]): the model of lowest loss on its data (IFCA paper,
    /// Section VI-B) unless the algorithm has a rule of its own.
    #[default]
    LowestLoss,
    /// The model of highest accuracy on its data: with one test client per
    /// cluster, Su, Xu, Yang's "lowest misclassification error among the k
    /// models" (Section V-D).
    HighestAccuracy,
    /// No picking: each training client's assigned model is scored on all test
    /// data of the client's true cluster, and the scores are averaged over the
    /// training clients (the SR-FCA paper's "each client on its cluster's
    /// model"). An unassigned client scores accuracy 0 and an infinite loss.
    Assigned,
    /// Test client `i` is training client `i`'s own held-out split (LEAF's
    /// per-user split): each client's model (its cluster's, the global one, or
    /// under local training its own) is scored on its own test data, and the
    /// per-client accuracies and losses are averaged with equal weight per
    /// client (the SR-FCA paper's Table 3, as its public code computes it).
    /// An unassigned client scores accuracy 0 and an infinite loss.
    Own,
    /// As [`TestPick::Own`], but every training client is scored with the
    /// model the algorithm would give it: its assigned model, or, for a
    /// client never assigned (never sampled), the model the algorithm's
    /// newcomer rule places it on from its training data ([`NewcomerRule`]).
    /// Every training client with test data counts, with equal weight.
    Personal,
}
