//! CNN: shapes, gradients against finite differences, and learning.

use rand::Rng as _;

use fedcluster_core::{Batch, Model, Purpose, Targets, Workspace, stream};

use super::*;

fn tiny() -> Cnn {
    padded(0)
}

fn padded(padding: usize) -> Cnn {
    Cnn::new(Cnn {
        height: 10,
        width: 10,
        channels: 2,
        kernel: 3,
        padding,
        conv1: 3,
        conv2: 4,
        hidden: 5,
        classes: 3,
        augmentation: None,
    })
    .unwrap()
}

/// 5x5 kernels, same padding, and a first convolution wide enough
/// ([`crate::cnn::winograd::MIN_CHANNELS`]) for the second to run by
/// Winograd F(2x2, 5x5), as in LEAF's FEMNIST CNN.
fn wide() -> Cnn {
    Cnn::new(Cnn {
        height: 8,
        width: 8,
        channels: 1,
        kernel: 5,
        padding: 2,
        conv1: crate::cnn::winograd::MIN_CHANNELS,
        conv2: 3,
        hidden: 4,
        classes: 3,
        augmentation: None,
    })
    .unwrap()
}

fn data(model: &Cnn, n: usize, seed: u64) -> (Vec<f32>, Vec<u32>) {
    let mut rng = stream(seed, Purpose::ClientData, 0, 0);
    let x = (0..n * model.input_dim())
        .map(|_| rng.random_range(0.0f32..1.0))
        .collect();
    let y = (0..n)
        .map(|_| rng.random_range(0..model.classes as u32))
        .collect();
    (x, y)
}

#[test]
fn the_paper_cnn_has_the_expected_size() {
    let cnn = Cnn::paper(28, 28, 1, 10).unwrap();
    // conv1 32x(25+1), conv2 64x(800+1), dense 512x(4x4x64+1), output 10x(512+1).
    assert_eq!(cnn.num_params(), 32 * 26 + 64 * 801 + 512 * 1025 + 10 * 513);
    assert!(Cnn::paper(8, 8, 1, 10).is_err());
    // LEAF's FEMNIST CNN (same padding): 6,603,710, as its TensorFlow model counts.
    let femnist = Cnn::new(Cnn {
        padding: 2,
        hidden: 2048,
        classes: 62,
        ..Cnn::paper(28, 28, 1, 10).unwrap()
    })
    .unwrap();
    assert_eq!(femnist.num_params(), 6_603_710);
    assert!(
        Cnn::new(Cnn {
            padding: 5,
            ..femnist
        })
        .is_err()
    );
}

/// The fast forward pass equals a direct f64 one, and the gradient equals f64
/// central differences of that direct loss, on every coordinate. The step is
/// 2^-20 (exact on f32 parameters): max-pooling switches its winner where two
/// window values come within a step of each other, and a 1e-3 step does cross
/// such switches on random data; 2^-20 does not.
#[test]
fn gradient_matches_finite_differences() {
    for (model, seed) in [
        (padded(0), 1),
        (padded(0), 2),
        (padded(1), 3),
        (padded(2), 4),
        (wide(), 5),
    ] {
        let (x, y) = data(&model, 4, seed);
        let batch = Batch::new(&x, Targets::Class(&y), model.input_dim()).unwrap();
        let mut params = vec![0.0; model.num_params()];
        model.init(&mut stream(seed, Purpose::Init, 0, 0), &mut params);
        let fast = model.loss(&params, batch, &mut Workspace::default());
        let slow = naive_loss(&model, &params, &x, &y);
        assert!(
            (fast - slow).abs() < 1e-5,
            "seed {seed}: loss {fast} vs direct {slow}"
        );
        let mut grad = vec![0.0; model.num_params()];
        model.loss_grad(&params, batch, &mut grad, &mut Workspace::default());
        let scale = grad.iter().fold(0.0f32, |m, g| m.max(g.abs()));
        let eps = 1.0 / (1u64 << 20) as f32;
        for i in 0..params.len() {
            let (mut hi, mut lo) = (params.clone(), params.clone());
            hi[i] += eps;
            lo[i] -= eps;
            let fd = (naive_loss(&model, &hi, &x, &y) - naive_loss(&model, &lo, &x, &y))
                / (f64::from(hi[i]) - f64::from(lo[i]));
            let err = (f64::from(grad[i]) - fd).abs();
            assert!(
                err < 1e-4 * f64::from(scale),
                "seed {seed}, parameter {i}: {} vs {fd}",
                grad[i]
            );
        }
    }
}

#[test]
fn the_wide_cnns_second_convolution_runs_by_winograd() {
    assert_eq!(wide().paths(), (ConvPath::Im2col, ConvPath::Winograd));
    assert_eq!(padded(1).paths(), (ConvPath::Im2col, ConvPath::Im2col));
}

#[test]
fn gradient_descent_learns_a_small_problem() {
    let model = tiny();
    let (x, _) = data(&model, 24, 9);
    // Labels from the image: which third of the first channel is brightest.
    let y: Vec<u32> = x
        .chunks_exact(model.input_dim())
        .map(|img| {
            let sums: Vec<f32> = (0..3)
                .map(|t| img.iter().step_by(2).skip(t * 30).take(30).sum())
                .collect();
            (0..3).max_by(|&a, &b| sums[a].total_cmp(&sums[b])).unwrap() as u32
        })
        .collect();
    let batch = Batch::new(&x, Targets::Class(&y), model.input_dim()).unwrap();
    let mut params = vec![0.0; model.num_params()];
    model.init(&mut stream(9, Purpose::Init, 0, 0), &mut params);
    let mut ws = Workspace::default();
    let start = model.loss(&params, batch, &mut ws);
    model.train(&mut params, batch, 0.2, 400, &mut ws);
    let end = model.loss(&params, batch, &mut ws);
    assert!(end < start / 3.0, "loss {start} -> {end}");
    assert!(model.count_correct(&params, batch, &mut ws).unwrap() >= 20);
}

/// A direct, f64, loop-by-loop forward pass: the reference the fast path and the
/// gradient are checked against.
fn naive_loss(m: &Cnn, params: &[f32], x: &[f32], y: &[u32]) -> f64 {
    let l = m.layout();
    let p = |i: usize| f64::from(params[i]);
    let conv =
        |inp: &[f64], h: usize, w: usize, c: usize, out_c: usize, wofs: usize, bofs: usize| {
            let (k, pad) = (m.kernel, m.padding);
            let (oh, ow) = (h + 2 * pad + 1 - k, w + 2 * pad + 1 - k);
            // The value at padded coordinates, zero outside the image.
            let at = |y: usize, x: usize, ci: usize| match (y.checked_sub(pad), x.checked_sub(pad))
            {
                (Some(y), Some(x)) if y < h && x < w => inp[(y * w + x) * c + ci],
                _ => 0.0,
            };
            let mut out = vec![0.0; oh * ow * out_c];
            for oy in 0..oh {
                for ox in 0..ow {
                    for o in 0..out_c {
                        let mut s = p(bofs + o);
                        for ky in 0..k {
                            for kx in 0..k {
                                for ci in 0..c {
                                    let wi = wofs + o * k * k * c + (ky * k + kx) * c + ci;
                                    s += p(wi) * at(oy + ky, ox + kx, ci);
                                }
                            }
                        }
                        out[(oy * ow + ox) * out_c + o] = s.max(0.0);
                    }
                }
            }
            (out, oh, ow)
        };
    let pool = |a: &[f64], h: usize, w: usize, c: usize| {
        let mut out = vec![0.0; (h / 2) * (w / 2) * c];
        for py in 0..h / 2 {
            for px in 0..w / 2 {
                for ch in 0..c {
                    let mut best = f64::NEG_INFINITY;
                    for (dy, dx) in [(0, 0), (0, 1), (1, 0), (1, 1)] {
                        best = best.max(a[((2 * py + dy) * w + 2 * px + dx) * c + ch]);
                    }
                    out[(py * (w / 2) + px) * c + ch] = best;
                }
            }
        }
        out
    };
    let mut total = 0.0;
    let d = m.input_dim();
    for (img, &label) in x.chunks_exact(d).zip(y) {
        let img: Vec<f64> = img.iter().map(|v| f64::from(*v)).collect();
        let (a1, h1, w1) = conv(&img, m.height, m.width, m.channels, m.conv1, 0, l.b1);
        let p1 = pool(&a1, h1, w1, m.conv1);
        let (a2, h2, w2) = conv(&p1, h1 / 2, w1 / 2, m.conv1, m.conv2, l.w2, l.b2);
        let p2 = pool(&a2, h2, w2, m.conv2);
        let hid: Vec<f64> = (0..m.hidden)
            .map(|u| {
                (p(l.b3 + u)
                    + (0..p2.len())
                        .map(|i| p(l.w3 + u * p2.len() + i) * p2[i])
                        .sum::<f64>())
                .max(0.0)
            })
            .collect();
        let z: Vec<f64> = (0..m.classes)
            .map(|c| {
                p(l.b4 + c)
                    + (0..m.hidden)
                        .map(|u| p(l.w4 + c * m.hidden + u) * hid[u])
                        .sum::<f64>()
            })
            .collect();
        let mx = z.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let lse = mx + z.iter().map(|v| (v - mx).exp()).sum::<f64>().ln();
        total += lse - z[label as usize];
    }
    total / y.len() as f64
}

/// The stage timer runs every stage of a step, its products with their FLOPs.
#[test]
fn the_stage_timer_covers_every_stage_of_a_step() {
    let stages = super::step_timing::time_stages(&padded(1), 3, 1);
    assert_eq!(stages.len(), 15);
    assert!(stages.iter().all(|s| s.ms.is_finite() && s.ms >= 0.0));
    let products = stages.iter().filter(|s| s.flops > 0.0).count();
    assert_eq!(products, 9);
    assert_eq!(stages[0].stage, "conv1 forward");
}
