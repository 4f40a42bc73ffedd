//! SR-FCA on seeded linear-regression mixtures: it finds the number of clusters
//! and the clustering by itself.

use fedcluster_core::{
    Batch, ClientEnv, ClientHalf, Model, Purpose, RoundCtx, ServerHalf, Workspace, stream,
};
use fedcluster_data::FederatedData;
use fedcluster_data::synthetic::{IfcaSyntheticSpec, TruthScale, ifca_synthetic};
use fedcluster_metrics::clustering::{adjusted_rand_index, param_error};
use fedcluster_models::LinearRegression;
use fedcluster_sim::{InProcess, run};

use super::*;
use crate::common::checked::Checked;
use crate::common::init::InitScheme;
use crate::common::trainer::Optimizer;

/// k = 3 clusters of θ* with norm 3 in d = 10, 30 clients of 40 points.
pub(super) fn data(seed: u64) -> FederatedData {
    let spec = IfcaSyntheticSpec {
        clients: 30,
        points_per_client: 40,
        test_points_per_client: 10,
        dim: 10,
        clusters: 3,
        noise_std: 0.3,
        separation: 3.0,
        truth_scale: TruthScale::Norm,
    };
    ifca_synthetic(&spec, seed).unwrap()
}

pub(super) fn config(distance: Distance, threshold: Threshold) -> Config {
    Config {
        threshold,
        min_size: 2,
        distance,
        loss_scale: LossScale::Mean,
        local_steps: 200,
        local_lr: 0.05,
        local_rounds: 1,
        local_optimizer: Optimizer::default(),
        refine_steps: 2,
        refine_rounds: 100,
        trim: 0.1,
        lr: 0.1,
        optimizer: Optimizer::default(),
        refine_local_steps: 1,
        refine_schedule: None,
        init: InitScheme::Zeros,
        then: AfterOneShot::Refine,
        clustering: Clustering::Components,
        resample: false,
        clients_per_round: None,
    }
}

pub(super) fn drive(c: &Config, data: &FederatedData, rounds: usize, seed: u64) -> SrFcaServer {
    let model = LinearRegression::new(data.dim).unwrap();
    let batches: Vec<Batch<'_>> = data.train.iter().map(|c| c.batch(data.dim)).collect();
    let mut server = SrFcaServer::new(
        Checked::new(c.clone()).unwrap(),
        &model,
        batches.len(),
        seed,
    )
    .unwrap();
    let clients = vec![SrFcaClient::new(c); batches.len()];
    let mut transport = InProcess::new(clients, &batches, &model, seed, 0).unwrap();
    run(&mut server, &mut transport, rounds, seed, |_| Ok(())).unwrap();
    server
}

pub(super) fn check_recovery(c: &Config, seed: u64) {
    let data = data(seed);
    let server = drive(c, &data, c.clustering_rounds() + 50, seed);
    assert_eq!(server.clusters(), 3, "{:?}: clusters found", c.distance);
    let snap = server.snapshot();
    let view = &snap.replicas[0];
    let found: Vec<usize> = view
        .assignment
        .iter()
        .map(|a| a.expect("every client assigned"))
        .collect();
    let ari = adjusted_rand_index(&found, &data.truth.train_labels);
    assert_eq!(ari, 1.0, "{:?}: the clustering is exact", c.distance);
    let err = param_error(&view.models, data.truth.params.as_ref().unwrap()).unwrap();
    assert!(err < 0.1, "{:?}: parameter error {err}", c.distance);
}

#[test]
fn l2_srfca_finds_the_clusters_without_k() {
    check_recovery(&config(Distance::L2, Threshold::Quantile { value: 0.2 }), 1);
}

#[test]
fn cross_loss_srfca_finds_the_clusters_without_k() {
    check_recovery(
        &config(Distance::CrossLoss, Threshold::Quantile { value: 0.2 }),
        2,
    );
}

#[test]
fn merge_joins_the_pieces_of_a_split_cluster() {
    // A low quantile links only the closest local models: ONE_SHOT splits the
    // true clusters into pieces, and REFINE's MERGE, on cluster models far
    // better than the local ones, joins the pieces of each true cluster.
    let data = data(5);
    let mut c = config(Distance::L2, Threshold::Quantile { value: 0.03 });
    c.local_steps = 20;
    let after_one_shot = drive(&c, &data, 1, 5);
    assert_eq!(after_one_shot.clusters(), 7, "ONE_SHOT's pieces");
    let refined = drive(&c, &data, c.clustering_rounds(), 5);
    assert_eq!(refined.clusters(), 3);
    let snap = refined.snapshot();
    let found: Vec<usize> = snap.replicas[0]
        .assignment
        .iter()
        .map(|a| a.unwrap())
        .collect();
    assert_eq!(adjusted_rand_index(&found, &data.truth.train_labels), 1.0);
}

#[test]
fn no_group_within_lambda_is_a_clear_error() {
    let data = data(4);
    let c = config(Distance::L2, Threshold::Absolute { value: 1e-9 });
    let model = LinearRegression::new(data.dim).unwrap();
    let batches: Vec<Batch<'_>> = data.train.iter().map(|c| c.batch(data.dim)).collect();
    let mut server =
        SrFcaServer::new(Checked::new(c.clone()).unwrap(), &model, batches.len(), 4).unwrap();
    let mut transport = InProcess::new(
        vec![SrFcaClient::new(&c); batches.len()],
        &batches,
        &model,
        4,
        0,
    )
    .unwrap();
    let err = run(&mut server, &mut transport, 2, 4, |_| Ok(()))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("threshold") && err.contains("min_size"),
        "{err}"
    );
}

#[test]
fn invalid_configs_name_their_field() {
    let mut c = config(Distance::L2, Threshold::Quantile { value: 1.5 });
    assert_eq!(
        Checked::new(c.clone()).unwrap_err().field,
        "threshold.value"
    );
    c.threshold = Threshold::Absolute { value: 1.0 };
    c.trim = 0.5;
    assert_eq!(Checked::new(c).unwrap_err().field, "trim");
}

#[test]
fn one_shot_ifca_starts_ifca_from_the_one_shot_clusters() {
    let mut c = config(Distance::L2, Threshold::Quantile { value: 0.2 });
    c.then = AfterOneShot::Ifca { local_steps: 5 };
    check_one_shot_ifca(&c);
}

/// ONE_SHOT-IFCA on seed 1 ends with the 3 true clusters, exactly, and their
/// parameters within 0.1.
fn check_one_shot_ifca(c: &Config) {
    let data = data(1);
    let server = drive(c, &data, c.clustering_rounds() + 100, 1);
    assert_eq!(server.clusters(), 3);
    let snap = server.snapshot();
    let view = &snap.replicas[0];
    let found: Vec<usize> = view.assignment.iter().map(|a| a.unwrap()).collect();
    assert_eq!(adjusted_rand_index(&found, &data.truth.train_labels), 1.0);
    let err = param_error(&view.models, data.truth.params.as_ref().unwrap()).unwrap();
    assert!(err < 0.1, "parameter error {err}");
}

#[test]
fn adam_one_shot_also_finds_the_clusters() {
    let mut c = config(Distance::CrossLoss, Threshold::Quantile { value: 0.2 });
    c.local_optimizer = Optimizer::Adam {
        batch_size: 10,
        keep_state: true,
        lr_decay: 1.0,
        schedule: None,
    };
    c.local_lr = 0.05;
    check_recovery(&c, 2);
}

#[test]
fn adam_refine_with_local_steps_finds_the_clusters() {
    let mut c = config(Distance::CrossLoss, Threshold::Quantile { value: 0.2 });
    c.optimizer = Optimizer::Adam {
        batch_size: 10,
        keep_state: true,
        lr_decay: 1.0,
        schedule: None,
    };
    c.refine_local_steps = 5;
    c.lr = 0.01;
    check_recovery(&c, 2);
}

#[test]
fn adam_one_shot_ifca_finds_the_clusters() {
    let mut c = config(Distance::L2, Threshold::Quantile { value: 0.2 });
    c.then = AfterOneShot::Ifca { local_steps: 5 };
    c.optimizer = Optimizer::Adam {
        batch_size: 10,
        keep_state: true,
        lr_decay: 1.0,
        schedule: None,
    };
    c.lr = 0.01;
    check_one_shot_ifca(&c);
}

#[test]
fn a_multi_step_update_is_sent_as_the_sum_of_its_gradients() {
    // Two GD steps of size lr from w: (w − w₂)/lr = ∇f(w) + ∇f(w₁).
    let data = data(3);
    let model = LinearRegression::new(data.dim).unwrap();
    let batch = data.train[0].batch(data.dim);
    let mut c = config(Distance::L2, Threshold::Quantile { value: 0.2 });
    c.refine_local_steps = 2;
    let mut client = SrFcaClient::new(&c);
    let mut ws = Workspace::default();
    let start: Vec<f32> = (0..data.dim).map(|i| 0.1 * i as f32).collect();
    let mut env = ClientEnv {
        id: 0,
        round: 0,
        data: batch,
        model: &model,
        rng: stream(1, Purpose::Client, 0, 0),
        ws: &mut ws,
    };
    let ctx = RoundCtx {
        round: 0,
        rounds: 1,
        num_clients: 1,
    };
    let msg = Down::Gradient {
        models: std::sync::Arc::new(start.clone()),
        cluster: 0,
        p: data.dim,
        local_steps: 2,
    };
    let Up::Gradient(sent) = client.handle(&ctx, &msg, &mut env).unwrap() else {
        panic!("a gradient reply");
    };
    let (mut g0, mut g1) = (vec![0.0f32; data.dim], vec![0.0f32; data.dim]);
    model.loss_grad(&start, batch, &mut g0, env.ws);
    let w1: Vec<f32> = start.iter().zip(&g0).map(|(w, g)| w - c.lr * g).collect();
    model.loss_grad(&w1, batch, &mut g1, env.ws);
    for ((s, a), b) in sent.payload.iter().zip(&g0).zip(&g1) {
        assert!(
            (s - (a + b)).abs() < 1e-3 * (1.0 + (a + b).abs()),
            "{s} vs {}",
            a + b
        );
    }
}

#[test]
fn too_many_clients_for_the_pairwise_graph_is_a_clear_error() {
    let c = config(Distance::L2, Threshold::Quantile { value: 0.2 });
    let model = LinearRegression::new(3).unwrap();
    let err = SrFcaServer::new(Checked::new(c).unwrap(), &model, MAX_CLIENTS + 1, 1).unwrap_err();
    assert!(err.to_string().contains("pairs of clients"), "{err}");
}
