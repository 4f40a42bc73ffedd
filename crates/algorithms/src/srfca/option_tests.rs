//! SR-FCA's two options: correlation clustering in place of connected
//! components, and Theorem 4.11's resampling per REFINE step.

use fedcluster_core::{
    Batch, ClientEnv, ClientHalf, Model, Purpose, RoundCtx, Targets, Workspace, stream,
};
use fedcluster_models::LinearRegression;
use std::sync::Arc;

use super::tests::{check_recovery, config, data, drive};
use super::*;

/// Two groups {0..4} and {5..9} at distance 1 within, 10 across, but one noisy
/// pair (4, 5) at distance 1.
fn two_groups_and_a_noisy_pair() -> Vec<f64> {
    let m = 10;
    let mut d = vec![0.0; m * m];
    for i in 0..m {
        for j in 0..m {
            let apart = (i < 5) != (j < 5) && !matches!((i, j), (4, 5) | (5, 4));
            d[i * m + j] = if i == j {
                0.0
            } else if apart {
                10.0
            } else {
                1.0
            };
        }
    }
    d
}

#[test]
fn correlation_clustering_splits_what_a_noisy_edge_joins() {
    let d = two_groups_and_a_noisy_pair();
    let components = one_shot(&d, 10, 2.0, 2);
    assert_eq!(components, vec![(0..10).collect::<Vec<_>>()]);
    // Seed 1's first pivot is not an end of the noisy pair.
    let mut rng = stream(1, Purpose::Clustering, 0, 0);
    let pivots = one_shot_with(Cut::Pivot(&mut rng), &d, 10, 2.0, 2);
    assert_eq!(pivots, vec![(0..5).collect::<Vec<_>>(), (5..10).collect()]);
}

#[test]
fn correlation_srfca_finds_the_clusters_without_k() {
    let mut c = config(Distance::L2, Threshold::Quantile { value: 0.2 });
    c.clustering = Clustering::Correlation;
    check_recovery(&c, 1);
}

#[test]
fn resampling_srfca_finds_the_clusters_without_k() {
    let mut c = config(Distance::L2, Threshold::Quantile { value: 0.2 });
    c.resample = true;
    check_recovery(&c, 1);
}

#[test]
fn the_server_resamples_on_the_schedule_the_clients_derive() {
    // The clients read their block off the round by `clustering_rounds`'s
    // schedule: the server must end its clustering exactly there.
    let data = data(2);
    for distance in [Distance::L2, Distance::CrossLoss] {
        let mut c = config(distance, Threshold::Quantile { value: 0.2 });
        (c.local_steps, c.refine_rounds, c.resample) = (5, 3, true);
        let rounds = c.clustering_rounds();
        assert!(drive(&c, &data, rounds - 1, 2).clustering(), "{distance:?}");
        assert!(!drive(&c, &data, rounds, 2).clustering(), "{distance:?}");
    }
}

/// The loss of the zero model that a client reports at `round`.
pub(super) fn loss_at(
    client: &mut SrFcaClient,
    round: usize,
    data: Batch<'_>,
    model: &dyn Model,
) -> f64 {
    let mut ws = Workspace::default();
    let mut env = ClientEnv {
        id: 0,
        round,
        data,
        model,
        rng: stream(1, Purpose::Client, round as u64, 0),
        ws: &mut ws,
    };
    let ctx = RoundCtx {
        round,
        rounds: 100,
        num_clients: 1,
    };
    let zero = Down::Evaluate {
        models: Arc::new(vec![0.0; model.num_params()]),
        p: model.num_params(),
    };
    match client.handle(&ctx, &zero, &mut env).unwrap() {
        Up::Losses(l) => l[0],
        other => panic!("an evaluation answers losses, got {other:?}"),
    }
}

/// 12 rows of one feature 1.0 whose targets, 0 to 11, tell the rows apart.
pub(super) fn numbered_rows() -> (Vec<f32>, Vec<f32>) {
    (vec![1.0; 12], (0..12).map(|i| i as f32).collect())
}

#[test]
fn each_refine_step_scores_on_its_own_block_of_rows() {
    // A block's zero-model loss is that of its rows alone.
    let model = LinearRegression::new(1).unwrap();
    let (x, y) = numbered_rows();
    let data = Batch::new(&x, Targets::Real(&y), 1).unwrap();
    let on = |rows: std::ops::Range<usize>| {
        model.loss(
            &[0.0],
            data.rows(rows.start, rows.end),
            &mut Workspace::default(),
        )
    };
    // Cross-loss, R = 2, 3 rounds per TrimmedMeanGD: ONE_SHOT rounds 0-1,
    // REFINE 1 rounds 2-7, REFINE 2 rounds 8-13, then all the data.
    let mut c = config(Distance::CrossLoss, Threshold::Quantile { value: 0.2 });
    c.refine_rounds = 3;
    c.resample = true;
    let mut client = SrFcaClient::new(&c);
    let blocks = [0..4, 4..8, 8..12];
    for round in 0..16 {
        let want = match round {
            0..=1 => on(blocks[0].clone()),
            2..=7 => on(blocks[1].clone()),
            8..=13 => on(blocks[2].clone()),
            _ => on(0..12),
        };
        assert_eq!(
            loss_at(&mut client, round, data, &model),
            want,
            "round {round}"
        );
    }
    // Without the option every round scores on all the rows.
    c.resample = false;
    let mut client = SrFcaClient::new(&c);
    for round in 0..16 {
        assert_eq!(loss_at(&mut client, round, data, &model), on(0..12));
    }
    // Too few rows for the blocks is an error, not a panic.
    c.resample = true;
    let mut client = SrFcaClient::new(&c);
    let short = data.rows(0, 2);
    let mut ws = Workspace::default();
    let mut env = ClientEnv {
        id: 0,
        round: 0,
        data: short,
        model: &model,
        rng: stream(1, Purpose::Client, 0, 0),
        ws: &mut ws,
    };
    let ctx = RoundCtx {
        round: 0,
        rounds: 1,
        num_clients: 1,
    };
    let err = client
        .handle(&ctx, &Down::TrainLocal(Arc::new(vec![0.0; 1])), &mut env)
        .unwrap_err();
    assert!(err.to_string().contains("resample"), "{err}");
}

#[test]
fn resample_with_one_shot_ifca_names_its_field() {
    let mut c = config(Distance::L2, Threshold::Quantile { value: 0.2 });
    c.then = AfterOneShot::Ifca { local_steps: 1 };
    c.resample = true;
    let err = crate::common::checked::Checked::new(c).unwrap_err();
    assert_eq!(err.field, "resample");
}

/// SR-FCA with `clients_per_round = 4` on `threads` worker threads, driven
/// `rounds` rounds: the server.
fn sampled(
    c: &Config,
    data: &fedcluster_data::FederatedData,
    rounds: usize,
    threads: usize,
) -> SrFcaServer {
    let model = LinearRegression::new(data.dim).unwrap();
    let batches: Vec<Batch<'_>> = data.train.iter().map(|c| c.batch(data.dim)).collect();
    let checked = crate::common::checked::Checked::new(c.clone()).unwrap();
    let mut server = SrFcaServer::new(checked, &model, batches.len(), 3).unwrap();
    let clients = vec![SrFcaClient::new(c); batches.len()];
    let mut transport =
        fedcluster_sim::InProcess::new(clients, &batches, &model, 3, threads).unwrap();
    fedcluster_sim::run(&mut server, &mut transport, rounds, 3, |_| Ok(())).unwrap();
    server
}

#[test]
fn clients_per_round_trains_that_many_members_of_each_cluster_whatever_the_threads() {
    use fedcluster_core::ServerHalf;
    let data = data(3);
    let mut c = config(Distance::L2, Threshold::Quantile { value: 0.2 });
    c.clients_per_round = Some(4);
    let rounds = c.clustering_rounds() + 30;
    let mut server = sampled(&c, &data, rounds, 1);
    let bits = |s: &SrFcaServer| -> Vec<u32> {
        let snap = s.snapshot();
        snap.replicas[0]
            .models
            .iter()
            .flat_map(|m| m.iter().map(|v| v.to_bits()))
            .collect()
    };
    assert_eq!(bits(&sampled(&c, &data, rounds, 2)), bits(&server));
    assert_eq!(server.clusters(), 3, "sampling keeps the clusters");
    let ctx = RoundCtx {
        round: rounds,
        rounds: rounds + 1,
        num_clients: 30,
    };
    let plan = server
        .plan(&ctx, &mut stream(3, Purpose::Server, rounds as u64, 0))
        .unwrap();
    let snap = server.snapshot();
    let assignment = &snap.replicas[0].assignment;
    for cluster in 0..3 {
        let members = assignment.iter().filter(|a| **a == Some(cluster)).count();
        let drawn = plan
            .iter()
            .filter(|(id, _)| assignment[*id] == Some(cluster))
            .count();
        assert_eq!(drawn, members.min(4), "cluster {cluster} of {members}");
    }
    c.clients_per_round = Some(0);
    let err = crate::common::checked::Checked::new(c).unwrap_err();
    assert_eq!(err.field, "clients_per_round");
}
