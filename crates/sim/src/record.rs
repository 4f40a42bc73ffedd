//! Turning round events into metric records: training loss, parameter error and
//! misclustering against the ground truth, test loss and accuracy on held-out
//! clients, bytes and seconds. Ground truth enters here, never in an algorithm.
//!
//! [`records`] assembles the rows; the training clients' columns are in
//! `training`, and each [`TestPick`] is scored in a module of its own
//! (`picked`, `assigned`, `own`, `personal`).

use fedcluster_core::ReplicaView;
use fedcluster_metrics::clustering::{majority_misclustering, misclustering};

use crate::engine::RoundEvent;

mod assigned;
#[cfg(test)]
mod columns_tests;
mod inputs;
mod own;
mod personal;
mod picked;
mod round_record;
mod scoring;
mod training;

pub use inputs::{TestPick, TestSet, Truth};
pub use round_record::RoundRecord;
use scoring::{Scratch, mean_over_clients};
use training::{cluster_error, parameter_error, participants_cluster_error, partition_agreement};

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
                    let (loss, accuracy) = own::evaluate(view, t);
                    (loss, accuracy, None)
                }
                Some(t)
                    if !view.diverged
                        && !view.models.is_empty()
                        && (is_local(view) || t.pick == TestPick::Assigned) =>
                {
                    let (loss, accuracy) = assigned::evaluate(view, t, truth);
                    (loss, accuracy, None)
                }
                Some(t) if !view.diverged && !view.models.is_empty() => {
                    let e = picked::evaluate(view, t, event.newcomer);
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

/// Clusterings only: one model for all or one per client assigns nothing.
fn is_clustering(view: &ReplicaView<'_>) -> bool {
    view.models.len() > 1 && !is_local(view)
}
