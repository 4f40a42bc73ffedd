//! What the ways of scoring test clients share: a worker's scratch and the
//! unweighted mean of per-client scores.

use fedcluster_core::{ShardBuf, Workspace};

/// A worker's scratch while scoring test clients: the model's workspace and
/// the buffer a produced client is written into.
#[derive(Default)]
pub(super) struct Scratch(pub(super) Workspace, pub(super) ShardBuf);

/// The unweighted means of per-client (loss, accuracy) scores; the accuracy
/// only when every client has one; `(None, None)` for no client.
pub(super) fn mean_over_clients(per_client: &[(f64, Option<f64>)]) -> (Option<f64>, Option<f64>) {
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
