//! IFCA halves on hand-made messages and a small seeded federation.

use std::sync::Arc;

use rand_distr::{Distribution, StandardNormal};

use fedcluster_core::{
    Batch, ClientEnv, ClientHalf, Purpose, RoundCtx, ServerHalf, Targets, Workspace, stream,
};
use fedcluster_models::LinearRegression;
use fedcluster_sim::{InProcess, run};

use super::{Down, IfcaClient, IfcaServer, LocalStep, Up};
use crate::common::aggregate::Aggregation;
use crate::common::checked::Checked;
use crate::common::init::InitScheme;
use crate::ifca::Config;

fn config(aggregation: Aggregation, restarts: usize, stable_rounds: usize) -> Checked<Config> {
    Checked::new(Config {
        clusters: 2,
        aggregation,
        lr: 0.5.into(),
        local_steps: 3,
        participation: 1.0,
        restarts,
        init: InitScheme::Zeros,
        stable_rounds,
        min_share: 0.0,
        weight_sharing: false,
        momentum: 0.0,
        optimizer: Default::default(),
        pretrain_rounds: 0,
        freeze_trunk: false,
        weighting: Default::default(),
        clients: Default::default(),
        clients_per_round: None,
        round_schedule: None,
    })
    .unwrap()
}

fn ctx(round: usize, m: usize) -> RoundCtx {
    RoundCtx {
        round,
        rounds: 10,
        num_clients: m,
    }
}

fn up(chosen: u32, payload: Vec<f32>) -> Up {
    Up {
        chosen: vec![chosen],
        losses: vec![Some(1.0)],
        payload,
        velocity: Vec::new(),
        samples: 10,
    }
}

#[test]
fn gradient_averaging_divides_by_the_participants_and_keeps_empty_clusters() {
    let model = LinearRegression::new(2).unwrap();
    let mut server = IfcaServer::new(config(Aggregation::Gradient, 1, 0), &model, 4, 1);
    let mut rng = stream(1, Purpose::Server, 0, 0);
    let plan = server.plan(&ctx(0, 4), &mut rng).unwrap();
    assert_eq!(plan.len(), 4);
    let replies = vec![
        (0, up(0, vec![1.0, 0.0])),
        (1, up(0, vec![3.0, 4.0])),
        (2, up(0, vec![0.0, 4.0])),
        (3, up(0, vec![0.0, 0.0])),
    ];
    server.absorb(&ctx(0, 4), replies).unwrap();
    // θ_0 = 0 - (0.5 / 4) (4, 8); θ_1 received nothing and stays 0.
    assert_eq!(server.models(0), &[-0.5, -1.0, 0.0, 0.0]);
    let snap = server.snapshot();
    assert_eq!(snap.replicas[0].assignment, &[Some(0); 4]);
    assert_eq!(snap.replicas[0].train_loss, Some(1.0));
}

#[test]
fn model_averaging_weights_by_samples() {
    let model = LinearRegression::new(1).unwrap();
    let mut server = IfcaServer::new(config(Aggregation::Model, 1, 0), &model, 2, 1);
    let mut rng = stream(1, Purpose::Server, 0, 0);
    server.plan(&ctx(0, 2), &mut rng).unwrap();
    let mut a = up(1, vec![2.0]);
    a.samples = 30;
    let b = up(1, vec![6.0]);
    server.absorb(&ctx(0, 2), vec![(0, a), (1, b)]).unwrap();
    assert_eq!(server.models(0), &[0.0, 3.0]);
}

#[test]
fn stable_clients_receive_only_their_own_model() {
    let model = LinearRegression::new(3).unwrap();
    let mut server = IfcaServer::new(config(Aggregation::Gradient, 1, 2), &model, 2, 1);
    let mut rng = stream(1, Purpose::Server, 0, 0);
    for round in 0..4 {
        let plan = server.plan(&ctx(round, 2), &mut rng).unwrap();
        // Stable for 2 rounds after rounds 0 and 1 (the first reply is a change).
        let expect_own = round >= 3;
        for (_, down) in &plan {
            assert_eq!(down.own.is_some(), expect_own, "round {round}");
        }
        let replies = vec![(0, up(1, vec![0.0; 3])), (1, up(0, vec![0.0; 3]))];
        server.absorb(&ctx(round, 2), replies).unwrap();
    }
    let plan = server.plan(&ctx(4, 2), &mut rng).unwrap();
    assert_eq!(plan[0].1.own.as_deref(), Some(&[1u32][..]));
    use fedcluster_core::Message;
    // One model of 3 floats, its cluster index and the replica's step size.
    assert_eq!(plan[0].1.wire_bytes(), 3 * 4 + 4 + 4);
}

#[test]
fn a_diverged_replica_is_dropped_and_the_last_one_fails_the_run() {
    let model = LinearRegression::new(1).unwrap();
    let mut server = IfcaServer::new(config(Aggregation::Gradient, 2, 0), &model, 1, 1);
    let mut rng = stream(1, Purpose::Server, 0, 0);
    server.plan(&ctx(0, 1), &mut rng).unwrap();
    let reply = Up {
        chosen: vec![0, 0],
        losses: vec![None, Some(1.0)],
        payload: vec![0.0, 1.0],
        velocity: Vec::new(),
        samples: 1,
    };
    server.absorb(&ctx(0, 1), vec![(0, reply)]).unwrap();
    let snap = server.snapshot();
    assert!(snap.replicas[0].diverged && !snap.replicas[1].diverged);
    assert_eq!(snap.selected, 1);
    let plan = server.plan(&ctx(1, 1), &mut rng).unwrap();
    assert_eq!(plan[0].1.replicas, 1);
    let reply = Up {
        chosen: vec![0],
        losses: vec![None],
        payload: vec![0.0],
        velocity: Vec::new(),
        samples: 1,
    };
    let err = server
        .absorb(&ctx(1, 1), vec![(0, reply)])
        .unwrap_err()
        .to_string();
    assert!(err.contains("round 1, client 0"), "{err}");
}

#[test]
fn the_client_picks_the_lowest_loss_model_and_reports_its_gradient() {
    // y = 2x; model 1 (θ = 2) fits exactly, model 0 (θ = 0) does not.
    let x = [1.0f32, 2.0, 3.0];
    let y = [2.0f32, 4.0, 6.0];
    let model = LinearRegression::new(1).unwrap();
    let mut ws = Workspace::default();
    let mut env = ClientEnv {
        id: 0,
        round: 0,
        data: Batch::new(&x, Targets::Real(&y), 1).unwrap(),
        model: &model,
        rng: stream(1, Purpose::Client, 0, 0),
        ws: &mut ws,
    };
    let down = Down {
        models: Arc::new(vec![0.0, 2.0]),
        replicas: 1,
        k: 2,
        lrs: Arc::new(vec![0.1]),
        shared: 0,
        velocities: None,
        own: None,
        assign_only: false,
    };
    let reply = IfcaClient::new(LocalStep::Gradient)
        .handle(&ctx(0, 1), &down, &mut env)
        .unwrap();
    assert_eq!(reply.chosen, vec![1]);
    assert_eq!(reply.losses, vec![Some(0.0)]);
    assert_eq!(reply.payload, vec![0.0]);
}

/// A 2-cluster linear problem with noise σ: IFCA through the in-process engine
/// recovers both parameter vectors within 0.6σ (the IFCA paper's success bar).
#[test]
fn recovers_two_clusters_through_the_engine() {
    let (m, n, d, sigma) = (10, 60, 4, 0.05f32);
    let truth = [[1.0f32, -1.0, 0.5, 0.0], [-1.0, 1.0, 0.0, 0.5]];
    let mut xs = Vec::new();
    let mut ys = Vec::new();
    for i in 0..m {
        let mut rng = stream(5, Purpose::ClientData, 0, i as u64);
        let t = &truth[i % 2];
        let x: Vec<f32> = (0..n * d)
            .map(|_| StandardNormal.sample(&mut rng))
            .collect();
        let y: Vec<f32> = x
            .chunks_exact(d)
            .map(|row| {
                let e: f32 = StandardNormal.sample(&mut rng);
                row.iter().zip(t).map(|(a, b)| a * b).sum::<f32>() + sigma * e
            })
            .collect();
        xs.push(x);
        ys.push(y);
    }
    let batches: Vec<Batch<'_>> = xs
        .iter()
        .zip(&ys)
        .map(|(x, y)| Batch::new(x, Targets::Real(y), d).unwrap())
        .collect();
    let model = LinearRegression::new(d).unwrap();
    let cfg = Checked::new(Config {
        init: InitScheme::Gaussian { std: 1.0 },
        restarts: 5,
        ..config(Aggregation::Gradient, 5, 0).into_inner()
    })
    .unwrap();
    let mut server = IfcaServer::new(cfg, &model, m, 3);
    let client = IfcaClient::new(LocalStep::Gradient);
    let mut transport = InProcess::new(vec![client; m], &batches, &model, 3, 1).unwrap();
    run(&mut server, &mut transport, 200, 3, |_| Ok(())).unwrap();
    let snap = server.snapshot();
    let best = &snap.replicas[snap.selected];
    let err = pairwise_param_error(&best.models, &truth);
    assert!(err < 0.6 * f64::from(sigma), "param error {err}");
    let a = best.assignment;
    assert!((0..m).all(|i| a[i] == a[i % 2]) && a[0] != a[1], "{a:?}");
}

/// `min over the two labellings of (1/2) Σ_j ‖θ_j − θ*_j‖`.
fn pairwise_param_error(models: &[&[f32]], truth: &[[f32; 4]; 2]) -> f64 {
    let dist = |a: &[f32], b: &[f32; 4]| fedcluster_core::params::dist(a, b);
    let straight = dist(models[0], &truth[0]) + dist(models[1], &truth[1]);
    let swapped = dist(models[0], &truth[1]) + dist(models[1], &truth[0]);
    straight.min(swapped) / 2.0
}

fn sharing(aggregation: Aggregation) -> (IfcaServer, usize, usize) {
    use fedcluster_core::Model;
    let model = fedcluster_models::Mlp::new(3, 4, 2).unwrap();
    let cfg = Checked::new(Config {
        init: InitScheme::Model,
        weight_sharing: true,
        ..config(aggregation, 1, 0).into_inner()
    })
    .unwrap();
    let server = IfcaServer::new(cfg, &model, 2, 7);
    (server, model.num_params(), model.head_start())
}

#[test]
fn weight_sharing_starts_from_shared_layers_and_averages_them_over_everyone() {
    let (mut server, p, sh) = sharing(Aggregation::Model);
    let m = server.models(0).to_vec();
    assert_eq!(m[..sh], m[p..p + sh], "shared layers start equal");
    assert_ne!(m[sh..p], m[p + sh..], "heads start apart");
    let mut rng = stream(1, Purpose::Server, 0, 0);
    let plan = server.plan(&ctx(0, 2), &mut rng).unwrap();
    use fedcluster_core::Message;
    assert_eq!(plan[0].1.wire_bytes(), ((sh + 2 * (p - sh)) * 4 + 4) as u64);
    let a: Vec<f32> = (0..p).map(|i| i as f32).collect();
    let b: Vec<f32> = (0..p).map(|i| 3.0 * i as f32).collect();
    let mut ua = up(0, a.clone());
    ua.samples = 3;
    let ub = up(1, b.clone());
    server.absorb(&ctx(0, 2), vec![(0, ua), (1, ub)]).unwrap();
    let m = server.models(0);
    for i in 0..sh {
        let want = (3.0 * a[i] + 10.0 * b[i]) / 13.0;
        assert!((m[i] - want).abs() < 1e-5 && (m[p + i] - want).abs() < 1e-5);
    }
    assert_eq!(m[sh..p], a[sh..], "head 0 is cluster 0's mean");
    assert_eq!(m[p + sh..], b[sh..], "head 1 is cluster 1's mean");
}

#[test]
fn weight_sharing_steps_the_shared_layers_of_every_cluster() {
    let (mut server, p, sh) = sharing(Aggregation::Gradient);
    let before = server.models(0).to_vec();
    let mut rng = stream(1, Purpose::Server, 0, 0);
    server.plan(&ctx(0, 2), &mut rng).unwrap();
    let replies = vec![(0, up(0, vec![0.0; p])), (1, up(1, vec![1.0; p]))];
    server.absorb(&ctx(0, 2), replies).unwrap();
    let after = server.models(0);
    // Two participants: the step is lr / 2 = 0.25 on every coordinate client 1 touches.
    for j in 0..2 {
        for i in 0..sh {
            assert!((after[j * p + i] - (before[j * p + i] - 0.25)).abs() < 1e-6);
        }
    }
    assert_eq!(after[sh..p], before[sh..p], "head 0 untouched");
    for i in sh..p {
        assert!((after[p + i] - (before[p + i] - 0.25)).abs() < 1e-6);
    }
}

fn momentum_server(aggregation: Aggregation) -> IfcaServer {
    let model = LinearRegression::new(2).unwrap();
    let cfg = Checked::new(Config {
        momentum: 0.5,
        ..config(aggregation, 1, 0).into_inner()
    })
    .unwrap();
    IfcaServer::new(cfg, &model, 2, 1)
}

#[test]
fn momentum_buffers_travel_with_the_models_and_are_averaged_per_cluster() {
    let mut server = momentum_server(Aggregation::Gradient);
    let mut rng = stream(1, Purpose::Server, 0, 0);
    let plan = server.plan(&ctx(0, 2), &mut rng).unwrap();
    let v = plan[0]
        .1
        .velocities
        .as_ref()
        .expect("momentum buffers are sent");
    assert_eq!(v.as_slice(), &[0.0; 4]);
    // Option I: replies carry u_i; θ_0 -= (0.5 / 2)(u_0 + u_1), u_0 = mean.
    let replies = vec![(0, up(0, vec![2.0, 0.0])), (1, up(0, vec![0.0, 4.0]))];
    server.absorb(&ctx(0, 2), replies).unwrap();
    assert_eq!(server.models(0), &[-0.5, -1.0, 0.0, 0.0]);
    let plan = server.plan(&ctx(1, 2), &mut rng).unwrap();
    let v = plan[0].1.velocities.as_ref().unwrap();
    assert_eq!(
        v.as_slice(),
        &[1.0, 2.0, 0.0, 0.0],
        "cluster 1 received nothing and keeps zero"
    );
}

#[test]
fn the_momentum_client_sends_beta_u_plus_g() {
    // y = 2x; the model θ = 0 has gradient (2/n) Σ x (0 - 2x) = -2 · 2 · 14 / 3.
    let x = [1.0f32, 2.0, 3.0];
    let y = [2.0f32, 4.0, 6.0];
    let model = LinearRegression::new(1).unwrap();
    let mut ws = Workspace::default();
    let mut env = ClientEnv {
        id: 0,
        round: 0,
        data: Batch::new(&x, Targets::Real(&y), 1).unwrap(),
        model: &model,
        rng: stream(1, Purpose::Client, 0, 0),
        ws: &mut ws,
    };
    let down = Down {
        models: Arc::new(vec![0.0, 100.0]),
        replicas: 1,
        k: 2,
        lrs: Arc::new(vec![0.1]),
        shared: 0,
        velocities: Some(Arc::new(vec![10.0, -7.0])),
        own: None,
        assign_only: false,
    };
    let reply = IfcaClient::new(LocalStep::GradientWithMomentum { beta: 0.5 })
        .handle(&ctx(0, 1), &down, &mut env)
        .unwrap();
    assert_eq!(reply.chosen, vec![0]);
    let g = -2.0 * 2.0 * 14.0 / 3.0;
    assert!(
        (reply.payload[0] - (0.5 * 10.0 + g)).abs() < 1e-4,
        "{:?}",
        reply.payload
    );
    // Without momentum buffers in the message a momentum client refuses.
    let plain = Down {
        velocities: None,
        ..down
    };
    assert!(
        IfcaClient::new(LocalStep::GradientWithMomentum { beta: 0.5 })
            .handle(&ctx(0, 1), &plain, &mut env)
            .is_err()
    );
}

#[test]
fn min_share_redraws_a_start_that_leaves_a_cluster_short() {
    let model = LinearRegression::new(2).unwrap();
    let cfg = Checked::new(Config {
        init: InitScheme::Gaussian { std: 1.0 },
        min_share: 0.25,
        ..config(Aggregation::Gradient, 1, 0).into_inner()
    })
    .unwrap();
    let mut server = IfcaServer::new(cfg, &model, 4, 1);
    let mut rng = stream(1, Purpose::Server, 0, 0);
    let first = server.models(0).to_vec();
    // Round 0: every client picks cluster 0, cluster 1 holds none of the 4.
    server.plan(&ctx(0, 4), &mut rng).unwrap();
    let all_zero = |g: f32| (0..4).map(|i| (i, up(0, vec![g, g]))).collect::<Vec<_>>();
    server.absorb(&ctx(0, 4), all_zero(1.0)).unwrap();
    let redrawn = server.models(0).to_vec();
    assert_eq!(server.redrawn(0), 1);
    assert_ne!(redrawn, first, "a new draw, the round's step dropped");
    // Round 1: two clients each: both clusters hold their share, the step applies.
    server.plan(&ctx(1, 4), &mut rng).unwrap();
    let split = (0..4)
        .map(|i| (i, up((i % 2) as u32, vec![1.0, 1.0])))
        .collect::<Vec<_>>();
    server.absorb(&ctx(1, 4), split).unwrap();
    assert_eq!(server.redrawn(0), 1);
    // θ_j -= (0.5 / 4) · (2 clients x gradient 1) per coordinate.
    let stepped: Vec<f32> = redrawn.iter().map(|v| v - 0.25).collect();
    assert_eq!(server.models(0), stepped.as_slice());
    // Checked only until it held: a later one-sided round trains on.
    server.plan(&ctx(2, 4), &mut rng).unwrap();
    server.absorb(&ctx(2, 4), all_zero(0.0)).unwrap();
    assert_eq!(server.redrawn(0), 1);
    assert_eq!(server.models(0), stepped.as_slice());
}

#[test]
fn min_share_off_changes_nothing_and_too_large_a_share_is_refused() {
    let model = LinearRegression::new(2).unwrap();
    let gaussian = |min_share: f64| Config {
        init: InitScheme::Gaussian { std: 1.0 },
        min_share,
        ..config(Aggregation::Gradient, 1, 0).into_inner()
    };
    let off = IfcaServer::new(Checked::new(gaussian(0.0)).unwrap(), &model, 4, 1);
    let on = IfcaServer::new(Checked::new(gaussian(0.25)).unwrap(), &model, 4, 1);
    assert_eq!(off.models(0), on.models(0), "the first draw is the same");
    assert!(
        !toml::to_string(&gaussian(0.0))
            .unwrap()
            .contains("min_share")
    );
    let err = Checked::new(gaussian(0.6)).unwrap_err();
    assert_eq!(err.field, "min_share");
}
