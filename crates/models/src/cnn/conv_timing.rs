//! Times the two paths of a stride-1 convolution side by side: `im2col`
//! plus GEMM ([`super::conv`]) and Winograd F(2x2, 3x3) or F(2x2, 5x5)
//! ([`super::winograd`]), forward and backward (filters' and input
//! gradients), on made-up data. `cargo bench -p fedcluster-models --bench
//! conv_paths` prints ResNet9's shapes and the CNNs'; the rule
//! [`super::winograd`] applies is read from it (docs/performance.md).

use std::time::Instant;

use super::conv::{Conv, conv_backward, conv_forward};
use super::winograd;

/// One shape's best times, in milliseconds, per path and pass.
#[derive(Clone, Debug)]
pub struct PathTimes {
    /// Image side (square images).
    pub side: usize,
    /// Kernel side.
    pub k: usize,
    /// Padding.
    pub pad: usize,
    /// Input channels.
    pub cin: usize,
    /// Output channels.
    pub cout: usize,
    /// Images per pass.
    pub n: usize,
    /// `im2col` forward and backward.
    pub im2col: [f64; 2],
    /// Winograd forward and backward.
    pub winograd: [f64; 2],
    /// Whether the networks' rule picks Winograd for this shape.
    pub chosen: bool,
}

/// Deterministic values in `[-1, 1)` (a multiplicative hash; no generator
/// needed for timing).
pub(crate) fn values(len: usize, salt: u64) -> Vec<f32> {
    (0..len as u64)
        .map(|i| {
            let h = (i ^ salt).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 40;
            (h as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
        })
        .collect()
}

/// The value of environment variable `name` as a count, else `default`
/// (the timing benches' batch and run counts).
pub fn env_count(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// The best of `reps` runs of `f`, in milliseconds, after one warm-up run.
pub(crate) fn best(reps: usize, mut f: impl FnMut()) -> f64 {
    f();
    (0..reps.max(1))
        .map(|_| {
            let start = Instant::now();
            f();
            start.elapsed().as_secs_f64() * 1e3
        })
        .fold(f64::INFINITY, f64::min)
}

/// A convolution to time: `side x side x cin` images by `k x k` kernels
/// with padding `pad` to `cout` channels.
#[derive(Clone, Copy, Debug)]
pub struct Shape {
    pub side: usize,
    pub cin: usize,
    pub cout: usize,
    pub k: usize,
    pub pad: usize,
}

/// Times both paths on `n` images of `shape`, the best of `reps` runs each.
pub fn time_paths(shape: Shape, n: usize, reps: usize) -> PathTimes {
    let Shape {
        side,
        cin,
        cout,
        k,
        pad,
    } = shape;
    let c = Conv::new(side, side, cin, k, pad);
    let (rows, image) = (n * c.positions(), side * side * cin);
    let (x, w, d) = (
        values(n * image, 1),
        values(cout * c.patch(), 2),
        values(rows * cout, 3),
    );
    let (mut z, mut gw, mut dx) = (
        vec![0.0; rows * cout],
        vec![0.0; w.len()],
        vec![0.0; x.len()],
    );
    let mut cols = vec![0.0; c.scratch_len(n)];
    let mut scratch = vec![0.0; winograd::scratch_len(&c, cout, n)];
    let im2col = [
        best(reps, || conv_forward(&c, &x, &w, n, &mut cols, &mut z)),
        best(reps, || {
            conv_backward(&c, &x, &d, &w, n, 1.0, &mut cols, &mut gw, Some(&mut dx))
        }),
    ];
    let winograd = [
        best(reps, || {
            winograd::forward(&c, &x, &w, n, &mut scratch, &mut z)
        }),
        best(reps, || {
            winograd::backward(&c, &x, &d, &w, n, 1.0, &mut scratch, &mut gw, Some(&mut dx))
        }),
    ];
    PathTimes {
        side,
        k,
        pad,
        cin,
        cout,
        n,
        im2col,
        winograd,
        chosen: winograd::wins(&c, cout),
    }
}
