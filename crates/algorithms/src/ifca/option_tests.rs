//! IFCA's FEMNIST protocol options: FedAvg pretraining and a frozen trunk.

use fedcluster_core::{Batch, Model, Purpose, RoundCtx, ServerHalf, Targets, stream};
use fedcluster_models::Mlp;
use fedcluster_sim::{InProcess, run};
use rand::Rng as _;

use super::{Config, Ifca, IfcaServer};
use crate::common::aggregate::Aggregation;
use crate::common::checked::Checked;
use crate::common::init::InitScheme;
use crate::table::{Algorithm, Setup};

fn config(aggregation: Aggregation, pretrain_rounds: usize, freeze_trunk: bool) -> Checked<Config> {
    Checked::new(Config {
        clusters: 2,
        aggregation,
        lr: 0.2.into(),
        local_steps: 2,
        participation: 1.0,
        restarts: 1,
        init: InitScheme::Model,
        stable_rounds: 0,
        min_share: 0.0,
        weight_sharing: false,
        momentum: 0.0,
        optimizer: Default::default(),
        pretrain_rounds,
        freeze_trunk,
        weighting: Default::default(),
        clients: Default::default(),
        clients_per_round: None,
        round_schedule: None,
    })
    .unwrap()
}

/// Six clients of eight 3-feature points, labels by the sign of one feature
/// (its sign flipped for half the clients).
fn data() -> (Vec<f32>, Vec<u32>) {
    let mut rng = stream(7, Purpose::ClientData, 0, 0);
    let x: Vec<f32> = (0..6 * 8 * 3).map(|_| rng.random::<f32>() - 0.5).collect();
    let y = (0..6 * 8)
        .map(|i| u32::from((x[i * 3] > 0.0) != (i / 8 < 3)))
        .collect();
    (x, y)
}

/// `rounds` rounds of IFCA on `threads` threads: the cluster models.
fn models(config: &Checked<Config>, rounds: usize, threads: usize) -> Vec<Vec<f32>> {
    let (x, y) = data();
    let batches: Vec<Batch<'_>> = (0..6)
        .map(|i| {
            Batch::new(
                &x[i * 24..(i + 1) * 24],
                Targets::Class(&y[i * 8..(i + 1) * 8]),
                3,
            )
            .unwrap()
        })
        .collect();
    let model = Mlp::new(3, 4, 2).unwrap();
    let setup = Setup::new(&model, 6, 5);
    let mut server = Ifca::server(config.clone(), &setup).unwrap();
    let mut transport =
        InProcess::new(vec![Ifca::client(config); 6], &batches, &model, 5, threads).unwrap();
    run(&mut server, &mut transport, rounds, 5, |_| Ok(())).unwrap();
    server.snapshot().replicas[0]
        .models
        .iter()
        .map(|m| m.to_vec())
        .collect()
}

#[test]
fn pretraining_hands_every_cluster_the_trunk_and_freezing_keeps_it() {
    let model = Mlp::new(3, 4, 2).unwrap();
    let h = model.head_start();
    let frozen = config(Aggregation::Model, 3, true);
    let initial = models(&frozen, 0, 1);
    let pretrained = models(&frozen, 3, 1);
    // Every cluster: the same, pretrained trunk, and its own initial head.
    assert_ne!(pretrained[0][..h], initial[0][..h]);
    for (now, start) in pretrained.iter().zip(&initial) {
        assert_eq!(now[..h], pretrained[0][..h]);
        assert_eq!(now[h..], start[h..]);
    }
    // Frozen: later rounds move the heads only.
    let later = models(&frozen, 8, 1);
    for (now, then) in later.iter().zip(&pretrained) {
        assert_eq!(now[..h], then[..h], "the trunk is frozen");
    }
    assert!(later.iter().zip(&pretrained).any(|(a, b)| a[h..] != b[h..]));
    assert_eq!(models(&frozen, 8, 2), later, "whatever the threads");
    // Unfrozen, the trunk trains on; option I freezes it too.
    let free = models(&config(Aggregation::Model, 3, false), 8, 1);
    assert_ne!(free[0][..h], pretrained[0][..h]);
    let gradient = config(Aggregation::Gradient, 3, true);
    let (g3, g8) = (models(&gradient, 3, 1), models(&gradient, 8, 1));
    assert_eq!(g3[1][..h], g8[1][..h]);
    assert_ne!(g3[1][h..], g8[1][h..]);
}

#[test]
fn pretraining_sends_cluster_zero_alone_without_an_assignment() {
    let model = Mlp::new(3, 4, 2).unwrap();
    let cfg = config(Aggregation::Model, 2, false);
    let mut server = IfcaServer::new(cfg, &model, 6, 5);
    let ctx = |round| RoundCtx {
        round,
        rounds: 5,
        num_clients: 6,
    };
    let mut rng = stream(5, Purpose::Server, 0, 0);
    let plan = server.plan(&ctx(0), &mut rng).unwrap();
    assert!(plan.iter().all(|(_, d)| d.own.as_deref() == Some(&[0][..])));
    let plan = server.plan(&ctx(2), &mut rng).unwrap();
    assert!(
        plan.iter().all(|(_, d)| d.own.is_none()),
        "clustering from round 2"
    );
}

#[test]
fn a_single_layer_model_has_no_trunk_to_pretrain_or_freeze() {
    let model = fedcluster_models::LinearRegression::new(2).unwrap();
    let setup = Setup::new(&model, 4, 1);
    for (cfg, field) in [
        (config(Aggregation::Model, 2, false), "pretrain_rounds"),
        (config(Aggregation::Model, 0, true), "freeze_trunk"),
    ] {
        let err = Ifca::server(cfg, &setup).expect_err("rejected");
        assert_eq!(err.field, field);
    }
    let mut c = config(Aggregation::Model, 0, true).into_inner();
    c.momentum = 0.5;
    assert_eq!(Checked::new(c).unwrap_err().field, "freeze_trunk");
}
