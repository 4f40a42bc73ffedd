//! `fedcluster bench small-clients`: the cross-device round of Su, Xu, Yang's
//! MNIST setting (Section V-D) with k = 4 rotations: 25,000 clients of 2
//! images (14x14) plus 4 anchors, logistic regression 196 -> 10, FedAvg model
//! averaging with s = 5 full-batch steps at lr 0.1, 100 clients per round.
//!
//! A round's arithmetic is about 12 MFLOP, so its time is mostly what a
//! client costs besides arithmetic (messages, streams, scheduling, replies):
//! the report gives the median round, the arithmetic's share of it, and the
//! seconds per client.

use anyhow::Result;

use fedcluster_algorithms::{Aggregation, Algorithm, Checked, InitScheme, fedavg, global};
use fedcluster_core::Model;
use fedcluster_data::{MnistAnchoredSpec, Transform, load_mnist, mnist_anchored};
use fedcluster_models::LogisticRegression;
use fedcluster_sim::InProcess;

use fedcluster_run::experiment::algorithm_field;

use super::{BenchOptions, BenchReport, Benchmark, resolve_threads, timed_rounds};

/// Clients per round.
const PARTICIPANTS: usize = 100;

/// The small-client round (see the module documentation).
pub(super) fn small_clients_round(
    benchmark: Benchmark,
    options: &BenchOptions,
) -> Result<BenchReport> {
    let dir = &super::mnist_dir(options)?;
    let spec = MnistAnchoredSpec {
        transforms: vec![
            Transform::Identity,
            Transform::Rotate90,
            Transform::Rotate180,
            Transform::Rotate270,
        ],
        anchor_points: 20,
        clients: 25_000,
        points_per_client: 2,
        downsample: true,
        data_dir: Some(dir.clone()),
    };
    let data = mnist_anchored(&load_mnist(dir)?, &spec, 1)?;
    let m = data.train.len();
    let model = LogisticRegression::new(data.dim, 10)?;
    let (lr, steps) = (0.1, 5);
    let config = Checked::new(fedavg::Config {
        aggregation: Aggregation::Model,
        lr,
        local_steps: steps,
        participation: PARTICIPANTS as f64 / m as f64,
        init: InitScheme::Model,
        optimizer: Default::default(),
        weighting: Default::default(),
        clients: Default::default(),
        round_schedule: None,
    })?;
    let threads = resolve_threads(options.threads);
    let setup = fedcluster_algorithms::Setup::new(&model, m, 1);
    let client = global::Global::client(&config);
    let mut server = global::Global::server(config, &setup).map_err(algorithm_field)?;
    // The clients as `fedcluster run` holds them.
    let view = data.view();
    let mut transport = InProcess::with_prototype(client, view.train.as_ref(), &model, 1, threads)?;
    let times = timed_rounds(&mut server, &mut transport, 5, options.rounds)?;
    // Per client and step: forward and backward of 2 images (3 forward passes'
    // worth), plus the loss at the start.
    let per_step = 3.0 * 2.0 * model.forward_flops_per_sample() as f64;
    let flops = PARTICIPANTS as f64 * steps as f64 * per_step;
    let mut report = BenchReport::of_rounds(benchmark, threads, &times, flops);
    let median = report.median_round;
    report.extra = vec![
        (
            "clients per second".into(),
            format!("{:.0}", PARTICIPANTS as f64 / median),
        ),
        (
            "seconds per client (median round / 100)".into(),
            format!("{:.2e}", median / PARTICIPANTS as f64),
        ),
    ];
    Ok(report)
}
