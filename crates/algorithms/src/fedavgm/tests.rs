//! FedAvgM against known answers: the server's momentum step on hand-made
//! replies, FedAvg when β = 0 and η = 1, and heavy-ball gradient descent when one
//! client takes one local step.

use fedcluster_core::{Batch, Model, Purpose, RoundCtx, ServerHalf, Workspace, stream};
use fedcluster_data::FederatedData;
use fedcluster_data::synthetic::{IfcaSyntheticSpec, ifca_synthetic};
use fedcluster_models::LinearRegression;
use fedcluster_sim::{InProcess, run};

use super::{Config, FedAvgM, FedAvgMServer};
use crate::common::checked::Checked;
use crate::common::init::InitScheme;
use crate::common::messages::ModelReply;
use crate::table::{Algorithm, Setup};
use crate::{fedavg, global};

fn config(local_steps: usize, server_lr: f32, server_momentum: f32) -> Checked<Config> {
    Checked::new(Config {
        lr: 0.05,
        local_steps,
        server_lr,
        server_momentum,
        participation: 1.0,
        init: InitScheme::Zeros,
        optimizer: Default::default(),
    })
    .unwrap()
}

fn ctx(round: usize) -> RoundCtx {
    RoundCtx {
        round,
        rounds: 5,
        num_clients: 2,
    }
}

fn reply(payload: Vec<f32>, samples: usize) -> ModelReply {
    ModelReply::new(payload, Some(1.0), samples)
}

#[test]
fn the_server_steps_along_its_momentum() {
    let model = LinearRegression::new(2).unwrap();
    let mut s = FedAvgMServer::new(config(1, 1.0, 0.5), &model, 2, 1);
    let mut round = |r: usize, replies: Vec<(usize, ModelReply)>| {
        s.plan(&ctx(r), &mut stream(1, Purpose::Server, r as u64, 0))
            .unwrap();
        s.absorb(&ctx(r), replies).unwrap();
        s.model().to_vec()
    };
    // Mean 2.5: Δ = 0 − 2.5, v = −2.5, w = 0 + 2.5.
    let w1 = round(
        0,
        vec![(0, reply(vec![1.0, 1.0], 1)), (1, reply(vec![3.0, 3.0], 3))],
    );
    assert_eq!(w1, vec![2.5, 2.5]);
    // Mean 3: Δ = 2.5 − 3, v = 0.5 · (−2.5) − 0.5 = −1.75, w = 2.5 + 1.75.
    let w2 = round(
        1,
        vec![(0, reply(vec![3.0, 3.0], 2)), (1, reply(vec![3.0, 3.0], 2))],
    );
    assert_eq!(w2, vec![4.25, 4.25]);
}

#[test]
fn a_malformed_or_diverged_reply_is_an_error() {
    let model = LinearRegression::new(2).unwrap();
    let mut s = FedAvgMServer::new(config(1, 1.0, 0.5), &model, 2, 1);
    s.plan(&ctx(0), &mut stream(1, Purpose::Server, 0, 0))
        .unwrap();
    assert!(s.receive(&ctx(0), 0, reply(vec![1.0], 1)).is_err());
    let nan = ModelReply::new(vec![0.0, 0.0], None, 1);
    assert!(s.receive(&ctx(0), 1, nan).is_err());
}

/// `m` linear-regression clients of one cluster (d = 5).
fn clients(m: usize) -> FederatedData {
    let spec = IfcaSyntheticSpec {
        clients: m,
        points_per_client: 30,
        test_points_per_client: 1,
        dim: 5,
        clusters: 1,
        noise_std: 0.1,
        separation: 1.0,
        truth_scale: Default::default(),
    };
    ifca_synthetic(&spec, 3).unwrap()
}

#[test]
fn without_momentum_it_is_fedavg() {
    let (data, model) = (clients(6), LinearRegression::new(5).unwrap());
    let batches: Vec<Batch<'_>> = data.train.iter().map(|c| c.batch(5)).collect();
    let setup = Setup::new(&model, 6, 1);
    let plain = config(3, 1.0, 0.0);
    let mut fedavgm = FedAvgM::server(plain.clone(), &setup).unwrap();
    let client = FedAvgM::client(&plain);
    let mut transport = InProcess::new(vec![client; 6], &batches, &model, 1, 1).unwrap();
    run(&mut fedavgm, &mut transport, 20, 1, |_| Ok(())).unwrap();
    let fedavg_config = Checked::new(fedavg::Config {
        aggregation: crate::Aggregation::Model,
        lr: 0.05,
        local_steps: 3,
        participation: 1.0,
        init: InitScheme::Zeros,
        optimizer: Default::default(),
        weighting: Default::default(),
        clients: Default::default(),
        round_schedule: None,
    })
    .unwrap();
    let mut fedavg = global::Global::server(fedavg_config.clone(), &setup).unwrap();
    let client = global::Global::client(&fedavg_config);
    let mut transport = InProcess::new(vec![client; 6], &batches, &model, 1, 1).unwrap();
    run(&mut fedavg, &mut transport, 20, 1, |_| Ok(())).unwrap();
    let (a, b) = (fedavgm.model(), fedavg.snapshot().replicas[0].models[0]);
    for (x, y) in a.iter().zip(b) {
        assert!((x - y).abs() <= 1e-5 * (1.0 + y.abs()), "{a:?} vs {b:?}");
    }
}

#[test]
fn one_client_one_local_step_is_heavy_ball_descent() {
    let (data, model) = (clients(1), LinearRegression::new(5).unwrap());
    let batch = data.train[0].batch(5);
    let (gamma, eta, beta) = (0.05f32, 0.8f32, 0.7f32);
    let c = config(1, eta, beta);
    let mut server = FedAvgM::server(c.clone(), &Setup::new(&model, 1, 1)).unwrap();
    let batches = vec![batch];
    let mut transport = InProcess::new(vec![FedAvgM::client(&c)], &batches, &model, 1, 1).unwrap();
    run(&mut server, &mut transport, 15, 1, |_| Ok(())).unwrap();
    // v ← β v + γ ∇f(w), w ← w − η v, from w = v = 0.
    let (mut w, mut v, mut g) = (vec![0.0f32; 5], vec![0.0f32; 5], vec![0.0f32; 5]);
    let mut ws = Workspace::default();
    for _ in 0..15 {
        model.loss_grad(&w, batch, &mut g, &mut ws);
        for ((wi, vi), gi) in w.iter_mut().zip(&mut v).zip(&g) {
            *vi = beta * *vi + gamma * gi;
            *wi -= eta * *vi;
        }
    }
    for (x, y) in server.model().iter().zip(&w) {
        assert!(
            (x - y).abs() <= 1e-5 * (1.0 + y.abs()),
            "{:?} vs {w:?}",
            server.model()
        );
    }
    assert!(
        model.loss(server.model(), batch, &mut ws) < model.loss(&[0.0; 5], batch, &mut ws) / 4.0
    );
}
