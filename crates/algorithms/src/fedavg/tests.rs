//! FedAvg halves on hand-made replies.

use fedcluster_core::{Purpose, RoundCtx, ServerHalf, stream};
use fedcluster_models::LinearRegression;
use fedcluster_sim::InProcess;

use super::{Config, FedAvgServer};
use crate::common::aggregate::Aggregation;
use crate::common::checked::Checked;
use crate::common::init::InitScheme;
use crate::common::messages::ModelReply;

fn server(aggregation: Aggregation, assignment: Vec<usize>) -> FedAvgServer {
    let config = Checked::new(Config {
        aggregation,
        lr: 0.5,
        local_steps: 2,
        participation: 1.0,
        init: InitScheme::Zeros,
        optimizer: Default::default(),
        weighting: Default::default(),
        clients: Default::default(),
        round_schedule: None,
    })
    .unwrap();
    let model = LinearRegression::new(2).unwrap();
    FedAvgServer::new(config, &model, 2, assignment, 1).unwrap()
}

fn ctx(round: usize) -> RoundCtx {
    RoundCtx {
        round,
        rounds: 5,
        num_clients: 3,
    }
}

fn reply(payload: Vec<f32>, samples: usize) -> ModelReply {
    ModelReply::new(payload, Some(1.0), samples)
}

#[test]
fn each_client_trains_its_own_cluster_model() {
    let mut s = server(Aggregation::Model, vec![1, 0, 1]);
    let plan = s
        .plan(&ctx(0), &mut stream(1, Purpose::Server, 0, 0))
        .unwrap();
    let clusters: Vec<u32> = plan.iter().map(|(_, m)| m.cluster).collect();
    assert_eq!(clusters, vec![1, 0, 1]);
}

#[test]
fn model_averaging_is_sample_weighted_per_cluster() {
    let mut s = server(Aggregation::Model, vec![1, 0, 1]);
    s.plan(&ctx(0), &mut stream(1, Purpose::Server, 0, 0))
        .unwrap();
    let replies = vec![
        (0, reply(vec![1.0, 1.0], 1)),
        (1, reply(vec![5.0, 5.0], 7)),
        (2, reply(vec![4.0, 0.0], 3)),
    ];
    s.absorb(&ctx(0), replies).unwrap();
    let snap = s.snapshot();
    assert_eq!(
        snap.replicas[0].models,
        vec![&[5.0, 5.0][..], &[3.25, 0.25][..]]
    );
}

#[test]
fn gradient_averaging_steps_by_lr_over_participants() {
    let mut s = server(Aggregation::Gradient, vec![0, 0, 1]);
    s.plan(&ctx(0), &mut stream(1, Purpose::Server, 0, 0))
        .unwrap();
    let replies = vec![
        (0, reply(vec![3.0, 0.0], 1)),
        (1, reply(vec![3.0, 6.0], 1)),
        (2, reply(vec![0.0, 0.0], 1)),
    ];
    s.absorb(&ctx(0), replies).unwrap();
    // θ_0 = 0 - (0.5 / 3) (6, 6)
    assert_eq!(s.snapshot().replicas[0].models[0], &[-1.0, -1.0]);
}

#[test]
fn a_non_finite_reply_is_a_divergence_naming_round_and_client() {
    let mut s = server(Aggregation::Model, vec![0, 0, 1]);
    s.plan(&ctx(3), &mut stream(1, Purpose::Server, 3, 0))
        .unwrap();
    let bad = ModelReply::checked(vec![f32::NAN, 0.0], 1.0, 1);
    assert!(bad.loss.is_none() && bad.payload.iter().all(|v| *v == 0.0));
    let err = s
        .absorb(&ctx(3), vec![(0, reply(vec![0.0, 0.0], 1)), (2, bad)])
        .unwrap_err()
        .to_string();
    assert!(err.contains("round 3, client 2"), "{err}");
}

#[test]
fn an_assignment_beyond_k_is_rejected() {
    let config = Checked::new(Config {
        aggregation: Aggregation::Model,
        lr: 0.5,
        local_steps: 2,
        participation: 1.0,
        init: InitScheme::Zeros,
        optimizer: Default::default(),
        weighting: Default::default(),
        clients: Default::default(),
        round_schedule: None,
    })
    .unwrap();
    let model = LinearRegression::new(2).unwrap();
    assert!(FedAvgServer::new(config, &model, 2, vec![0, 2], 1).is_err());
}

/// FedAvg with Adam (state kept by each client) and 30% participation, 12
/// rounds over `batches`' clients, their halves stored for every client or
/// (`kept_only`) only for those that took part: the final model's bits.
fn adam_run(
    kept_only: bool,
    threads: usize,
    batches: &dyn fedcluster_core::Shards,
    model: &LinearRegression,
) -> Vec<u32> {
    let config = Checked::new(Config {
        aggregation: Aggregation::Model,
        lr: 0.05,
        local_steps: 3,
        participation: 0.3,
        init: InitScheme::Zeros,
        optimizer: crate::common::trainer::Optimizer::Adam {
            batch_size: 2,
            keep_state: true,
            lr_decay: 1.0,
            schedule: None,
        },
        weighting: Default::default(),
        clients: Default::default(),
        round_schedule: None,
    })
    .unwrap();
    let client = super::FedAvgClient::from_config(&config);
    let m = batches.num_clients();
    let mut server = FedAvgServer::new(config, model, 1, vec![0; m], 4).unwrap();
    let mut transport = if kept_only {
        InProcess::sparse(client, batches, model, 4, threads).unwrap()
    } else {
        InProcess::new(vec![client; m], batches, model, 4, threads).unwrap()
    };
    fedcluster_sim::run(&mut server, &mut transport, 12, 4, |_| Ok(())).unwrap();
    server.snapshot().replicas[0].models[0]
        .iter()
        .map(|v| v.to_bits())
        .collect()
}

#[test]
fn kept_only_halves_and_any_thread_count_give_the_same_bits() {
    let (m, n, d) = (40, 5, 3);
    let mut rng = stream(2, Purpose::ClientData, 0, 0);
    let x: Vec<f32> = (0..m * n * d)
        .map(|_| rand::Rng::random::<f32>(&mut rng) - 0.5)
        .collect();
    let y: Vec<f32> = (0..m * n)
        .map(|_| rand::Rng::random::<f32>(&mut rng))
        .collect();
    let batches: Vec<fedcluster_core::Batch<'_>> = (0..m)
        .map(|i| {
            let rows = i * n..(i + 1) * n;
            fedcluster_core::Batch::new(
                &x[rows.start * d..rows.end * d],
                fedcluster_core::Targets::Real(&y[rows]),
                d,
            )
            .unwrap()
        })
        .collect();
    let model = LinearRegression::new(d).unwrap();
    let want = adam_run(false, 1, &batches, &model);
    assert_eq!(adam_run(false, 2, &batches, &model), want);
    assert_eq!(adam_run(true, 1, &batches, &model), want);
    assert_eq!(adam_run(true, 2, &batches, &model), want);
}
