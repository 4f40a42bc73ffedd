//! Turning round events into metric records: training loss, parameter error and
//! misclustering against the ground truth, test loss and accuracy on held-out
//! clients, bytes and seconds. Ground truth enters here, never in an algorithm.

use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use fedcluster_core::model::argmin_f64;
use fedcluster_core::{ClientId, Model, NewcomerRule, ReplicaView, ShardBuf, Shards, Workspace};
use fedcluster_metrics::clustering::{
    majority_misclustering, misclustering, param_error, per_client_param_error,
};
use fedcluster_metrics::partition::agreement;

use crate::engine::RoundEvent;

#[cfg(test)]
mod columns_tests;
mod personal;

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

/// The records of every replica after `event`; the test set (if any) is
/// evaluated for every non-diverged replica.
pub fn records(
    event: &RoundEvent<'_>,
    truth: &Truth<'_>,
    test: Option<&TestSet<'_>>,
) -> Vec<RoundRecord> {
    event
        .snapshot
        .replicas
        .iter()
        .enumerate()
        .map(|(r, view)| {
            let (test_loss, test_accuracy, test_misclustering) = match test {
                Some(t)
                    if !view.diverged
                        && !view.models.is_empty()
                        && t.pick == TestPick::Personal =>
                {
                    let (loss, accuracy) = personal::evaluate(view, t, event.newcomer);
                    (loss, accuracy, None)
                }
                Some(t) if !view.diverged && !view.models.is_empty() && t.pick == TestPick::Own => {
                    let (loss, accuracy) = evaluate_own(view, t);
                    (loss, accuracy, None)
                }
                Some(t)
                    if !view.diverged
                        && !view.models.is_empty()
                        && (is_local(view) || t.pick == TestPick::Assigned) =>
                {
                    let (loss, accuracy) = evaluate_assigned(view, t, truth);
                    (loss, accuracy, None)
                }
                Some(t) if !view.diverged && !view.models.is_empty() => {
                    let e = evaluate(view, t, event.newcomer);
                    let identity = (view.models.len() > 1 && !is_local(view))
                        .then(|| {
                            misclustering(
                                &e.chosen,
                                view.models.len(),
                                truth.test_labels,
                                truth.clusters,
                            )
                        })
                        .flatten();
                    (e.loss, e.accuracy, identity)
                }
                _ => (None, None, None),
            };
            let agree = partition_agreement(view, truth);
            RoundRecord {
                round: event.round,
                replica: r,
                train_loss: view.train_loss,
                param_error: parameter_error(view, truth),
                misclustering: cluster_error(view, truth),
                round_misclustering: participants_cluster_error(view, truth, event.replied),
                ari: agree.map(|a| a.ari),
                nmi: agree.map(|a| a.nmi),
                clusters_found: (!is_local(view) && !view.models.is_empty())
                    .then_some(view.models.len()),
                majority_misclustering: (!is_local(view) && view.models.len() > 1)
                    .then(|| majority_misclustering(view.assignment, truth.labels))
                    .flatten(),
                test_loss,
                test_accuracy,
                test_misclustering,
                participants: event.participants,
                bytes_down: event.bytes_down,
                bytes_up: event.bytes_up,
                seconds: event.seconds,
                diverged: view.diverged,
            }
        })
        .collect()
}

fn is_local(view: &ReplicaView<'_>) -> bool {
    view.models.len() == view.assignment.len()
        && view
            .assignment
            .iter()
            .enumerate()
            .all(|(i, a)| *a == Some(i))
}

fn parameter_error(view: &ReplicaView<'_>, truth: &Truth<'_>) -> Option<f64> {
    let params = truth.params?;
    if view.models.len() == truth.clusters && !is_local(view) {
        param_error(&view.models, params)
    } else if !view.models.is_empty() {
        per_client_param_error(&view.models, view.assignment, truth.labels, params)
    } else {
        None
    }
}

/// Clusterings only: one model for all or one per client assigns nothing.
fn is_clustering(view: &ReplicaView<'_>) -> bool {
    view.models.len() > 1 && !is_local(view)
}

fn cluster_error(view: &ReplicaView<'_>, truth: &Truth<'_>) -> Option<f64> {
    if !is_clustering(view) {
        return None;
    }
    misclustering(
        view.assignment,
        view.models.len(),
        truth.labels,
        truth.clusters,
    )
}

/// ARI and NMI of the training clients' assignment against the truth, for
/// clusterings where the true clusters are known.
fn partition_agreement(
    view: &ReplicaView<'_>,
    truth: &Truth<'_>,
) -> Option<fedcluster_metrics::Agreement> {
    if !is_clustering(view) || truth.clusters == 0 {
        return None;
    }
    agreement(view.assignment, truth.labels)
}

/// [`cluster_error`] over the clients in `replied` only.
fn participants_cluster_error(
    view: &ReplicaView<'_>,
    truth: &Truth<'_>,
    replied: &[ClientId],
) -> Option<f64> {
    if !is_clustering(view) {
        return None;
    }
    let (assigned, labels): (Vec<Option<usize>>, Vec<usize>) = replied
        .iter()
        .filter_map(|&c| Some((*view.assignment.get(c)?, *truth.labels.get(c)?)))
        .unzip();
    if assigned.iter().all(Option::is_none) {
        return None;
    }
    misclustering(&assigned, view.models.len(), &labels, truth.clusters)
}

/// A worker's scratch while scoring test clients: the model's workspace and
/// the buffer a produced client is written into.
#[derive(Default)]
struct Scratch(Workspace, ShardBuf);

/// What the test clients make of one replica.
struct Evaluation {
    /// Sample-weighted mean test loss.
    loss: Option<f64>,
    /// Sample-weighted test accuracy (classification).
    accuracy: Option<f64>,
    /// The model each test client picked.
    chosen: Vec<Option<usize>>,
}

/// Mean test loss and accuracy (sample-weighted) of one replica, and the model
/// each test client picked (`None` where the newcomer rule placed it nowhere:
/// accuracy 0, infinite loss).
fn evaluate(view: &ReplicaView<'_>, test: &TestSet<'_>, newcomer: &dyn NewcomerRule) -> Evaluation {
    let per_client: Vec<(f64, Option<usize>, usize, Option<usize>)> = (0..test
        .clients
        .num_clients())
        .into_par_iter()
        .map_init(Scratch::default, |Scratch(ws, buf), i| {
            let batch = test.clients.batch(i, buf);
            // Each model is scored once, by what picks it; the pick's other
            // number is computed once more.
            match test.pick {
                TestPick::LowestLoss => {
                    let placed = newcomer
                        .place(&view.models, batch, test.model, ws)
                        .filter(|p| p.model < view.models.len());
                    let Some(placed) = placed else {
                        return (f64::INFINITY, Some(0), batch.len(), None);
                    };
                    let params = view.models[placed.model];
                    let loss = (placed.loss).unwrap_or_else(|| test.model.loss(params, batch, ws));
                    let correct = test.model.count_correct(params, batch, ws);
                    (loss, correct, batch.len(), Some(placed.model))
                }
                TestPick::HighestAccuracy
                | TestPick::Assigned
                | TestPick::Own
                | TestPick::Personal => {
                    let correct: Vec<Option<usize>> = (view.models.iter())
                        .map(|m| test.model.count_correct(m, batch, ws))
                        .collect();
                    let errors: Vec<f64> = (correct.iter())
                        .map(|c| (batch.len() - c.unwrap_or(0)) as f64)
                        .collect();
                    let pick = argmin_f64(&errors);
                    let loss = test.model.loss(view.models[pick], batch, ws);
                    (loss, correct[pick], batch.len(), Some(pick))
                }
            }
        })
        .collect();
    let chosen = per_client.iter().map(|c| c.3).collect();
    let samples: usize = per_client.iter().map(|c| c.2).sum();
    if samples == 0 {
        return Evaluation {
            loss: None,
            accuracy: None,
            chosen,
        };
    }
    let loss = per_client.iter().map(|c| c.0 * c.2 as f64).sum::<f64>() / samples as f64;
    let accuracy = per_client
        .iter()
        .map(|c| c.1.map(|k| k as f64))
        .sum::<Option<f64>>()
        .map(|correct| correct / samples as f64);
    Evaluation {
        loss: Some(loss),
        accuracy,
        chosen,
    }
}

/// Each training client's assigned model on every test client of its true
/// cluster: the mean over training clients (all, or under local training
/// `test.local_models` of them evenly spaced) of the sample-weighted test loss
/// and accuracy. Each distinct (model, cluster) pair is evaluated once.
fn evaluate_assigned(
    view: &ReplicaView<'_>,
    test: &TestSet<'_>,
    truth: &Truth<'_>,
) -> (Option<f64>, Option<f64>) {
    let m = view.assignment.len().min(truth.labels.len());
    let stride = match test.local_models {
        cap if cap > 0 && is_local(view) => m.div_ceil(cap).max(1),
        _ => 1,
    };
    let scored: Vec<(Option<usize>, usize)> = (0..m)
        .step_by(stride)
        .map(|i| (view.assignment[i], truth.labels[i]))
        .collect();
    let mut pairs: Vec<(usize, usize)> = scored
        .iter()
        .filter_map(|&(model, cluster)| Some((model?, cluster)))
        .filter(|(model, _)| *model < view.models.len())
        .collect();
    pairs.sort_unstable();
    pairs.dedup();
    let pair_scores: Vec<Option<(f64, Option<f64>)>> = pairs
        .par_iter()
        .map_init(Scratch::default, |Scratch(ws, buf), &(model, cluster)| {
            cluster_score(view.models[model], cluster, test, truth, ws, buf)
        })
        .collect();
    let score_of = |model: Option<usize>, cluster: usize| -> Option<(f64, Option<f64>)> {
        match model {
            Some(model) => {
                let at = pairs.binary_search(&(model, cluster)).ok()?;
                pair_scores[at]
            }
            None => Some((f64::INFINITY, Some(0.0))),
        }
    };
    let per_client: Vec<(f64, Option<f64>)> = scored
        .iter()
        .filter_map(|&(model, cluster)| score_of(model, cluster))
        .collect();
    mean_over_clients(&per_client)
}

/// Each training client's model on its own test split (test client `i` is
/// training client `i`'s): the unweighted means over clients of the
/// per-client test loss and accuracy. Clients without test data are left out.
fn evaluate_own(view: &ReplicaView<'_>, test: &TestSet<'_>) -> (Option<f64>, Option<f64>) {
    let m = view.assignment.len().min(test.clients.num_clients());
    let per_client: Vec<(f64, Option<f64>)> = (0..m)
        .into_par_iter()
        .filter(|&i| test.clients.samples(i) > 0)
        .map_init(Scratch::default, |Scratch(ws, buf), i| {
            let batch = test.clients.batch(i, buf);
            match view.assignment[i].and_then(|a| view.models.get(a)) {
                Some(params) => {
                    let (loss, correct) = test.model.loss_and_correct(params, batch, ws);
                    (loss, correct.map(|c| c as f64 / batch.len() as f64))
                }
                None => (f64::INFINITY, Some(0.0)),
            }
        })
        .collect();
    mean_over_clients(&per_client)
}

/// The unweighted means of per-client (loss, accuracy) scores; the accuracy
/// only when every client has one; `(None, None)` for no client.
pub(crate) fn mean_over_clients(per_client: &[(f64, Option<f64>)]) -> (Option<f64>, Option<f64>) {
    if per_client.is_empty() {
        return (None, None);
    }
    let n = per_client.len() as f64;
    let loss = per_client.iter().map(|s| s.0).sum::<f64>() / n;
    let accuracy = per_client
        .iter()
        .map(|s| s.1)
        .sum::<Option<f64>>()
        .map(|a| a / n);
    (Some(loss), accuracy)
}

/// Sample-weighted test loss and accuracy of `params` on every test client of
/// `cluster`; `None` when the cluster has no test data.
fn cluster_score(
    params: &[f32],
    cluster: usize,
    test: &TestSet<'_>,
    truth: &Truth<'_>,
    ws: &mut Workspace,
    buf: &mut ShardBuf,
) -> Option<(f64, Option<f64>)> {
    let (mut loss, mut correct, mut samples) = (0.0, Some(0usize), 0usize);
    let m = test.clients.num_clients().min(truth.test_labels.len());
    for i in (0..m).filter(|&i| truth.test_labels[i] == cluster) {
        let batch = test.clients.batch(i, buf);
        let (batch_loss, batch_correct) = test.model.loss_and_correct(params, batch, ws);
        loss += batch_loss * batch.len() as f64;
        correct = correct.zip(batch_correct).map(|(a, b)| a + b);
        samples += batch.len();
    }
    (samples > 0).then(|| {
        (
            loss / samples as f64,
            correct.map(|c| c as f64 / samples as f64),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use fedcluster_core::{Batch, Targets};
    use fedcluster_models::LogisticRegression;

    #[test]
    fn assigned_scores_each_training_client_on_its_clusters_test_data() {
        // Model 0 always predicts class 0, model 1 class 1; test cluster c holds
        // only class c.
        let model = LogisticRegression::new(1, 2).unwrap();
        let (zero, one) = ([0.0, 0.0, 5.0, -5.0], [0.0, 0.0, -5.0, 5.0]);
        let x = [1.0f32; 4];
        let (y0, y1) = ([0u32; 4], [1u32; 2]);
        let clients = vec![
            Batch::new(&x, Targets::Class(&y0), 1).unwrap(),
            Batch::new(&x[..2], Targets::Class(&y1), 1).unwrap(),
        ];
        let test = TestSet {
            model: &model,
            clients: &clients,
            train: &clients,
            pick: TestPick::Assigned,
            local_models: 0,
        };
        let labels = [0, 1, 1, 0];
        let truth = Truth {
            clusters: 2,
            labels: &labels,
            test_labels: &[0, 1],
            params: None,
        };
        // Clients 0 and 1 hold their cluster's model, client 2 the other one,
        // client 3 none: accuracies 1, 1, 0, 0.
        let assignment = [Some(0), Some(1), Some(0), None];
        let view = ReplicaView {
            models: vec![&zero, &one],
            assignment: &assignment,
            train_loss: None,
            diverged: false,
        };
        let (loss, accuracy) = evaluate_assigned(&view, &test, &truth);
        assert_eq!(accuracy, Some(0.5));
        assert_eq!(loss, Some(f64::INFINITY));
        // Assigned to their own cluster's model, all score 1.
        let right = [Some(0), Some(1), Some(1), Some(0)];
        let view = ReplicaView {
            assignment: &right,
            ..view
        };
        let (loss, accuracy) = evaluate_assigned(&view, &test, &truth);
        assert_eq!(accuracy, Some(1.0));
        assert!(loss.unwrap() < 1e-3);
    }

    #[test]
    fn own_scores_each_client_on_its_own_split_with_equal_weight() {
        // Model 0 predicts class 0, model 1 class 1. Client 0 holds 4 points of
        // class 0, client 1 one point of class 1 and one of class 0, client 2
        // 2 points of class 1.
        let model = LogisticRegression::new(1, 2).unwrap();
        let (zero, one) = ([0.0, 0.0, 5.0, -5.0], [0.0, 0.0, -5.0, 5.0]);
        let x = [1.0f32; 4];
        let (y0, y1, y2) = ([0u32; 4], [1u32, 0], [1u32; 2]);
        let clients = vec![
            Batch::new(&x, Targets::Class(&y0), 1).unwrap(),
            Batch::new(&x[..2], Targets::Class(&y1), 1).unwrap(),
            Batch::new(&x[..2], Targets::Class(&y2), 1).unwrap(),
        ];
        let test = TestSet {
            model: &model,
            clients: &clients,
            train: &clients,
            pick: TestPick::Own,
            local_models: 0,
        };
        // Accuracies 1, 1/2 and 0 (client 2 holds the wrong model): the mean
        // over clients is 1/2, where the sample-weighted mean would be 5/8.
        let assignment = [Some(0), Some(1), Some(0)];
        let view = ReplicaView {
            models: vec![&zero, &one],
            assignment: &assignment,
            train_loss: None,
            diverged: false,
        };
        let (loss, accuracy) = evaluate_own(&view, &test);
        assert_eq!(accuracy, Some(0.5));
        let per_client = |p: &[f32], b| model.loss(p, b, &mut Workspace::default());
        let expected = (per_client(&zero, clients[0])
            + per_client(&one, clients[1])
            + per_client(&zero, clients[2]))
            / 3.0;
        assert!((loss.unwrap() - expected).abs() < 1e-12);
        // Unassigned: accuracy 0, infinite loss.
        let assignment = [Some(0), None, Some(1)];
        let view = ReplicaView {
            assignment: &assignment,
            ..view
        };
        let (loss, accuracy) = evaluate_own(&view, &test);
        assert!((accuracy.unwrap() - 2.0 / 3.0).abs() < 1e-12);
        assert_eq!(loss, Some(f64::INFINITY));
    }
}
