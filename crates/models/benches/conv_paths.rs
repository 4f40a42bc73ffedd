//! ResNet9's 3x3 convolutions and the CNNs' 5x5 ones by `im2col` and by
//! Winograd F(2x2, 3x3) or F(2x2, 5x5), side by side, one thread: `cargo bench -p fedcluster-models --bench
//! conv_paths` (`CONV_BATCH`, default 50, and `CONV_REPS`, default 5, change
//! the batch and the runs per pass; `CONV_ONLY=5x5` times the shapes whose
//! row contains that text). The times are the best of the runs, in
//! milliseconds; `chosen` is the path the networks' rule picks.

use fedcluster_models::cnn::conv_timing::{Shape, env_count as env, time_paths};

/// ResNet9's convolutions at width 64 on 32x32x3 images (3x3, padding 1),
/// then the CNNs' 5x5 ones: LEAF's FEMNIST CNN (28x28x1, same padding),
/// `cnn-cifar` (32x32x3, no padding) and IFCA's TensorFlow CIFAR network
/// (24x24x3 crops, same padding): side, in, out, kernel, padding.
const SHAPES: [(usize, usize, usize, usize, usize); 12] = [
    (32, 3, 64, 3, 1),
    (32, 64, 128, 3, 1),
    (16, 128, 128, 3, 1),
    (16, 128, 256, 3, 1),
    (8, 256, 512, 3, 1),
    (4, 512, 512, 3, 1),
    (28, 1, 32, 5, 2),
    (14, 32, 64, 5, 2),
    (32, 3, 32, 5, 0),
    (14, 32, 64, 5, 0),
    (24, 3, 64, 5, 2),
    (12, 64, 64, 5, 2),
];

fn main() {
    let (n, reps) = (env("CONV_BATCH", 50), env("CONV_REPS", 5));
    println!(
        "| shape (batch {n}) | im2col fwd | winograd fwd | im2col bwd | winograd bwd | fwd+bwd ratio | chosen |"
    );
    println!("| --- | --- | --- | --- | --- | --- | --- |");
    let only = std::env::var("CONV_ONLY").unwrap_or_default();
    for (side, cin, cout, k, pad) in SHAPES {
        let label = format!("{side}x{side} {cin} -> {cout}, {k}x{k} pad {pad}");
        if !label.contains(&only) {
            continue;
        }
        let shape = Shape {
            side,
            cin,
            cout,
            k,
            pad,
        };
        let t = time_paths(shape, n, reps);
        let ratio = (t.winograd[0] + t.winograd[1]) / (t.im2col[0] + t.im2col[1]);
        println!(
            "| {label} | {:.2} | {:.2} | {:.2} | {:.2} | {ratio:.2} | {} |",
            t.im2col[0],
            t.winograd[0],
            t.im2col[1],
            t.winograd[1],
            if t.chosen { "winograd" } else { "im2col" }
        );
    }
}
