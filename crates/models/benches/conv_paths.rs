//! ResNet9's 3x3 convolutions by `im2col` and by Winograd F(2x2, 3x3), side
//! by side, one thread: `cargo bench -p fedcluster-models --bench
//! conv_paths` (`CONV_BATCH`, default 50, and `CONV_REPS`, default 5, change
//! the batch and the runs per pass). The times are the best of the runs, in
//! milliseconds; `chosen` is the path ResNet9's rule picks.

use fedcluster_models::cnn::conv_timing::time_paths;

/// ResNet9's convolutions at width 64 on 32x32x3 images: side, in, out.
const SHAPES: [(usize, usize, usize); 6] = [
    (32, 3, 64),
    (32, 64, 128),
    (16, 128, 128),
    (16, 128, 256),
    (8, 256, 512),
    (4, 512, 512),
];

fn env(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn main() {
    let (n, reps) = (env("CONV_BATCH", 50), env("CONV_REPS", 5));
    println!(
        "| shape (batch {n}) | im2col fwd | winograd fwd | im2col bwd | winograd bwd | fwd+bwd ratio | chosen |"
    );
    println!("| --- | --- | --- | --- | --- | --- | --- |");
    for (side, cin, cout) in SHAPES {
        let t = time_paths(side, cin, cout, n, reps);
        let ratio = (t.winograd[0] + t.winograd[1]) / (t.im2col[0] + t.im2col[1]);
        println!(
            "| {side}x{side} {cin} -> {cout} | {:.2} | {:.2} | {:.2} | {:.2} | {ratio:.2} | {} |",
            t.im2col[0],
            t.winograd[0],
            t.im2col[1],
            t.winograd[1],
            if t.chosen { "winograd" } else { "im2col" }
        );
    }
}
