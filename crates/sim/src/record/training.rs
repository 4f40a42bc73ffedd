//! The training clients' columns against the ground truth: parameter error,
//! misclustering (of all clients and of this round's participants), and ARI
//! and NMI of the assignment.

use fedcluster_core::{ClientId, ReplicaView};
use fedcluster_metrics::clustering::{misclustering, param_error, per_client_param_error};
use fedcluster_metrics::partition::agreement;

use super::{Truth, is_clustering, is_local};

pub(super) fn parameter_error(view: &ReplicaView<'_>, truth: &Truth<'_>) -> Option<f64> {
    let params = truth.params?;
    if view.models.len() == truth.clusters && !is_local(view) {
        param_error(&view.models, params)
    } else if !view.models.is_empty() {
        per_client_param_error(&view.models, view.assignment, truth.labels, params)
    } else {
        None
    }
}

pub(super) fn cluster_error(view: &ReplicaView<'_>, truth: &Truth<'_>) -> Option<f64> {
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
pub(super) fn partition_agreement(
    view: &ReplicaView<'_>,
    truth: &Truth<'_>,
) -> Option<fedcluster_metrics::Agreement> {
    if !is_clustering(view) || truth.clusters == 0 {
        return None;
    }
    agreement(view.assignment, truth.labels)
}

/// [`cluster_error`] over the clients in `replied` only.
pub(super) fn participants_cluster_error(
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
