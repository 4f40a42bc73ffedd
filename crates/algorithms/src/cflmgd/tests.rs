//! CFL-MGD's `buffer` option on hand-made messages.

use std::sync::Arc;

use fedcluster_core::{
    Batch, ClientEnv, ClientHalf, Purpose, RoundCtx, Targets, Workspace, stream,
};
use fedcluster_models::LinearRegression;

use super::{CflMgd, Config, MomentumBuffer};
use crate::common::aggregate::Aggregation;
use crate::common::checked::Checked;
use crate::common::init::InitScheme;
use crate::common::trainer::Optimizer;
use crate::ifca::Down;
use crate::table::Algorithm;

fn config(aggregation: Aggregation, buffer: MomentumBuffer) -> Checked<Config> {
    Checked::new(Config {
        clusters: 2,
        aggregation,
        lr: 0.1,
        momentum: 0.5,
        local_steps: 2,
        participation: 1.0,
        restarts: 1,
        init: InitScheme::Zeros,
        buffer,
        optimizer: Default::default(),
    })
    .unwrap()
}

/// Two clusters of a one-parameter model, the first at 0, its buffer 10; the
/// second far away.
fn down() -> Down {
    Down {
        models: Arc::new(vec![0.0, 100.0]),
        replicas: 1,
        k: 2,
        lrs: Arc::new(vec![0.1]),
        shared: 0,
        velocities: Some(Arc::new(vec![10.0, -7.0])),
        own: None,
        assign_only: false,
    }
}

/// The payload and momentum a client of `buffer` sends in each of `rounds`
/// rounds of the same message (y = 2x on three points).
fn replies(aggregation: Aggregation, buffer: MomentumBuffer, rounds: usize) -> Vec<(f32, f32)> {
    let (x, y) = ([1.0f32, 2.0, 3.0], [2.0f32, 4.0, 6.0]);
    let model = LinearRegression::new(1).unwrap();
    let mut ws = Workspace::default();
    let mut client = CflMgd::client(&config(aggregation, buffer));
    (0..rounds)
        .map(|round| {
            let mut env = ClientEnv {
                id: 0,
                round,
                data: Batch::new(&x, Targets::Real(&y), 1).unwrap(),
                model: &model,
                rng: stream(1, Purpose::Client, round as u64, 0),
                ws: &mut ws,
            };
            let ctx = RoundCtx {
                round,
                rounds,
                num_clients: 1,
            };
            let up = client.handle(&ctx, &down(), &mut env).unwrap();
            assert_eq!(up.chosen, vec![0]);
            (
                up.payload[0],
                up.velocity.first().copied().unwrap_or(f32::NAN),
            )
        })
        .collect()
}

#[test]
fn option_one_starts_from_the_cluster_buffer_or_the_clients_own() {
    // The gradient of (1/n) Σ (θx − y)² at θ = 0.
    let g = -2.0 * 2.0 * 14.0 / 3.0;
    let close = |a: f32, b: f32| (a - b).abs() < 1e-4;
    let cluster = replies(Aggregation::Gradient, MomentumBuffer::Cluster, 2);
    // Algorithm 1: β u_p̂ + g, every round from the cluster's buffer.
    assert!(close(cluster[0].0, 0.5 * 10.0 + g), "{cluster:?}");
    assert!(close(cluster[1].0, 0.5 * 10.0 + g), "{cluster:?}");
    let own = replies(Aggregation::Gradient, MomentumBuffer::Own, 2);
    // Its own buffer: zero at first, then what it sent.
    assert!(close(own[0].0, g), "{own:?}");
    assert!(close(own[1].0, 0.5 * g + g), "{own:?}");
}

#[test]
fn option_two_carries_the_clients_own_buffer_between_rounds() {
    let cluster = replies(Aggregation::Model, MomentumBuffer::Cluster, 2);
    let own = replies(Aggregation::Model, MomentumBuffer::Own, 2);
    // The same message each round: from the cluster's buffer both rounds agree.
    assert_eq!(cluster[0], cluster[1]);
    // From zero, then from the buffer it ended with: every round differs, and
    // neither is the cluster-buffer start.
    assert_ne!(own[0], own[1]);
    assert_ne!(own[0], cluster[0]);
    // Its second round starts from its first round's buffer, not from zero.
    assert!(own[0].1.is_finite() && own[1].1.is_finite());
}

#[test]
fn the_buffer_key_parses_and_the_default_is_not_written() {
    let text = "clusters = 2\nlr = 0.1\n";
    let default: Config = toml::from_str(text).unwrap();
    assert_eq!(default.buffer, MomentumBuffer::Cluster);
    assert!(!toml::to_string(&default).unwrap().contains("buffer"));
    let own: Config = toml::from_str(&format!("{text}buffer = \"own\"\n")).unwrap();
    assert_eq!(own.buffer, MomentumBuffer::Own);
    assert!(toml::from_str::<Config>(&format!("{text}buffer = \"mine\"\n")).is_err());
}

/// Option II's payload and momentum after `steps` local steps of `optimizer`
/// in round `round`, from the first cluster of `down()` with step size `lr`.
fn trained(optimizer: Optimizer, round: usize, lr: f32) -> (Vec<f32>, Vec<f32>) {
    let (x, y) = ([1.0f32, 2.0, 3.0, -1.0], [2.0f32, 4.0, 6.0, -2.5]);
    let model = LinearRegression::new(1).unwrap();
    let mut ws = Workspace::default();
    let mut c = config(Aggregation::Model, MomentumBuffer::Cluster).into_inner();
    (c.optimizer, c.local_steps) = (optimizer, 4);
    let mut client = CflMgd::client(&Checked::new(c).unwrap());
    let mut env = ClientEnv {
        id: 0,
        round,
        data: Batch::new(&x, Targets::Real(&y), 1).unwrap(),
        model: &model,
        rng: stream(1, Purpose::Client, round as u64, 0),
        ws: &mut ws,
    };
    let ctx = RoundCtx {
        round,
        rounds: 10,
        num_clients: 1,
    };
    let msg = Down {
        lrs: Arc::new(vec![lr]),
        ..down()
    };
    let up = client.handle(&ctx, &msg, &mut env).unwrap();
    (up.payload, up.velocity)
}

fn sgd(batch_size: usize, lr_decay: f32) -> Optimizer {
    Optimizer::Sgd {
        batch_size,
        keep_state: true,
        momentum: 0.0,
        weight_decay: 0.0,
        lr_decay,
        schedule: None,
        decay_layers: None,
    }
}

#[test]
fn minibatch_momentum_steps_from_the_cluster_buffer_and_decay_the_step_size() {
    let gd = trained(Optimizer::default(), 0, 0.01);
    // One minibatch of every point is the full batch, up to summation order.
    let whole = trained(sgd(4, 1.0), 0, 0.01);
    let close = |a: &[f32], b: &[f32]| a.iter().zip(b).all(|(a, b)| (a - b).abs() < 1e-4);
    assert!(
        close(&whole.0, &gd.0) && close(&whole.1, &gd.1),
        "{whole:?} {gd:?}"
    );
    // Minibatches of one point: other steps, the same on every run.
    let single = trained(sgd(1, 1.0), 0, 0.01);
    assert!(!close(&single.0, &gd.0), "{single:?} {gd:?}");
    assert_eq!(trained(sgd(1, 1.0), 0, 0.01), single);
    // Round 2 with lr_decay 0.5 steps like round 0 with a quarter of the step.
    let decayed = Optimizer::Gd { lr_decay: 0.5 };
    assert_eq!(
        trained(decayed, 2, 0.01),
        trained(Optimizer::default(), 2, 0.01 * 0.25)
    );
    assert_eq!(
        trained(sgd(1, 0.5), 2, 0.01),
        trained(sgd(1, 1.0), 2, 0.01 * 0.25)
    );
    assert_ne!(trained(decayed, 2, 0.01), gd);
}

#[test]
fn the_optimizer_key_takes_gd_or_sgd_without_its_own_momentum() {
    let text = "clusters = 2\nlr = 0.1\n";
    let default: Config = toml::from_str(text).unwrap();
    assert!(!toml::to_string(&default).unwrap().contains("optimizer"));
    let with = |optimizer: &str| -> Result<(), String> {
        let c: Config = toml::from_str(&format!("{text}optimizer = {optimizer}\n")).unwrap();
        Checked::new(c).map(|_| ()).map_err(|e| e.field)
    };
    assert_eq!(
        with("{ kind = \"sgd\", batch_size = 50, lr_decay = 0.99 }"),
        Ok(())
    );
    assert_eq!(with("{ kind = \"gd\", lr_decay = 0.99 }"), Ok(()));
    let own_momentum = "{ kind = \"sgd\", batch_size = 50, momentum = 0.9 }";
    assert_eq!(with(own_momentum), Err("optimizer.momentum".into()));
    assert_eq!(
        with("{ kind = \"adam\", batch_size = 50 }"),
        Err("optimizer".into())
    );
}
