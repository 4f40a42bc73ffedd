//! [`TestPick::Personal`](super::TestPick::Personal): every training client,
//! sampled or not, scored on its own test split with the model the algorithm
//! would give it. A client with an assignment uses its assigned model; a
//! client the algorithm never assigned (never sampled under partial
//! participation, or left out of every cluster) is placed by the algorithm's
//! newcomer rule on its training data, as a new client would be. The
//! per-client scores are averaged with equal weight per client, over every
//! training client that has test data.

use rayon::prelude::*;

use fedcluster_core::{NewcomerRule, ReplicaView, ShardBuf, Workspace};

use super::{TestSet, mean_over_clients};

/// A worker's scratch: the model's workspace and the buffers a produced
/// client's training and test data are written into.
#[derive(Default)]
struct Scratch {
    ws: Workspace,
    train: ShardBuf,
    test: ShardBuf,
}

/// Unweighted means over training clients of the test loss and accuracy of
/// the model each would use (see the module doc). A client the rule places
/// nowhere scores accuracy 0 and an infinite loss.
pub(super) fn evaluate(
    view: &ReplicaView<'_>,
    test: &TestSet<'_>,
    newcomer: &dyn NewcomerRule,
) -> (Option<f64>, Option<f64>) {
    let m = (view.assignment.len())
        .min(test.clients.num_clients())
        .min(test.train.num_clients());
    let per_client: Vec<(f64, Option<f64>)> = (0..m)
        .into_par_iter()
        .filter(|&i| test.clients.samples(i) > 0)
        .map_init(Scratch::default, |s, i| {
            let assigned = view.assignment[i].filter(|&a| a < view.models.len());
            let chosen = assigned.or_else(|| {
                let data = test.train.batch(i, &mut s.train);
                let placed = newcomer.place(&view.models, data, test.model, &mut s.ws)?;
                (placed.model < view.models.len()).then_some(placed.model)
            });
            let Some(chosen) = chosen else {
                return (f64::INFINITY, Some(0.0));
            };
            let batch = test.clients.batch(i, &mut s.test);
            let (loss, correct) =
                (test.model).loss_and_correct(view.models[chosen], batch, &mut s.ws);
            (loss, correct.map(|c| c as f64 / batch.len() as f64))
        })
        .collect();
    mean_over_clients(&per_client)
}

#[cfg(test)]
mod tests {
    use super::*;
    use fedcluster_core::{Batch, LowestLoss, Targets};
    use fedcluster_models::LogisticRegression;

    use crate::record::TestPick;
    use crate::record::columns_tests::Last;

    #[test]
    fn a_never_assigned_client_is_scored_with_the_model_its_rule_gives_it() {
        // Model 0 always predicts class 0, model 1 class 1. Clients 0 and 1
        // hold class 0, client 2 class 1, in training and test alike.
        let model = LogisticRegression::new(1, 2).unwrap();
        let (zero, one) = ([0.0, 0.0, 5.0, -5.0], [0.0, 0.0, -5.0, 5.0]);
        let x = [1.0f32; 4];
        let (y0, y1) = ([0u32; 4], [1u32; 4]);
        let clients = vec![
            Batch::new(&x, Targets::Class(&y0), 1).unwrap(),
            Batch::new(&x[..2], Targets::Class(&y0[..2]), 1).unwrap(),
            Batch::new(&x[..3], Targets::Class(&y1[..3]), 1).unwrap(),
        ];
        let test = TestSet {
            model: &model,
            clients: &clients,
            train: &clients,
            pick: TestPick::Personal,
            local_models: 0,
        };
        // Client 0 is assigned to the right model; clients 1 and 2 were never
        // sampled. Lowest loss places both right: every client scores 1.
        let assignment = [Some(0), None, None];
        let view = ReplicaView {
            models: vec![&zero, &one],
            assignment: &assignment,
            train_loss: None,
            diverged: false,
        };
        let (loss, accuracy) = evaluate(&view, &test, &LowestLoss);
        assert_eq!(accuracy, Some(1.0));
        assert!(loss.unwrap() < 1e-3, "{loss:?}");
        // The rule decides, not lowest loss: `Last` gives client 1 the wrong
        // model (accuracy 0) and client 2 the right one; client 0 keeps its
        // assignment. Mean over the three clients: 2/3.
        let (_, accuracy) = evaluate(&view, &test, &Last);
        assert!(
            (accuracy.unwrap() - 2.0 / 3.0).abs() < 1e-12,
            "{accuracy:?}"
        );
        // An assigned client keeps its model whatever the rule: client 0
        // assigned to the wrong model scores 0.
        let wrong = [Some(1), None, None];
        let view = ReplicaView {
            assignment: &wrong,
            ..view
        };
        let (_, accuracy) = evaluate(&view, &test, &LowestLoss);
        assert!(
            (accuracy.unwrap() - 2.0 / 3.0).abs() < 1e-12,
            "{accuracy:?}"
        );
    }
}
