//! `fedcluster bench ifca-rotated-mnist`: IFCA rounds as in the IFCA paper's
//! rotated-MNIST experiment (Section VI-B): model averaging, MLP 784-200-10,
//! k = 4 rotations, (m, n) = (2400, 100), τ = 10 full-batch steps, lr 0.1.
//!
//! Besides whole rounds it times the two parts of a client's work on a sample
//! of clients: the assignment (the k models' losses on the client's data) and
//! the local training from the chosen model, and counts the operations of each
//! as carried out (the training in the kernel space of the client's data).

use std::time::Instant;

use anyhow::Result;

use fedcluster_algorithms::{Aggregation, Algorithm, Checked, ifca};
use fedcluster_core::{Model, Purpose, Workspace, stream};
use fedcluster_data::{ImageClustersSpec, Transform, image_clusters, load_mnist};
use fedcluster_models::Mlp;
use fedcluster_sim::InProcess;

use super::{BenchOptions, BenchReport, Benchmark, ifca_config, resolve_threads, timed_rounds};

/// One IFCA round at the paper's size, with its assignment/training split.
pub(super) fn ifca_rotated_mnist_round(
    benchmark: Benchmark,
    options: &BenchOptions,
) -> Result<BenchReport> {
    let dir = &super::mnist_dir(options)?;
    let (m, n, k, hidden, tau, lr) = (2400, 100, 4, 200, 10, 0.1f32);
    let spec = ImageClustersSpec {
        transforms: vec![
            Transform::Identity,
            Transform::Rotate90,
            Transform::Rotate180,
            Transform::Rotate270,
        ],
        clients: m,
        points_per_client: n,
        test_clients: 0,
        downsample: false,
        disjoint: false,
        permute_labels: false,
        skew: None,
        data_dir: Some(dir.clone()),
    };
    let data = image_clusters(&load_mnist(dir)?, &spec, 1, "mnist")?;
    let model = Mlp::new(data.dim, hidden, 10)?;
    let config = Checked::new(ifca_config(k, Aggregation::Model, lr, tau))?;
    let threads = resolve_threads(options.threads);
    let batches: Vec<_> = data.train.iter().map(|c| c.batch(data.dim)).collect();

    // The split, on a sample of clients, single-threaded.
    let p = model.num_params();
    let mut models = vec![0.0; k * p];
    for (j, mm) in models.chunks_exact_mut(p).enumerate() {
        model.init(&mut stream(1, Purpose::Init, j as u64, 0), mm);
    }
    let mut ws = Workspace::default();
    let (mut assign_s, mut train_s) = (0.0, 0.0);
    let sample = 48;
    for batch in batches.iter().step_by(m / sample) {
        let mut losses = vec![0.0; k];
        let t = Instant::now();
        model.losses(&models, *batch, &mut losses, &mut ws);
        assign_s += t.elapsed().as_secs_f64();
        let mut params = models[..p].to_vec();
        let t = Instant::now();
        model.train(&mut params, *batch, lr, tau, &mut ws);
        train_s += t.elapsed().as_secs_f64();
    }
    let per_client = |s: f64| s / sample as f64 * m as f64 / threads as f64;

    let client = ifca::Ifca::client(&config);
    let mut server = ifca::IfcaServer::new(config, &model, m, 1);
    let mut transport = InProcess::new(vec![client; m], &batches, &model, 1, threads)?;
    let times = timed_rounds(&mut server, &mut transport, 1, options.rounds)?;
    let (nf, d, h, c, tf) = (n as f64, data.dim as f64, hidden as f64, 10.0, tau as f64);
    let forward = 2.0 * nf * (d * h + h * c);
    let assignment = k as f64 * forward;
    // Gram matrix, τ steps (head forward and backward, K·D), the final W1.
    let training =
        2.0 * nf * nf * d + tf * (6.0 * nf * h * c + 2.0 * nf * nf * h) + 2.0 * nf * h * d;
    let mut report = BenchReport::of_rounds(
        benchmark,
        threads,
        &times,
        m as f64 * (assignment + training),
    );
    report.split = vec![
        (
            "assignment (k models on every client)".into(),
            per_client(assign_s),
        ),
        ("local training (kernel space)".into(), per_client(train_s)),
    ];
    Ok(report)
}
