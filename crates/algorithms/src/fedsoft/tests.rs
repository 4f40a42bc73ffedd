//! FedSoft on a seeded two-cluster linear mixture.

use fedcluster_core::{Batch, ServerHalf};
use fedcluster_data::synthetic::{IfcaSyntheticSpec, TruthScale, ifca_synthetic};
use fedcluster_metrics::clustering::{misclustering, param_error};
use fedcluster_models::LinearRegression;
use fedcluster_sim::{InProcess, run};

use super::*;
use crate::common::checked::Checked;
use crate::common::init::InitScheme;
use crate::common::trainer::Optimizer;

fn config() -> Config {
    Config {
        clusters: 2,
        lr: 0.05,
        mu: 0.1,
        local_steps: 5,
        estimate_every: 5,
        smoothing: 1e-4,
        participation: 1.0,
        init: InitScheme::Gaussian { std: 1.0 },
        optimizer: Default::default(),
        sampling: Sampling::Uniform,
    }
}

#[test]
fn fedsoft_separates_two_clusters_from_a_random_start() {
    separates_two_clusters(config());
}

#[test]
fn fedsoft_with_minibatch_adam_separates_two_clusters() {
    separates_two_clusters(Config {
        optimizer: Optimizer::Adam {
            batch_size: 20,
            keep_state: true,
            lr_decay: 1.0,
            schedule: None,
        },
        ..config()
    });
}

fn separates_two_clusters(c: Config) {
    let spec = IfcaSyntheticSpec {
        clients: 20,
        points_per_client: 100,
        test_points_per_client: 10,
        dim: 10,
        clusters: 2,
        noise_std: 0.1,
        separation: 3.0,
        truth_scale: TruthScale::Norm,
    };
    let data = ifca_synthetic(&spec, 2).unwrap();
    let model = LinearRegression::new(data.dim).unwrap();
    let batches: Vec<Batch<'_>> = data.train.iter().map(|c| c.batch(data.dim)).collect();
    let sizes: Vec<usize> = batches.iter().map(|b| b.len()).collect();
    let mut server = FedSoftServer::new(Checked::new(c.clone()).unwrap(), &model, batches.len(), 2)
        .with_sizes(Some(&sizes))
        .unwrap();
    let client = FedSoftClient::new(&c);
    let mut transport =
        InProcess::new(vec![client; batches.len()], &batches, &model, 2, 0).unwrap();
    run(&mut server, &mut transport, 200, 2, |_| Ok(())).unwrap();
    let snap = server.snapshot();
    let view = &snap.replicas[0];
    let mis = misclustering(view.assignment, 2, &data.truth.train_labels, 2).unwrap();
    assert_eq!(mis, 0.0);
    // Soft membership mixes in the few points of each client that the other
    // centre fits better, so the centres keep a small bias.
    let err = param_error(&view.models, data.truth.params.as_ref().unwrap()).unwrap();
    assert!(err < 0.3, "parameter error {err}");
}

#[test]
fn smoothing_must_leave_room_for_every_cluster() {
    let mut c = config();
    c.smoothing = 0.5;
    assert_eq!(Checked::new(c).unwrap_err().field, "smoothing");
}

#[test]
fn fedsoft_sampling_per_centre_separates_two_clusters() {
    for sampling in [Sampling::Importance, Sampling::ImportanceSize] {
        separates_two_clusters(Config {
            participation: 0.5,
            sampling,
            ..config()
        });
    }
}

#[test]
fn sampling_by_size_needs_the_sizes_and_uniform_is_not_written() {
    let model = LinearRegression::new(2).unwrap();
    let by_size = Config {
        sampling: Sampling::ImportanceSize,
        ..config()
    };
    let server = FedSoftServer::new(Checked::new(by_size).unwrap(), &model, 4, 1);
    assert_eq!(server.with_sizes(None).unwrap_err().field, "sampling");
    assert!(!toml::to_string(&config()).unwrap().contains("sampling"));
    let text = "clusters = 2\nlr = 0.1\nsampling = \"importance\"\n";
    let parsed: Config = toml::from_str(text).unwrap();
    assert_eq!(parsed.sampling, Sampling::Importance);
}
