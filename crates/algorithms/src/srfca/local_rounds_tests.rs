//! ONE_SHOT's local training spread over rounds (`local_rounds`): with
//! full-batch gradient descent (no random draws) the parts take exactly the
//! steps of one round, so the clustering and every later model are the same
//! bits, `local_rounds - 1` rounds later; the steps split as evenly as they
//! go; and the settings that cannot hold are refused by name.

use fedcluster_core::ServerHalf;

use super::tests::{config, data, drive};
use super::*;
use crate::common::checked::Validate;
use crate::common::init::InitScheme;

/// The cluster models and the clients' clusters after `rounds` rounds.
fn outcome(c: &Config, rounds: usize) -> (Vec<Vec<f32>>, Vec<Option<usize>>) {
    let server = drive(c, &data(2), rounds, 2);
    let snap = server.snapshot();
    let replica = &snap.replicas[0];
    let models = replica.models.iter().map(|m| m.to_vec()).collect();
    (models, replica.assignment.to_vec())
}

#[test]
fn a_split_one_shot_gives_the_same_bits_parts_minus_one_rounds_later() {
    for distance in [Distance::L2, Distance::CrossLoss] {
        let whole = config(distance, Threshold::Quantile { value: 0.2 });
        let mut split = whole.clone();
        split.local_rounds = 4;
        assert_eq!(split.clustering_rounds(), whole.clustering_rounds() + 3);
        let rounds = whole.clustering_rounds() + 5;
        let (models, assignment) = outcome(&whole, rounds);
        assert!(models.len() >= 2, "{distance:?}: {} clusters", models.len());
        assert_eq!(
            outcome(&split, rounds + 3),
            (models, assignment),
            "{distance:?}"
        );
    }
}

#[test]
fn until_the_last_part_every_local_model_is_w0_to_the_server() {
    let mut c = config(Distance::L2, Threshold::Quantile { value: 0.2 });
    c.local_rounds = 3;
    c.init = InitScheme::Gaussian { std: 1.0 };
    let server = drive(&c, &data(2), 2, 2);
    let snap = server.snapshot();
    let replica = &snap.replicas[0];
    assert_eq!(replica.models.len(), 30);
    let w0 = replica.models[0].to_vec();
    assert!(w0.iter().any(|v| *v != 0.0));
    assert!(replica.models.iter().all(|m| *m == w0.as_slice()));
    // The last part returns the trained models: ONE_SHOT clusters them.
    assert_eq!(server.clusters(), 0);
    assert!(drive(&c, &data(2), 3, 2).clusters() >= 2);
}

#[test]
fn the_steps_split_as_evenly_as_they_go() {
    let mut c = config(Distance::L2, Threshold::Quantile { value: 0.2 });
    (c.local_steps, c.local_rounds) = (2400, 6);
    assert!((0..6).all(|part| c.local_part_steps(part) == 400));
    (c.local_steps, c.local_rounds) = (10, 4);
    let parts: Vec<usize> = (0..4).map(|part| c.local_part_steps(part)).collect();
    assert_eq!(parts, [2, 3, 2, 3]);
    assert_eq!(parts.iter().sum::<usize>(), 10);
}

#[test]
fn more_parts_than_steps_or_a_split_with_resampling_is_refused() {
    let mut c = config(Distance::L2, Threshold::Quantile { value: 0.2 });
    c.local_rounds = c.local_steps + 1;
    assert_eq!(c.validate().unwrap_err().field, "local_rounds");
    c.local_rounds = 0;
    assert_eq!(c.validate().unwrap_err().field, "local_rounds");
    c.local_rounds = 2;
    c.resample = true;
    assert_eq!(c.validate().unwrap_err().field, "local_rounds");
}
