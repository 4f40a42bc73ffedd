//! IFCA's `clients = "sequential"` (the SR-FCA public code's IFCA): the
//! dealt first round, the chains, the assignment of every client, and the
//! options it refuses.

use fedcluster_core::{
    Batch, ClientEnv, ClientHalf, Purpose, RoundCtx, ServerHalf, Targets, Workspace, stream,
};
use fedcluster_models::LinearRegression;
use fedcluster_sim::{InProcess, run};

use super::{Down, Ifca, IfcaServer, Up};
use crate::common::aggregate::{Aggregation, Weighting};
use crate::common::checked::Checked;
use crate::common::init::InitScheme;
use crate::fedavg::Clients;
use crate::ifca::Config;
use crate::table::Algorithm;

fn sequential(clients_per_round: Option<usize>) -> Config {
    Config {
        clusters: 2,
        aggregation: Aggregation::Model,
        lr: 0.1.into(),
        local_steps: 2,
        participation: 1.0,
        restarts: 1,
        init: InitScheme::Zeros,
        stable_rounds: 0,
        min_share: 0.0,
        weight_sharing: false,
        momentum: 0.0,
        optimizer: Default::default(),
        pretrain_rounds: 0,
        freeze_trunk: false,
        weighting: Weighting::Uniform,
        clients: Clients::Sequential,
        clients_per_round,
        round_schedule: None,
    }
}

fn ctx(round: usize) -> RoundCtx {
    RoundCtx {
        round,
        rounds: 20,
        num_clients: 4,
    }
}

/// The model of the cluster a link message names.
fn sent_model(down: &Down) -> (usize, Vec<f32>) {
    let c = down.own.as_ref().expect("a link names its cluster")[0] as usize;
    (c, down.models[c * 2..(c + 1) * 2].to_vec())
}

/// Client `id`'s reply: `chosen`, loss 1, `payload`, `id + 1` samples.
fn reply(chosen: u32, payload: Vec<f32>, id: usize) -> Up {
    Up {
        chosen: vec![chosen],
        losses: vec![Some(1.0)],
        payload,
        velocity: vec![],
        samples: 1 + id,
    }
}

/// One engine round on hand-made replies: each link client adds
/// `(1, 2) * (cluster + 1)` to the model it received; an assignment reply
/// picks `pick`; client `i` holds `i + 1` samples (the plain mean ignores
/// them). The messages sent, by client.
fn round(s: &mut IfcaServer, r: usize, pick: u32) -> Vec<(usize, Down)> {
    let plan = s
        .plan(&ctx(r), &mut stream(7, Purpose::Server, r as u64, 0))
        .unwrap();
    let replies = plan
        .iter()
        .map(|(id, down)| {
            let up = if down.assign_only {
                reply(pick, vec![], *id)
            } else {
                let (c, m) = sent_model(down);
                let step = (c + 1) as f32;
                let trained = vec![m[0] + step, m[1] + 2.0 * step];
                reply(c as u32, trained, *id)
            };
            (*id, up)
        })
        .collect();
    s.absorb(&ctx(r), replies).unwrap();
    plan
}

#[test]
fn each_cluster_chains_its_members_then_every_client_is_reassigned() {
    let model = LinearRegression::new(2).unwrap();
    let mut s = IfcaServer::new(Checked::new(sequential(Some(10))).unwrap(), &model, 4, 1);
    // Round 1: the four clients dealt out two to a cluster, two links.
    let first = round(&mut s, 0, 0);
    assert_eq!(first.len(), 2, "one client of each cluster per link");
    assert!(first.iter().all(|(_, d)| sent_model(d).1 == [0.0, 0.0]));
    assert_eq!(
        s.snapshot().replicas[0].models,
        [&[0.0, 0.0][..], &[0.0, 0.0]],
        "mid-chain"
    );
    let second = round(&mut s, 1, 0);
    let mut starts: Vec<_> = second.iter().map(|(_, d)| sent_model(d)).collect();
    starts.sort_by_key(|(c, _)| *c);
    assert_eq!(
        starts,
        [(0, vec![1.0, 2.0]), (1, vec![2.0, 4.0])],
        "from the last link's model"
    );
    // Checkpoints (1, 2), (2, 4) and (2, 4), (4, 8), averaged.
    let snap = s.snapshot();
    assert_eq!(snap.replicas[0].models, [&[1.5, 3.0][..], &[3.0, 6.0]]);
    let mut dealt = snap.replicas[0].assignment.to_vec();
    dealt.sort_unstable();
    assert_eq!(dealt, [Some(0), Some(0), Some(1), Some(1)]);
    // Round 2: every client is asked for its cluster; all pick cluster 1.
    let ask = round(&mut s, 2, 1);
    assert_eq!(
        ask.iter().map(|(id, _)| *id).collect::<Vec<_>>(),
        [0, 1, 2, 3]
    );
    assert!(ask.iter().all(|(_, d)| d.assign_only && d.own.is_none()));
    assert_eq!(s.snapshot().replicas[0].assignment, [Some(1); 4]);
    // Then cluster 1 chains all four, one link each; cluster 0 stays.
    for r in 3..7 {
        let link = round(&mut s, r, 1);
        assert_eq!(link.len(), 1);
        assert_eq!(
            sent_model(&link[0].1).1,
            [3.0 + 2.0 * (r - 3) as f32, 6.0 + 4.0 * (r - 3) as f32]
        );
    }
    // Checkpoints (5, 10), (7, 14), (9, 18), (11, 22), averaged.
    assert_eq!(
        s.snapshot().replicas[0].models,
        [&[1.5, 3.0][..], &[8.0, 16.0]]
    );
}

#[test]
fn clients_per_round_draws_that_many_members_of_each_cluster() {
    let model = LinearRegression::new(2).unwrap();
    let mut s = IfcaServer::new(Checked::new(sequential(Some(1))).unwrap(), &model, 4, 1);
    assert_eq!(round(&mut s, 0, 0).len(), 2);
    // One member of each cluster: the chains end after one link.
    assert!(round(&mut s, 1, 0).iter().all(|(_, d)| d.assign_only));
}

#[test]
fn an_assignment_message_gets_the_cluster_of_lowest_loss_and_no_model() {
    // y = 2x: the second model (θ = 2) fits exactly.
    let (x, y) = ([1.0f32, 2.0, 3.0], [2.0f32, 4.0, 6.0]);
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
    let config = Checked::new(sequential(None)).unwrap();
    let down = Down {
        models: vec![0.0, 2.0].into(),
        replicas: 1,
        k: 2,
        lrs: vec![0.1].into(),
        shared: 0,
        velocities: None,
        own: None,
        assign_only: true,
    };
    let up = Ifca::client(&config)
        .handle(&ctx(0), &down, &mut env)
        .unwrap();
    assert_eq!(
        (up.chosen, up.losses, up.payload.len()),
        (vec![1], vec![Some(0.0)], 0)
    );
}

/// `rounds` engine rounds of sequential IFCA on four one-point clients.
fn run_with(threads: usize, rounds: usize) -> Vec<f32> {
    let x = [1.0, 0.0, 0.0, 1.0, 1.0, 1.0, 2.0, -1.0];
    let y = [1.0, 2.0, 3.0, 0.0];
    let batches: Vec<Batch<'_>> = (0..4)
        .map(|i| Batch::new(&x[i * 2..i * 2 + 2], Targets::Real(&y[i..i + 1]), 2).unwrap())
        .collect();
    let model = LinearRegression::new(2).unwrap();
    let config = Checked::new(sequential(None)).unwrap();
    let client = Ifca::client(&config);
    let mut server = IfcaServer::new(config, &model, 4, 4);
    let mut transport = InProcess::new(vec![client; 4], &batches, &model, 4, threads).unwrap();
    run(&mut server, &mut transport, rounds, 4, |_| Ok(())).unwrap();
    server.snapshot().replicas[0].models.concat()
}

#[test]
fn a_federation_in_sequence_gives_the_same_bits_on_any_thread_count() {
    // Two paper rounds: two links, the assignment, up to four links.
    let one = run_with(1, 8);
    assert_eq!(run_with(2, 8), one);
    assert_ne!(run_with(1, 2), one, "training moves the models");
    assert!(one.iter().all(|v| v.is_finite()));
}

#[test]
fn sequential_refuses_what_it_does_not_emulate_naming_the_field() {
    let refused = |config: Config| Checked::new(config).unwrap_err().field;
    let base = sequential(None);
    assert_eq!(
        refused(Config {
            aggregation: Aggregation::Gradient,
            ..base.clone()
        }),
        "aggregation"
    );
    assert_eq!(
        refused(Config {
            restarts: 2,
            ..base.clone()
        }),
        "restarts"
    );
    assert_eq!(
        refused(Config {
            stable_rounds: 2,
            ..base.clone()
        }),
        "stable_rounds"
    );
    assert_eq!(
        refused(Config {
            clients_per_round: Some(0),
            ..base.clone()
        }),
        "clients_per_round"
    );
    let parallel = Config {
        clients: Clients::Parallel,
        clients_per_round: Some(3),
        ..base
    };
    assert_eq!(refused(parallel), "clients_per_round");
}
