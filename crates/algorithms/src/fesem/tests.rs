//! FeSEM: the E- and M-steps on hand-made replies, the clusters of a
//! well-separated linear mixture through the engine, and the same bits on one
//! or two threads.

use fedcluster_core::{Batch, Purpose, RoundCtx, ServerHalf, stream};
use fedcluster_data::synthetic::{IfcaSyntheticSpec, TruthScale, ifca_synthetic};
use fedcluster_metrics::clustering::{adjusted_rand_index, param_error};
use fedcluster_models::LinearRegression;
use fedcluster_sim::{InProcess, run};

use super::{Config, FeSem, FeSemServer, Seeding};
use crate::common::checked::Checked;
use crate::common::init::InitScheme;
use crate::common::messages::ModelReply;
use crate::table::{Algorithm, Setup};

fn config(clusters: usize, seeding: Seeding, participation: f64) -> Checked<Config> {
    Checked::new(Config {
        clusters,
        lr: 0.1,
        local_steps: 10,
        participation,
        init: InitScheme::Gaussian { std: 1.0 },
        seeding,
        optimizer: Default::default(),
    })
    .unwrap()
}

fn ctx(round: usize) -> RoundCtx {
    RoundCtx {
        round,
        rounds: 5,
        num_clients: 4,
    }
}

fn reply(v: [f32; 2], samples: usize) -> ModelReply {
    ModelReply::new(v.to_vec(), Some(1.0), samples)
}

#[test]
fn each_round_is_an_e_step_then_an_unweighted_m_step() {
    let model = LinearRegression::new(2).unwrap();
    let mut s = FeSemServer::new(config(2, Seeding::KmeansPlusPlus, 1.0), &model, 4, 9);
    let mut rng = stream(9, Purpose::Server, 0, 0);
    let plan = s.plan(&ctx(0), &mut rng).unwrap();
    assert_eq!(plan.len(), 4, "every client warms up");
    assert!(plan.iter().all(|(_, m)| m.cluster == 0 && m.p == 2));
    let warm = [[0.0, 0.0], [10.0, 10.0], [0.0, 2.0], [10.0, 12.0]];
    let replies = (0..4).map(|i| (i, reply(warm[i], 1))).collect();
    s.absorb(&ctx(0), replies).unwrap();
    let a: Vec<usize> = s.snapshot().replicas[0]
        .assignment
        .iter()
        .map(|a| a.unwrap())
        .collect();
    assert!(a[0] == a[2] && a[1] == a[3] && a[0] != a[1], "{a:?}");
    let (c0, c1) = (a[0], a[1]);
    assert_eq!(&s.centres()[c0 * 2..c0 * 2 + 2], &[0.0, 1.0]);
    assert_eq!(&s.centres()[c1 * 2..c1 * 2 + 2], &[10.0, 11.0]);
    // Round 1: client 0 moved next to the other centre, and sample counts
    // do not weigh in the M-step.
    let plan = s.plan(&ctx(1), &mut rng).unwrap();
    let sent: Vec<usize> = plan.iter().map(|(_, m)| m.cluster as usize).collect();
    assert_eq!(sent, a, "each client trains its centre");
    let round1 = [[9.0, 9.0], [10.0, 10.0], [0.0, 2.0], [10.0, 12.0]];
    let replies = (0..4).map(|i| (i, reply(round1[i], 1 + 10 * i))).collect();
    s.absorb(&ctx(1), replies).unwrap();
    let snap = s.snapshot();
    assert_eq!(snap.replicas[0].assignment[0], Some(c1));
    assert_eq!(snap.replicas[0].models[c0], &[0.0, 2.0]);
    let c = snap.replicas[0].models[c1];
    assert!(
        (c[0] - 29.0 / 3.0).abs() < 1e-5 && (c[1] - 31.0 / 3.0).abs() < 1e-5,
        "{c:?}"
    );
}

#[test]
fn random_centres_are_drawn_before_the_warm_up_and_a_bad_reply_is_refused() {
    let model = LinearRegression::new(2).unwrap();
    let mut s = FeSemServer::new(config(3, Seeding::Random, 1.0), &model, 4, 9);
    assert_eq!(s.centres().len(), 6);
    assert_eq!(s.snapshot().replicas[0].models.len(), 3);
    s.plan(&ctx(0), &mut stream(9, Purpose::Server, 0, 0))
        .unwrap();
    let err = s
        .receive(&ctx(0), 1, reply([1.0, 2.0], 1))
        .and_then(|_| s.receive(&ctx(0), 2, ModelReply::new(vec![1.0], Some(1.0), 1)));
    assert!(err.unwrap_err().to_string().contains("client 2"));
    let setup = Setup::new(&model, 2, 1);
    let too_many = FeSem::server(config(3, Seeding::Random, 1.0), &setup).unwrap_err();
    assert_eq!(too_many.field, "clusters");
}

#[test]
fn a_client_absent_from_the_warm_up_later_trains_from_the_start_model() {
    let model = LinearRegression::new(2).unwrap();
    let mut s = FeSemServer::new(config(2, Seeding::Random, 1.0), &model, 3, 9);
    let mut rng = stream(9, Purpose::Server, 0, 0);
    let warm_up = s.plan(&ctx(0), &mut rng).unwrap();
    let start = warm_up[0].1.model().to_vec();
    // Client 2 does not answer the warm-up (a networked round with --min-clients).
    let replies = vec![(0, reply([1.0, 1.0], 5)), (1, reply([-1.0, 2.0], 5))];
    s.absorb(&ctx(0), replies).unwrap();
    assert_eq!(s.snapshot().replicas[0].assignment[2], None);
    let plan = s.plan(&ctx(1), &mut rng).unwrap();
    assert_eq!(plan[2].1.model(), start.as_slice());
    assert_eq!(plan[2].1.models.len(), 2, "only the start model");
    assert_eq!(plan[0].1.models.len(), 4, "the centres");
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

/// FeSEM over the engine: the final centres and assignment.
fn fesem_run(
    data: &fedcluster_data::FederatedData,
    config: Checked<Config>,
    rounds: usize,
    threads: usize,
) -> (Vec<Vec<f32>>, Vec<usize>) {
    let model = LinearRegression::new(data.dim).unwrap();
    let batches: Vec<Batch<'_>> = data.train.iter().map(|c| c.batch(data.dim)).collect();
    let setup = Setup::new(&model, batches.len(), 5);
    let client = FeSem::client(&config);
    let mut server = FeSem::server(config, &setup).unwrap();
    let mut transport =
        InProcess::new(vec![client; batches.len()], &batches, &model, 5, threads).unwrap();
    run(&mut server, &mut transport, rounds, 5, |_| Ok(())).unwrap();
    let snap = server.snapshot();
    let models = snap.replicas[0].models.iter().map(|m| m.to_vec()).collect();
    let labels = snap.replicas[0]
        .assignment
        .iter()
        .map(|a| a.unwrap())
        .collect();
    (models, labels)
}

#[test]
fn recovers_the_clusters_and_centres_of_a_well_separated_mixture() {
    let data = mixture(4);
    let (centres, labels) = fesem_run(&data, config(3, Seeding::KmeansPlusPlus, 1.0), 40, 0);
    assert_eq!(adjusted_rand_index(&labels, &data.truth.train_labels), 1.0);
    let refs: Vec<&[f32]> = centres.iter().map(|c| c.as_slice()).collect();
    let err = param_error(&refs, data.truth.params.as_ref().unwrap()).unwrap();
    assert!(err < 0.05, "parameter error {err}");
}

#[test]
fn one_and_two_threads_give_the_same_bits() {
    let data = mixture(6);
    let bits = |threads| {
        let (centres, labels) = fesem_run(&data, config(3, Seeding::Random, 0.6), 12, threads);
        let bits: Vec<u32> = centres.concat().iter().map(|v| v.to_bits()).collect();
        (bits, labels)
    };
    assert_eq!(bits(1), bits(2));
}
