//! [`TestPick::Assigned`] (and local training under any pick): each training
//! client's assigned model scored on every test client of its true cluster,
//! the per-client scores averaged over the training clients.

use rayon::prelude::*;

use fedcluster_core::{ReplicaView, ShardBuf, Workspace};

use super::{Scratch, TestSet, Truth, is_local, mean_over_clients};

/// Each training client's assigned model on every test client of its true
/// cluster: the mean over training clients (all, or under local training
/// `test.local_models` of them evenly spaced) of the sample-weighted test loss
/// and accuracy. Each distinct (model, cluster) pair is evaluated once.
pub(super) fn evaluate(
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

    use crate::record::TestPick;

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
        let (loss, accuracy) = evaluate(&view, &test, &truth);
        assert_eq!(accuracy, Some(0.5));
        assert_eq!(loss, Some(f64::INFINITY));
        // Assigned to their own cluster's model, all score 1.
        let right = [Some(0), Some(1), Some(1), Some(0)];
        let view = ReplicaView {
            assignment: &right,
            ..view
        };
        let (loss, accuracy) = evaluate(&view, &test, &truth);
        assert_eq!(accuracy, Some(1.0));
        assert!(loss.unwrap() < 1e-3);
    }
}
