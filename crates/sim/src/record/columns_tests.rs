//! `records` end to end: the `ari` and `nmi` columns, and new (test) clients
//! placed by the algorithm's newcomer rule.

use fedcluster_core::{
    Batch, LowestLoss, Model, NewcomerRule, Placed, ReplicaView, Snapshot, Targets, Workspace,
};
use fedcluster_models::LogisticRegression;

use super::{RoundRecord, TestPick, TestSet, Truth, records};
use crate::engine::RoundEvent;

/// Always the last model, to tell the rule's pick from lowest loss (also
/// used by `personal`'s tests).
#[derive(Debug)]
pub(super) struct Last;

impl NewcomerRule for Last {
    fn name(&self) -> &'static str {
        "last"
    }

    fn place(
        &self,
        models: &[&[f32]],
        _: Batch<'_>,
        _: &dyn Model,
        _: &mut Workspace,
    ) -> Option<Placed> {
        let model = models.len().checked_sub(1)?;
        Some(Placed { model, loss: None })
    }
}

/// The record of one replica with `models` and `assignment`.
fn record(
    models: Vec<&[f32]>,
    assignment: &[Option<usize>],
    truth: &Truth<'_>,
    test: Option<&TestSet<'_>>,
    newcomer: &dyn NewcomerRule,
) -> RoundRecord {
    let event = RoundEvent {
        round: 0,
        participants: 0,
        replied: &[],
        bytes_down: 0,
        bytes_up: 0,
        seconds: 0.0,
        snapshot: Snapshot {
            replicas: vec![ReplicaView {
                models,
                assignment,
                train_loss: None,
                diverged: false,
            }],
            selected: 0,
        },
        newcomer,
    };
    records(&event, truth, test).remove(0)
}

#[test]
fn ari_and_nmi_score_clusterings_only_where_the_truth_is_known() {
    let (a, b) = ([0.0f32; 2], [1.0f32; 2]);
    let labels = [0, 0, 1, 1];
    let truth = Truth {
        clusters: 2,
        labels: &labels,
        test_labels: &[],
        params: None,
    };
    // The true partition under swapped labels.
    let swapped = [Some(1), Some(1), Some(0), Some(0)];
    let r = record(vec![&a, &b], &swapped, &truth, None, &LowestLoss);
    assert_eq!(r.ari, Some(1.0));
    assert!((r.nmi.unwrap() - 1.0).abs() < 1e-12, "{:?}", r.nmi);
    // Clients 2 and 3 unassigned, each alone: ARI 4/7, NMI 0.8 (by hand).
    let partial = [Some(0), Some(0), None, None];
    let r = record(vec![&a, &b], &partial, &truth, None, &LowestLoss);
    assert!((r.ari.unwrap() - 4.0 / 7.0).abs() < 1e-12, "{:?}", r.ari);
    assert!((r.nmi.unwrap() - 0.8).abs() < 1e-12, "{:?}", r.nmi);
    // One model for all (global) clusters nothing.
    let global = [Some(0); 4];
    let r = record(vec![&a], &global, &truth, None, &LowestLoss);
    assert_eq!((r.ari, r.nmi), (None, None));
    // Without true clusters, nothing to compare with.
    let unknown = Truth {
        clusters: 0,
        ..truth
    };
    let r = record(vec![&a, &b], &swapped, &unknown, None, &LowestLoss);
    assert_eq!((r.ari, r.nmi), (None, None));
}

#[test]
fn new_clients_are_placed_by_the_algorithms_rule() {
    // Model 0 predicts class 0, model 1 class 1; test client c holds class c.
    let model = LogisticRegression::new(1, 2).unwrap();
    let (zero, one) = ([0.0, 0.0, 5.0, -5.0], [0.0, 0.0, -5.0, 5.0]);
    let x = [1.0f32; 2];
    let (y0, y1) = ([0u32; 2], [1u32; 2]);
    let clients = vec![
        Batch::new(&x, Targets::Class(&y0), 1).unwrap(),
        Batch::new(&x, Targets::Class(&y1), 1).unwrap(),
    ];
    let test = TestSet {
        model: &model,
        clients: &clients,
        train: &clients,
        pick: TestPick::LowestLoss,
        local_models: 0,
    };
    // Three training clients (two models for two clients would read as
    // local training).
    let labels = [0, 1, 1];
    let truth = Truth {
        clusters: 2,
        labels: &labels,
        test_labels: &[0, 1],
        params: None,
    };
    let assignment = [Some(0), Some(1), Some(1)];
    // Lowest loss places each test client on its cluster's model.
    let r = record(
        vec![&zero, &one],
        &assignment,
        &truth,
        Some(&test),
        &LowestLoss,
    );
    assert_eq!(r.test_accuracy, Some(1.0));
    assert_eq!(r.test_misclustering, Some(0.0));
    // A rule of the algorithm's own decides instead: both on model 1.
    let r = record(vec![&zero, &one], &assignment, &truth, Some(&test), &Last);
    assert_eq!(r.test_accuracy, Some(0.5));
    assert_eq!(r.test_misclustering, Some(0.5));
}
