//! CFL on a seeded two-cluster linear mixture: one cluster until FedAvg
//! stalls, then a split along the clients' disagreeing updates.

use fedcluster_core::{Batch, ServerHalf};
use fedcluster_data::synthetic::{IfcaSyntheticSpec, TruthScale, ifca_synthetic};
use fedcluster_metrics::clustering::{adjusted_rand_index, param_error};
use fedcluster_models::LinearRegression;
use fedcluster_sim::{InProcess, run};

use super::*;
use crate::common::aggregate::Aggregation;
use crate::common::checked::Checked;
use crate::common::init::InitScheme;

#[test]
fn cfl_splits_a_two_cluster_federation_exactly() {
    let spec = IfcaSyntheticSpec {
        clients: 20,
        points_per_client: 100,
        test_points_per_client: 10,
        dim: 10,
        clusters: 2,
        noise_std: 0.1,
        separation: 2.0,
        truth_scale: TruthScale::Norm,
    };
    let data = ifca_synthetic(&spec, 3).unwrap();
    let model = LinearRegression::new(data.dim).unwrap();
    let config = Config {
        lr: 0.05,
        local_steps: 5,
        eps1: 0.05,
        eps2: 0.1,
        warmup_rounds: 10,
        min_split_size: 2,
        init: InitScheme::Zeros,
        optimizer: Default::default(),
        clients_per_round: None,
        round_schedule: None,
    };
    let batches: Vec<Batch<'_>> = data.train.iter().map(|c| c.batch(data.dim)).collect();
    let mut server = CflServer::new(
        Checked::new(config.clone()).unwrap(),
        &model,
        batches.len(),
        3,
    );
    let client = CflClient::new(Aggregation::Model, config.lr, config.local_steps);
    let mut transport =
        InProcess::new(vec![client; batches.len()], &batches, &model, 3, 0).unwrap();
    run(&mut server, &mut transport, 200, 3, |_| Ok(())).unwrap();
    assert_eq!(server.clusters(), 2, "splits: {:?}", server.splits);
    assert_eq!(server.splits.len(), 1);
    assert!(server.splits[0].0 >= 10, "no split during the warm-up");
    let snap = server.snapshot();
    let found: Vec<usize> = snap.replicas[0]
        .assignment
        .iter()
        .map(|a| a.unwrap())
        .collect();
    assert_eq!(adjusted_rand_index(&found, &data.truth.train_labels), 1.0);
    let err = param_error(
        &snap.replicas[0].models,
        data.truth.params.as_ref().unwrap(),
    )
    .unwrap();
    assert!(err < 0.05, "parameter error {err}");
}

#[test]
fn bad_thresholds_name_their_field() {
    let c = Config {
        lr: 0.1,
        local_steps: 1,
        eps1: 0.0,
        eps2: 1.0,
        warmup_rounds: 0,
        min_split_size: 2,
        init: InitScheme::Zeros,
        optimizer: Default::default(),
        clients_per_round: None,
        round_schedule: None,
    };
    assert_eq!(Checked::new(c).unwrap_err().field, "eps1");
}

/// CFL with `clients_per_round = 4` on the two-cluster mixture, `threads`
/// worker threads: the final models' bits, and every round's participants.
fn sampled_run(threads: usize) -> (Vec<u32>, Vec<Vec<usize>>, usize) {
    let spec = IfcaSyntheticSpec {
        clients: 12,
        points_per_client: 20,
        test_points_per_client: 5,
        dim: 4,
        clusters: 2,
        noise_std: 0.1,
        separation: 2.0,
        truth_scale: TruthScale::Norm,
    };
    let data = ifca_synthetic(&spec, 5).unwrap();
    let model = LinearRegression::new(data.dim).unwrap();
    let config = Config {
        lr: 0.05,
        local_steps: 2,
        eps1: 0.5,
        eps2: 0.1,
        warmup_rounds: 3,
        min_split_size: 2,
        init: InitScheme::Zeros,
        optimizer: Default::default(),
        clients_per_round: Some(4),
        round_schedule: None,
    };
    let batches: Vec<Batch<'_>> = data.train.iter().map(|c| c.batch(data.dim)).collect();
    let mut server = CflServer::new(Checked::new(config.clone()).unwrap(), &model, 12, 5);
    let client = CflClient::new(Aggregation::Model, config.lr, config.local_steps);
    let mut transport = InProcess::new(vec![client; 12], &batches, &model, 5, threads).unwrap();
    let mut rounds = Vec::new();
    for round in 0..8 {
        let ctx = fedcluster_core::RoundCtx {
            round,
            rounds: 8,
            num_clients: 12,
        };
        let mut rng = fedcluster_core::stream(5, fedcluster_core::Purpose::Server, round as u64, 0);
        let plan = server.plan(&ctx, &mut rng).unwrap();
        let members = server.members();
        let ids: Vec<usize> = plan.iter().map(|(id, _)| *id).collect();
        for cluster in &members {
            let drawn = ids.iter().filter(|id| cluster.contains(id)).count();
            assert_eq!(
                drawn,
                cluster.len().min(4),
                "round {round}: {ids:?} of {members:?}"
            );
        }
        let mut replies = Vec::new();
        let mut deliver = |id, up| {
            replies.push((id, up));
            Ok(())
        };
        fedcluster_sim::Transport::exchange(&mut transport, &ctx, &plan, &mut deliver).unwrap();
        server.absorb(&ctx, replies).unwrap();
        rounds.push(ids);
    }
    let snap = server.snapshot();
    let bits = snap.replicas[0]
        .models
        .iter()
        .flat_map(|m| m.iter().map(|v| v.to_bits()))
        .collect();
    (bits, rounds, server.clusters())
}

#[test]
fn clients_per_round_draws_that_many_members_of_each_cluster_whatever_the_threads() {
    let (bits, rounds, clusters) = sampled_run(1);
    assert!(rounds.iter().any(|r| r.len() < 12), "{rounds:?}");
    assert_eq!(sampled_run(2), (bits, rounds, clusters));
    let bad = Config {
        clients_per_round: Some(0),
        ..Config {
            lr: 0.1,
            local_steps: 1,
            eps1: 1.0,
            eps2: 1.0,
            warmup_rounds: 0,
            min_split_size: 2,
            init: InitScheme::Zeros,
            optimizer: Default::default(),
            clients_per_round: None,
            round_schedule: None,
        }
    };
    assert_eq!(Checked::new(bad).unwrap_err().field, "clients_per_round");
}
