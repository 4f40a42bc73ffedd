//! `fedcluster bench ifca-synthetic[-restarts]`: IFCA gradient-averaging rounds
//! on the IFCA paper's synthetic mixture, linear regression (d = 1000).

use anyhow::Result;

use fedcluster_algorithms::{Aggregation, Algorithm, Checked, InitScheme, ifca};
use fedcluster_core::Model;
use fedcluster_data::synthetic::{IfcaSyntheticSpec, ifca_synthetic};
use fedcluster_models::LinearRegression;
use fedcluster_sim::InProcess;

use super::{BenchOptions, BenchReport, Benchmark, ifca_config, resolve_threads, timed_rounds};

/// `m` clients of 100 points, `k` clusters, `restarts` replicas side by side.
pub(super) fn ifca_synthetic_round(
    benchmark: Benchmark,
    options: BenchOptions,
    m: usize,
    k: usize,
    restarts: usize,
) -> Result<BenchReport> {
    let (n, d) = (100, 1000);
    let spec = IfcaSyntheticSpec {
        clients: m,
        points_per_client: n,
        test_points_per_client: 1,
        dim: d,
        clusters: k,
        noise_std: 0.1,
        separation: 1.0,
        truth_scale: Default::default(),
    };
    let data = ifca_synthetic(&spec, 1)?;
    let model = LinearRegression::new(d)?;
    let config = Checked::new(ifca::Config {
        restarts,
        init: InitScheme::Bernoulli { norm: None },
        ..ifca_config(k, Aggregation::Gradient, 0.1, 1)
    })?;
    let threads = resolve_threads(options.threads);
    let client = ifca::Ifca::client(&config);
    let mut server = ifca::IfcaServer::new(config, &model, m, 1);
    let batches: Vec<_> = data.train.iter().map(|c| c.batch(d)).collect();
    let mut transport = InProcess::new(vec![client; m], &batches, &model, 1, threads)?;
    let times = timed_rounds(&mut server, &mut transport, 2, options.rounds)?;
    // Per client and restart: k forward passes for the assignment, one backward
    // pass (as many flops as a forward) for the gradient.
    let fwd = model.forward_flops_per_sample() as f64 * n as f64;
    let flops_per_round = (m * restarts) as f64 * (k as f64 * fwd + fwd);
    Ok(BenchReport::of_rounds(
        benchmark,
        threads,
        &times,
        flops_per_round,
    ))
}
