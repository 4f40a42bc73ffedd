//! `fedcluster bench many-clients`: a cross-device federation far larger than
//! what a round touches. 10,000,000 mixed-regression clients (Su, Xu, Yang,
//! Section V: d = 100, k = 3, noise 0.2) of 10 points each, IFCA with model
//! averaging (10 local steps at lr 0.01), 100 clients per round.
//!
//! The clients' samples are generated when a client is sampled (from its own
//! stream, see `fedcluster_data::synthetic::on_demand`) and only the client
//! halves of clients that took part are kept, so memory is the truth (a label
//! per client), the server's assignment and what the rounds touch. The report
//! gives the set-up time (data, server, transport: the time to the first
//! round), the rounds' times and the process's peak resident memory.

use std::time::Instant;

use anyhow::Result;

use fedcluster_algorithms::{Aggregation, Algorithm, Checked, ifca};
use fedcluster_data::{ClientGroup, MixedRegressionSpec, mixed_regression_on_demand};
use fedcluster_models::LinearRegression;
use fedcluster_sim::InProcess;

use super::{BenchOptions, BenchReport, Benchmark, ifca_config, resolve_threads, timed_rounds};

/// Clients in the federation.
const CLIENTS: usize = 10_000_000;
/// Clients per round.
const PARTICIPANTS: usize = 100;

/// The many-client rounds (see the module documentation).
pub(super) fn many_clients_round(
    benchmark: Benchmark,
    options: &BenchOptions,
) -> Result<BenchReport> {
    let start = Instant::now();
    let (d, k, n, steps) = (100, 3, 10, 10);
    let spec = MixedRegressionSpec {
        dim: d,
        clusters: k,
        probs: vec![1.0 / 3.0; 3],
        client_sizes: vec![ClientGroup {
            count: CLIENTS,
            points: n,
        }],
        noise_std: 0.2,
        test_points_per_client: 10,
    };
    let data = mixed_regression_on_demand(&spec, 1)?;
    let view = data.view();
    let model = LinearRegression::new(d)?;
    let config = Checked::new(ifca::Config {
        participation: PARTICIPANTS as f64 / CLIENTS as f64,
        ..ifca_config(k, Aggregation::Model, 0.01, steps)
    })?;
    let threads = resolve_threads(options.threads);
    let client = ifca::Ifca::client(&config);
    let mut server = ifca::IfcaServer::new(config, &model, CLIENTS, 1);
    let mut transport = InProcess::with_prototype(client, view.train.as_ref(), &model, 1, threads)?;
    let setup = start.elapsed().as_secs_f64();
    let times = timed_rounds(&mut server, &mut transport, 0, options.rounds)?;
    // Per client: generating 10 x 100 normal samples aside, the k models'
    // losses, then per step a forward and a backward pass.
    let fwd = 2.0 * (n * d) as f64;
    let flops = PARTICIPANTS as f64 * (k as f64 * fwd + steps as f64 * 2.0 * fwd);
    let mut report = BenchReport::of_rounds(benchmark, threads, &times, flops);
    report.extra = vec![
        ("clients".into(), format!("{CLIENTS}")),
        (
            "set-up (data, server, transport: time to the first round)".into(),
            format!("{setup:.3} s"),
        ),
        (
            "first round ends after".into(),
            format!("{:.3} s", setup + times.first().copied().unwrap_or(0.0)),
        ),
        (
            "clients per second (median round)".into(),
            format!("{:.0}", PARTICIPANTS as f64 / report.median_round),
        ),
        (
            "peak resident memory".into(),
            super::peak_rss_mib().map_or("unknown (no /proc/self/status)".into(), |m| {
                format!("{m:.0} MiB")
            }),
        ),
    ];
    Ok(report)
}
