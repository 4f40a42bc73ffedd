//! FL+HC on a seeded three-cluster linear mixture: one global model, the
//! clustering round, then FedAvg per cluster; and the same bits on one or two
//! threads.

use fedcluster_core::{Batch, ServerHalf};
use fedcluster_data::synthetic::{IfcaSyntheticSpec, TruthScale, ifca_synthetic};
use fedcluster_metrics::clustering::{adjusted_rand_index, param_error};
use fedcluster_models::LinearRegression;
use fedcluster_sim::{InProcess, run};

use super::{Config, Flhc};
use crate::common::agglomerative::{Cut, Linkage, Metric};
use crate::common::checked::Checked;
use crate::common::init::InitScheme;
use crate::table::{Algorithm, Setup};

fn config(cut: Cut, metric: Metric, linkage: Linkage, participation: f64) -> Config {
    Config {
        lr: 0.1,
        local_steps: 5,
        participation,
        cluster_round: 3,
        cut,
        metric,
        linkage,
        init: InitScheme::Zeros,
        optimizer: Default::default(),
    }
}

fn mixture(seed: u64) -> fedcluster_data::FederatedData {
    let spec = IfcaSyntheticSpec {
        clients: 24,
        points_per_client: 60,
        test_points_per_client: 10,
        dim: 8,
        clusters: 3,
        noise_std: 0.1,
        separation: 2.0,
        truth_scale: TruthScale::Norm,
    };
    ifca_synthetic(&spec, seed).unwrap()
}

struct Finished {
    /// Clusters found after the clustering round, and the number of models
    /// the snapshot showed just before it.
    found: Option<usize>,
    before: usize,
    models: Vec<Vec<f32>>,
    labels: Vec<usize>,
}

fn flhc_run(
    data: &fedcluster_data::FederatedData,
    config: Config,
    rounds: usize,
    threads: usize,
) -> Finished {
    let model = LinearRegression::new(data.dim).unwrap();
    let batches: Vec<Batch<'_>> = data.train.iter().map(|c| c.batch(data.dim)).collect();
    let setup = Setup::new(&model, batches.len(), 2);
    let config = Checked::new(config).unwrap();
    let client = Flhc::client(&config);
    let cluster_round = config.cluster_round;
    let mut server = Flhc::server(config, &setup).unwrap();
    let mut transport =
        InProcess::new(vec![client; batches.len()], &batches, &model, 2, threads).unwrap();
    run(&mut server, &mut transport, cluster_round, 2, |_| Ok(())).unwrap();
    let before = server.snapshot().replicas[0].models.len();
    assert_eq!(
        server.clusters(),
        None,
        "no clusters before round {cluster_round}"
    );
    let rest = |_, _: &_, _: &_| Ok(());
    fedcluster_sim::run_from(
        &mut server,
        &mut transport,
        cluster_round,
        rounds,
        2,
        |_| Ok(()),
        rest,
    )
    .unwrap();
    let snap = server.snapshot();
    Finished {
        found: server.clusters(),
        before,
        models: snap.replicas[0].models.iter().map(|m| m.to_vec()).collect(),
        labels: snap.replicas[0]
            .assignment
            .iter()
            .map(|a| a.unwrap())
            .collect(),
    }
}

#[test]
fn ward_on_the_updates_recovers_the_clusters_and_their_models() {
    let data = mixture(4);
    let cut = Cut::Clusters { value: 3 };
    let run = flhc_run(
        &data,
        config(cut, Metric::Euclidean, Linkage::Ward, 1.0),
        40,
        0,
    );
    assert_eq!((run.before, run.found), (1, Some(3)));
    assert_eq!(
        adjusted_rand_index(&run.labels, &data.truth.train_labels),
        1.0
    );
    let refs: Vec<&[f32]> = run.models.iter().map(|m| m.as_slice()).collect();
    let err = param_error(&refs, data.truth.params.as_ref().unwrap()).unwrap();
    assert!(err < 0.05, "parameter error {err}");
}

#[test]
fn a_cosine_distance_threshold_finds_the_number_of_clusters() {
    // Updates of one cluster point the same way; two clusters' updates from
    // the global model, which lies between them, point far apart.
    let data = mixture(8);
    let cut = Cut::Distance { value: 0.5 };
    let run = flhc_run(
        &data,
        config(cut, Metric::Cosine, Linkage::Average, 1.0),
        5,
        0,
    );
    assert_eq!(run.found, Some(3));
    assert_eq!(
        adjusted_rand_index(&run.labels, &data.truth.train_labels),
        1.0
    );
}

#[test]
fn ward_needs_the_euclidean_metric_and_the_cut_its_value() {
    let cut = Cut::Clusters { value: 2 };
    let err = Checked::new(config(cut, Metric::Cosine, Linkage::Ward, 1.0)).unwrap_err();
    assert_eq!(err.field, "linkage");
    let bad = Cut::Distance { value: -1.0 };
    let err = Checked::new(config(bad, Metric::Euclidean, Linkage::Ward, 1.0)).unwrap_err();
    assert_eq!(err.field, "cut.value");
    let model = LinearRegression::new(2).unwrap();
    let many = Cut::Clusters { value: 5 };
    let ok = Checked::new(config(many, Metric::Euclidean, Linkage::Ward, 1.0)).unwrap();
    let err = Flhc::server(ok, &Setup::new(&model, 4, 1)).unwrap_err();
    assert_eq!(err.field, "cut.value");
}

#[test]
fn one_and_two_threads_give_the_same_bits() {
    let data = mixture(6);
    let cut = Cut::Distance { value: 1.0 };
    let bits = |threads| {
        let c = config(cut, Metric::Euclidean, Linkage::Ward, 0.6);
        let run = flhc_run(&data, c, 10, threads);
        let bits: Vec<u32> = run.models.concat().iter().map(|v| v.to_bits()).collect();
        (bits, run.labels)
    };
    assert_eq!(bits(1), bits(2));
}
