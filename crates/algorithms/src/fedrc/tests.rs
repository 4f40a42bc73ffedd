//! FedRC on seeded concept-shift mixtures: clients whose labelling differs end
//! on different components, and the server's label priors follow them.

use fedcluster_core::Batch;
use fedcluster_data::synthetic::{IfcaSyntheticSpec, TruthScale, ifca_synthetic};
use fedcluster_metrics::clustering::misclustering;
use fedcluster_models::{LinearRegression, LogisticRegression};

use crate::common::trainer::Optimizer;
use crate::fedem::tests::{concepts, config, groups, label_groups, run_mixture};
use crate::fedem::{Config, Objective};

#[test]
fn fedrc_weights_concentrate_on_the_concepts() {
    let data = concepts(true, 3);
    let model = LogisticRegression::new(data.dim, 4).unwrap();
    let batches: Vec<Batch<'_>> = data.train.iter().map(|c| c.batch(data.dim)).collect();
    let end = run_mixture(&config(), Objective::Robust, &model, &batches, 40, 2);
    let mis = misclustering(&end.assignment, 2, &groups(), 2).unwrap();
    assert_eq!(mis, 0.0, "{:?}", end.assignment);
    for (i, pi) in end.weights.iter().enumerate() {
        let top = pi.iter().copied().fold(0.0, f64::max);
        assert!(top > 0.95, "client {i}: ω = {pi:?}");
    }
}

#[test]
fn fedrc_is_bit_identical_on_one_and_two_threads() {
    let data = concepts(true, 9);
    let model = LogisticRegression::new(data.dim, 4).unwrap();
    let batches: Vec<Batch<'_>> = data.train.iter().map(|c| c.batch(data.dim)).collect();
    let c = Config {
        optimizer: Optimizer::Adam {
            batch_size: 16,
            keep_state: true,
            lr_decay: 1.0,
            schedule: None,
        },
        lr: 0.05,
        participation: 0.5,
        ..config()
    };
    let one = run_mixture(&c, Objective::Robust, &model, &batches, 5, 1);
    let two = run_mixture(&c, Objective::Robust, &model, &batches, 5, 2);
    assert_eq!(one.models, two.models);
    assert_eq!(one.weights, two.weights);
    assert_eq!(one.train_loss, two.train_loss);
}

#[test]
#[should_panic(expected = "fedrc needs class labels")]
fn fedrc_refuses_real_targets() {
    let spec = IfcaSyntheticSpec {
        clients: 2,
        points_per_client: 5,
        test_points_per_client: 1,
        dim: 2,
        clusters: 1,
        noise_std: 0.1,
        separation: 1.0,
        truth_scale: TruthScale::Norm,
    };
    let data = ifca_synthetic(&spec, 1).unwrap();
    let model = LinearRegression::new(data.dim).unwrap();
    let batches: Vec<Batch<'_>> = data.train.iter().map(|c| c.batch(data.dim)).collect();
    run_mixture(&config(), Objective::Robust, &model, &batches, 1, 1);
}

#[test]
fn fedrc_keeps_label_shifted_clients_together_where_fedem_splits_them() {
    let data = label_groups(11);
    let model = LogisticRegression::new(data.dim, 4).unwrap();
    let batches: Vec<Batch<'_>> = data.train.iter().map(|c| c.batch(data.dim)).collect();
    let fedem = run_mixture(&config(), Objective::Likelihood, &model, &batches, 40, 2);
    let fedrc = run_mixture(&config(), Objective::Robust, &model, &batches, 40, 2);
    let split = |a: &[Option<usize>]| misclustering(a, 2, &groups(), 2).unwrap();
    assert_eq!(
        split(&fedem.assignment),
        0.0,
        "FedEM follows the label groups"
    );
    let first = fedrc.assignment[0];
    assert!(
        fedrc.assignment.iter().all(|a| *a == first),
        "{:?}",
        fedrc.assignment
    );
}
