//! [`TestPick::Own`]: each training client's model scored on its own test
//! split, the per-client scores averaged with equal weight per client.

use rayon::prelude::*;

use fedcluster_core::ReplicaView;

use super::{Scratch, TestSet, mean_over_clients};

/// Each training client's model on its own test split (test client `i` is
/// training client `i`'s): the unweighted means over clients of the
/// per-client test loss and accuracy. Clients without test data are left out.
pub(super) fn evaluate(view: &ReplicaView<'_>, test: &TestSet<'_>) -> (Option<f64>, Option<f64>) {
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

#[cfg(test)]
mod tests {
    use super::*;
    use fedcluster_core::{Batch, Model, Targets, Workspace};
    use fedcluster_models::LogisticRegression;

    use crate::record::TestPick;

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
        let (loss, accuracy) = evaluate(&view, &test);
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
        let (loss, accuracy) = evaluate(&view, &test);
        assert!((accuracy.unwrap() - 2.0 / 3.0).abs() < 1e-12);
        assert_eq!(loss, Some(f64::INFINITY));
    }
}
