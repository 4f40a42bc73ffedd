//! One training step of LEAF's FEMNIST CNN (28x28x1, 5x5 convolutions of 32
//! and 64 channels with padding 2, dense 2,048, 62 classes) stage by stage,
//! one thread: `cargo bench -p fedcluster-models --bench cnn_stages`
//! (`CNN_BATCH`, default 50, and `CNN_REPS`, default 9, change the batch
//! and the runs per stage). Each time is the best of the runs, with the
//! stage's GFLOP/s where it has products and its share of the sum.

use fedcluster_models::Cnn;
use fedcluster_models::cnn::conv_timing::env_count as env;
use fedcluster_models::cnn::step_timing::time_stages;

fn main() {
    let (n, reps) = (env("CNN_BATCH", 50), env("CNN_REPS", 9));
    let femnist = Cnn::new(Cnn {
        padding: 2,
        hidden: 2048,
        ..Cnn::paper(28, 28, 1, 62).expect("the paper's CNN fits 28x28 images")
    })
    .expect("LEAF's FEMNIST CNN is a valid shape");
    let stages = time_stages(&femnist, n, reps);
    let total: f64 = stages.iter().map(|s| s.ms).sum();
    println!("| stage (batch {n}) | ms | GFLOP/s | share |");
    println!("| --- | --- | --- | --- |");
    for s in &stages {
        let rate = if s.flops > 0.0 {
            format!("{:.1}", s.flops / s.ms / 1e6)
        } else {
            "-".into()
        };
        let share = 100.0 * s.ms / total;
        println!("| {} | {:.2} | {rate} | {share:.1}% |", s.stage, s.ms);
    }
    println!("| sum | {total:.2} | | |");
}
