//! `fedcluster bench model-steps`: one local training step (forward, backward
//! and an SGD update with momentum 0.9, lr 1e-3, on a minibatch) of every case
//! of [`super::models`], as achieved GFLOP/s against one core's peak. A step
//! is timed inside a call of [`STEPS`] steps, so the per-call upload and
//! download of the parameters is amortised as in a client round.
//!
//! Two measurements per case: one client on one thread, and the way a round
//! uses more threads, several clients at once (one per thread of a rayon pool,
//! each with its own parameters, optimizer state and workspace, sharing the
//! model as the simulator does), reported as steps per second of all clients
//! together. `scripts/bench_torch_models.py` prints the same table for PyTorch.

use std::time::Instant;

use anyhow::Result;
use rand::Rng as _;
use rayon::prelude::*;

use fedcluster_core::train::{MinibatchOptimizer, MinibatchSpec, OptimizerState, minibatch};
use fedcluster_core::{Batch, Purpose, Targets, Workspace, stream};

use super::models::{Case, cases};
use super::{BenchOptions, BenchReport, gemm_peak, median, resolve_threads};
use crate::table::render;

/// Points of the synthetic client each step samples its minibatch from.
const CLIENT_POINTS: usize = 500;
/// Steps per timed call.
const STEPS: usize = 5;

/// One case's measurements.
struct Measured {
    /// One client on one thread: seconds per step.
    one: BenchReport,
    /// `(clients, steps per second of all of them)` with one client per
    /// thread, when more than one thread is asked for.
    parallel: Option<(usize, f64)>,
}

/// The case's synthetic client: features in `[-1, 1)` or token ids, classes.
fn client_data(case: &Case) -> (Vec<f32>, Vec<u32>) {
    let mut rng = stream(1, Purpose::ClientData, 0, 0);
    let d = case.model.input_dim();
    let x = (0..CLIENT_POINTS * d)
        .map(|_| match case.vocab {
            Some(v) => rng.random_range(0..v) as f32,
            None => rng.random_range(-1.0..1.0),
        })
        .collect();
    let y = (0..CLIENT_POINTS)
        .map(|_| rng.random_range(0..case.classes as u32))
        .collect();
    (x, y)
}

/// One client of `case`: parameters, optimizer state and workspace.
struct Client {
    params: Vec<f32>,
    state: OptimizerState,
    ws: Workspace,
}

impl Client {
    fn new(case: &Case) -> Self {
        let mut params = vec![0.0; case.model.num_params()];
        case.model
            .init(&mut stream(1, Purpose::Init, 0, 0), &mut params);
        Self {
            params,
            state: OptimizerState::default(),
            ws: Workspace::default(),
        }
    }

    /// [`STEPS`] SGD steps on `data`, drawing minibatches from stream
    /// `(call, client)`; the last loss.
    fn steps(&mut self, case: &Case, data: Batch<'_>, call: u64, client: u64) -> f64 {
        let spec = MinibatchSpec {
            optimizer: MinibatchOptimizer::Sgd {
                momentum: 0.9,
                weight_decay: 0.0,
            },
            lr: 1e-3,
            batch_size: case.batch,
            pull: None,
            schedule: None,
            decay: None,
        };
        let mut rng = stream(1, Purpose::Client, call, client);
        minibatch::steps(
            case.model.as_ref(),
            &mut self.params,
            data,
            &spec,
            STEPS,
            &mut self.state,
            &mut rng,
            &mut self.ws,
        )
    }
}

/// Times `rounds` calls (after one warm-up call) of `clients` clients of
/// `case` at once, one per thread; seconds of each call.
fn timed_calls(case: &Case, data: Batch<'_>, clients: usize, rounds: usize) -> Result<Vec<f64>> {
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(clients)
        .build()?;
    let mut all: Vec<Client> = (0..clients).map(|_| Client::new(case)).collect();
    let mut times = Vec::new();
    for call in 0..=rounds as u64 {
        let start = Instant::now();
        let finite = pool.install(|| {
            all.par_iter_mut()
                .enumerate()
                .map(|(i, c)| c.steps(case, data, call, i as u64).is_finite())
                .collect::<Vec<bool>>()
        });
        anyhow::ensure!(
            finite.iter().all(|&f| f),
            "{}: training diverged",
            case.label
        );
        if call > 0 {
            times.push(start.elapsed().as_secs_f64());
        }
    }
    Ok(times)
}

fn measure(case: &Case, options: &BenchOptions) -> Result<Measured> {
    let (x, y) = client_data(case);
    let data = Batch::new(&x, Targets::Class(&y), case.model.input_dim())?;
    let per_step: Vec<f64> = timed_calls(case, data, 1, options.rounds)?
        .iter()
        .map(|t| t / STEPS as f64)
        .collect();
    // Forward, weight gradients and input gradients, less the input layer's.
    let per_sample = 3 * case.model.forward_flops_per_sample() - case.input_layer_flops;
    let flops = per_sample as f64 * case.batch as f64;
    let mut one = BenchReport::of_steps(&case.label, &per_step, flops);
    one.split = vec![
        ("parameters".into(), case.model.num_params() as f64),
        ("batch".into(), case.batch as f64),
    ];
    let threads = resolve_threads(options.threads);
    let parallel = if threads > 1 {
        let calls = timed_calls(case, data, threads, options.rounds)?;
        Some((threads, (threads * STEPS) as f64 / median(&calls)))
    } else {
        None
    };
    Ok(Measured { one, parallel })
}

/// Runs the model-steps benchmark and returns its table (with a header line
/// and the peak it is measured against).
pub fn model_steps_table(options: &BenchOptions) -> Result<String> {
    let measured = cases(options.only.as_deref())?
        .iter()
        .map(|case| measure(case, options))
        .collect::<Result<Vec<Measured>>>()?;
    let peak = gemm_peak();
    let threads = resolve_threads(options.threads);
    let rows: Vec<Vec<String>> = measured
        .iter()
        .map(|m| {
            let r = &m.one;
            let split = |i: usize| format!("{:.0}", r.split.get(i).map_or(0.0, |s| s.1));
            let mut row = vec![
                r.name.clone(),
                split(0),
                split(1),
                format!("{:.2}", 1e3 * r.median_round),
                format!("{:.2}", 1e3 * r.best_round),
                format!("{:.2}", r.flops_per_round / 1e9),
                format!("{:.1}", r.flops_per_round / r.median_round / 1e9),
                format!(
                    "{:.0}%",
                    100.0 * r.flops_per_round / r.median_round / 1e9 / peak
                ),
                format!("{:.2}", 1.0 / r.median_round),
            ];
            if let Some((_, rate)) = m.parallel {
                row.push(format!("{rate:.2}"));
                row.push(format!("{:.2}", rate * r.median_round));
            }
            row
        })
        .collect();
    let mut header = vec![
        "model, backend",
        "parameters",
        "batch",
        "ms / step",
        "best",
        "GFLOP / step",
        "GFLOP/s",
        "of peak",
        "steps/s",
    ];
    let parallel = format!("steps/s, {threads} clients");
    if threads > 1 {
        header.push(&parallel);
        header.push("speed-up");
    }
    Ok(format!(
        "one local SGD step (forward, backward, update; momentum 0.9, lr 1e-3), median of {} timed calls of {STEPS} steps after one warm-up; 1 thread{}\n{}peak: {peak:.0} GFLOP/s, this machine's single-core f32 GEMM (512^3, in cache), measured now\n",
        options.rounds,
        if threads > 1 {
            format!(", then {threads} clients at once on {threads} threads")
        } else {
            String::new()
        },
        render(&header, &rows),
    ))
}
