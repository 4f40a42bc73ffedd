//! FedAvg's SR-FCA-code options: uniform weighting and clients in sequence.

use fedcluster_core::{Batch, Purpose, RoundCtx, ServerHalf, Shards, Targets, stream};
use fedcluster_models::LinearRegression;
use fedcluster_sim::InProcess;

use super::{Clients, Config, FedAvgClient, FedAvgServer};
use crate::common::aggregate::{Aggregation, Weighting};
use crate::common::checked::Checked;
use crate::common::init::InitScheme;
use crate::common::messages::ModelReply;

fn config(weighting: Weighting, clients: Clients, participation: f64) -> Checked<Config> {
    Checked::new(Config {
        aggregation: Aggregation::Model,
        lr: 0.1,
        local_steps: 3,
        participation,
        init: InitScheme::Zeros,
        optimizer: Default::default(),
        weighting,
        clients,
        round_schedule: None,
    })
    .unwrap()
}

fn ctx(round: usize) -> RoundCtx {
    RoundCtx {
        round,
        rounds: 10,
        num_clients: 3,
    }
}

/// One round of hand-made replies from three clients of `samples` points each.
fn average(weighting: Weighting, samples: [usize; 3]) -> Vec<f32> {
    let model = LinearRegression::new(2).unwrap();
    let config = config(weighting, Clients::Parallel, 1.0);
    let mut s = FedAvgServer::new(config, &model, 1, vec![0; 3], 1).unwrap();
    s.plan(&ctx(0), &mut stream(1, Purpose::Server, 0, 0))
        .unwrap();
    let replies = [[1.0, 0.0], [3.0, 3.0], [8.0, 6.0]]
        .into_iter()
        .zip(samples)
        .enumerate()
        .map(|(i, (m, n))| (i, ModelReply::new(m.to_vec(), Some(1.0), n)))
        .collect();
    s.absorb(&ctx(0), replies).unwrap();
    s.snapshot().replicas[0].models[0].to_vec()
}

#[test]
fn uniform_weighting_is_the_plain_mean_and_equals_samples_for_equal_sizes() {
    assert_eq!(average(Weighting::Uniform, [1, 2, 5]), vec![4.0, 3.0]);
    assert_eq!(average(Weighting::Samples, [1, 2, 5]), vec![5.875, 4.5]);
    assert_eq!(
        average(Weighting::Uniform, [4, 4, 4]),
        average(Weighting::Samples, [4, 4, 4])
    );
    let toml = toml::to_string(&config(Weighting::Samples, Clients::Parallel, 1.0).into_inner());
    assert!(
        !toml.unwrap().contains("weighting"),
        "the default is not written"
    );
}

#[test]
fn in_sequence_each_client_starts_from_the_last_ones_model_and_checkpoints_are_averaged() {
    let model = LinearRegression::new(2).unwrap();
    let config = config(Weighting::Uniform, Clients::Sequential, 1.0);
    let mut s = FedAvgServer::new(config, &model, 1, vec![0; 3], 1).unwrap();
    let mut sent = Vec::new();
    for link in 0..3 {
        let plan = s
            .plan(&ctx(link), &mut stream(1, Purpose::Server, link as u64, 0))
            .unwrap();
        assert_eq!(plan.len(), 1, "one client per link");
        let (id, down) = &plan[0];
        sent.push(down.model().to_vec());
        // Each client adds (1, 2) to the model it received.
        let trained: Vec<f32> = down
            .model()
            .iter()
            .zip([1.0, 2.0])
            .map(|(w, d)| w + d)
            .collect();
        s.absorb(
            &ctx(link),
            vec![(*id, ModelReply::new(trained, Some(1.0), 1))],
        )
        .unwrap();
        if link < 2 {
            assert_eq!(s.snapshot().replicas[0].models[0], &[0.0, 0.0], "mid-chain");
        }
    }
    assert_eq!(sent, vec![vec![0.0, 0.0], vec![1.0, 2.0], vec![2.0, 4.0]]);
    // The checkpoints (1, 2), (2, 4), (3, 6) averaged.
    assert_eq!(s.snapshot().replicas[0].models[0], &[2.0, 4.0]);
}

/// `rounds` rounds of FedAvg over `batches` with `clients`; the final model.
fn run(clients: Clients, batches: &dyn Shards, rounds: usize, threads: usize) -> Vec<f32> {
    let model = LinearRegression::new(2).unwrap();
    let config = config(Weighting::Samples, clients, 0.5);
    let client = FedAvgClient::from_config(&config);
    let m = batches.num_clients();
    let mut server = FedAvgServer::new(config, &model, 1, vec![0; m], 4).unwrap();
    let mut transport = InProcess::new(vec![client; m], batches, &model, 4, threads).unwrap();
    fedcluster_sim::run(&mut server, &mut transport, rounds, 4, |_| Ok(())).unwrap();
    server.snapshot().replicas[0].models[0].to_vec()
}

#[test]
fn in_sequence_one_client_is_parallel_fedavg_and_any_thread_count_gives_the_same_bits() {
    let x = [1.0, 0.0, 0.0, 1.0, 1.0, 1.0, 2.0, -1.0];
    let y = [1.0, 2.0, 3.0, 0.0];
    let one = vec![Batch::new(&x, Targets::Real(&y), 2).unwrap()];
    assert_eq!(
        run(Clients::Sequential, &one, 5, 1),
        run(Clients::Parallel, &one, 5, 1)
    );
    let four: Vec<Batch<'_>> = (0..4)
        .map(|i| Batch::new(&x[i * 2..i * 2 + 2], Targets::Real(&y[i..i + 1]), 2).unwrap())
        .collect();
    let sequential = run(Clients::Sequential, &four, 6, 1);
    assert_eq!(run(Clients::Sequential, &four, 6, 2), sequential);
    assert_ne!(run(Clients::Parallel, &four, 3, 1), sequential);
}
