//! The char-LSTM's evaluation pass (the loss and the number correct over a
//! client's windows, what IFCA's assignments, SR-FCA's pairwise
//! cross-cluster losses and every test evaluation run) at LEAF's sizes, one
//! thread: `cargo bench -p fedcluster-models --bench lstm_eval`
//! (`LSTM_WINDOWS`, default 4096, and `LSTM_REPS`, default 3, change the
//! windows per pass and the passes). Prints the best pass's milliseconds,
//! windows per second and GFLOP/s against the forward pass's arithmetic.

use std::time::Instant;

use fedcluster_core::{Batch, Model, Purpose, Targets, Workspace, stream};
use fedcluster_models::cnn::conv_timing::env_count as env;
use fedcluster_models::lstm::CharLstm;
use rand::Rng as _;

fn main() {
    let (n, reps) = (env("LSTM_WINDOWS", 4096), env("LSTM_REPS", 3));
    let model = CharLstm::new(CharLstm {
        vocab: 80,
        seq_len: 80,
        embedding: 8,
        hidden: 256,
        layers: 2,
    })
    .expect("LEAF's shape is valid");
    let mut rng = stream(1, Purpose::Init, 0, 0);
    let mut params = vec![0.0; model.num_params()];
    model.init(&mut rng, &mut params);
    let x: Vec<f32> = (0..n * model.seq_len)
        .map(|_| rng.random_range(0..model.vocab) as f32)
        .collect();
    let y: Vec<u32> = (0..n)
        .map(|_| rng.random_range(0..model.vocab as u32))
        .collect();
    let batch = Batch::new(&x, Targets::Class(&y), model.seq_len).expect("shapes match");
    let mut ws = Workspace::default();
    let mut best = f64::INFINITY;
    for _ in 0..reps {
        let start = Instant::now();
        let (loss, correct) = model.loss_and_correct(&params, batch, &mut ws);
        best = best.min(start.elapsed().as_secs_f64());
        assert!(loss.is_finite() && correct.is_some_and(|c| c <= n));
    }
    let flops = model.forward_flops_per_sample() as f64 * n as f64;
    println!(
        "char-LSTM evaluation, {n} windows, one thread: {:.0} ms, {:.0} windows/s, {:.1} GFLOP/s",
        best * 1e3,
        n as f64 / best,
        flops / best / 1e9
    );
}
