//! ResNet9: sizes, the gradient against finite differences of the
//! training-mode loss, the running statistics, and learning.

use rand::Rng as _;

use fedcluster_core::train::{MinibatchOptimizer, MinibatchSpec, Normalize, OptimizerState};
use fedcluster_core::{Batch, ImageShape, Model, Purpose, Targets, Workspace, stream};

use super::*;

pub(super) fn small(width: usize) -> ResNet9 {
    ResNet9::new(ResNet9 {
        image: ImageShape {
            height: 8,
            width: 8,
            channels: 2,
        },
        width,
        classes: 3,
        augmentation: None,
        normalize: None,
        label_smoothing: 0.0,
        variant: Variant::Page,
    })
    .unwrap()
}

pub(super) fn data(model: &ResNet9, n: usize, seed: u64) -> (Vec<f32>, Vec<u32>) {
    let mut rng = stream(seed, Purpose::TestData, 0, 0);
    let x = (0..n * model.input_dim())
        .map(|_| rng.random_range(-1.0f32..1.0))
        .collect();
    let y = (0..n)
        .map(|_| rng.random_range(0..model.classes as u32))
        .collect();
    (x, y)
}

pub(super) fn init(model: &ResNet9, seed: u64) -> Vec<f32> {
    let mut p = vec![0.0; model.num_params()];
    model.init(&mut stream(seed, Purpose::Init, 0, 0), &mut p);
    p
}

#[test]
fn pages_resnet9_has_the_expected_size_and_tensors() {
    let m = ResNet9::new(ResNet9 {
        image: ImageShape {
            height: 32,
            width: 32,
            channels: 3,
        },
        width: 64,
        classes: 10,
        augmentation: None,
        normalize: None,
        label_smoothing: 0.0,
        variant: Variant::Page,
    })
    .unwrap();
    // 6,573,120 trainable (the 6.57M usually quoted) + 4,480 running statistics.
    assert_eq!(m.num_params(), 6_577_600);
    let tensors = m.tensors();
    assert_eq!(tensors.len(), 41);
    let total: usize = tensors
        .iter()
        .map(|t| t.shape.iter().product::<usize>())
        .sum();
    assert_eq!(total, m.num_params());
    assert_eq!(tensors[5].name, "layer1.conv.weight");
    assert_eq!(m.head_start(), m.num_params() - 5120);
    for bad in [(12, 12), (8, 16)] {
        let image = ImageShape {
            height: bad.0,
            width: bad.1,
            channels: 3,
        };
        assert!(ResNet9::new(ResNet9 { image, ..m }).is_err(), "{bad:?}");
    }
    assert!(ResNet9::new(ResNet9 { width: 0, ..m }).is_err());
}

/// The gradient against central differences of the training-mode loss (the
/// batch's statistics), tensor by tensor: `‖g − fd‖ ≤ 0.15 max(‖fd‖, 0.05)`,
/// where a wrong gradient (a sign, a factor, a missing term) errs by 50% or
/// more. The loss is `f32` and batch norm makes it sharply curved, so the
/// step (1e-3) trades rounding noise against curvature and coordinates are
/// judged only in bulk; `nn/tests/native_convnets.rs` holds this gradient to
/// 1e-4 of the burn tier's, itself checked in f64 with exact steps.
#[test]
fn gradient_matches_finite_differences() {
    check_gradient(&small(2));
}

/// With the SR-FCA recipe on (label smoothing and a normalisation of the
/// inputs), the gradient is still that of the training-mode loss.
#[test]
fn gradient_matches_finite_differences_with_smoothing_and_normalisation() {
    let model = ResNet9::new(ResNet9 {
        normalize: Normalize::new(&[0.1, -0.1], &[0.8, 1.25]),
        label_smoothing: 0.1,
        ..small(2)
    })
    .unwrap();
    check_gradient(&model);
}

/// The gradient of [`ResNet9::training_loss`] against central differences,
/// tensor by tensor (zero on the running statistics).
pub(super) fn check_gradient(model: &ResNet9) {
    let (x, y) = data(model, 6, 3);
    let batch = Batch::new(&x, Targets::Class(&y), model.input_dim()).unwrap();
    let p = init(model, 3);
    let ws = &mut Workspace::default();
    let mut grad = vec![0.0; p.len()];
    let loss = model.loss_grad(&p, batch, &mut grad, ws);
    assert!((loss - model.training_loss(&p, batch, ws)).abs() < 1e-6);
    let eps = 1e-3;
    let mut q = p.clone();
    let mut at = 0;
    for t in model.tensors() {
        let len: usize = t.shape.iter().product();
        let (mut err, mut norm) = (0.0f64, 0.0f64);
        for i in at..at + len {
            let (hi, lo) = (
                (f64::from(p[i]) + eps) as f32,
                (f64::from(p[i]) - eps) as f32,
            );
            q[i] = hi;
            let up = model.training_loss(&q, batch, ws);
            q[i] = lo;
            let down = model.training_loss(&q, batch, ws);
            q[i] = p[i];
            let fd = (up - down) / (f64::from(hi) - f64::from(lo));
            err += (f64::from(grad[i]) - fd).powi(2);
            norm += fd * fd;
        }
        at += len;
        if t.name.contains("running") {
            assert!(grad[at - len..at].iter().all(|&g| g == 0.0), "{}", t.name);
            continue;
        }
        let (err, norm) = (err.sqrt(), norm.sqrt());
        assert!(
            err <= 0.15 * norm.max(0.05),
            "{}: error {err}, norm {norm}",
            t.name
        );
    }
}

/// Steps of size 0 leave the trained tensors alone and move the running
/// statistics towards the batch's: after many, evaluation (running
/// statistics) gives the training-mode loss, up to the unbiased variance.
#[test]
fn training_moves_the_running_statistics_to_the_batchs() {
    let model = small(2);
    let (x, y) = data(&model, 8, 5);
    let batch = Batch::new(&x, Targets::Class(&y), model.input_dim()).unwrap();
    let mut p = init(&model, 5);
    let ws = &mut Workspace::default();
    let train_mode = model.training_loss(&p, batch, ws);
    let before = model.loss(&p, batch, ws);
    assert!(
        (before - train_mode).abs() > 1e-3,
        "{before} vs {train_mode}"
    );
    let start = p.clone();
    let first = model.train(&mut p, batch, 0.0, 150, ws);
    assert_eq!(first, train_mode);
    for b in model.blocks() {
        assert_eq!(
            p[b.filters().start..b.vector(2).start],
            start[b.filters().start..b.vector(2).start]
        );
    }
    let after = model.loss(&p, batch, ws);
    assert!(
        (after - train_mode).abs() < 2e-2 * train_mode,
        "{after} vs {train_mode}"
    );
}

#[test]
fn minibatch_training_learns_a_small_problem() {
    let model = small(4);
    let (x, _) = data(&model, 24, 9);
    // Labels from the image: the sign of the first channel's sum, and its size.
    let y: Vec<u32> = x
        .chunks_exact(model.input_dim())
        .map(|img| {
            let s: f32 = img.iter().step_by(2).sum();
            if s > 2.0 {
                2
            } else if s > -2.0 {
                1
            } else {
                0
            }
        })
        .collect();
    learns_with_adam(&model, &x, &y);
}

/// 150 Adam steps on minibatches of 8 of the 24 images `x` (labels `y`) cut
/// the loss to a third and get 18 of them right.
pub(super) fn learns_with_adam(model: &ResNet9, x: &[f32], y: &[u32]) {
    let batch = Batch::new(x, Targets::Class(y), model.input_dim()).unwrap();
    let mut p = init(model, 9);
    let ws = &mut Workspace::default();
    let spec = MinibatchSpec {
        optimizer: MinibatchOptimizer::Adam,
        lr: 0.01,
        batch_size: 8,
        pull: None,
        schedule: None,
        decay: None,
    };
    let (mut state, mut rng) = (OptimizerState::default(), stream(9, Purpose::Client, 0, 0));
    let start = model.training_loss(&p, batch, ws);
    let first = model.train_minibatch(&mut p, batch, &spec, 150, &mut state, &mut rng, ws);
    assert!(first.is_some_and(f64::is_finite));
    let end = model.training_loss(&p, batch, ws);
    assert!(end < start / 3.0, "loss {start} -> {end}");
    assert!(model.count_correct(&p, batch, ws).unwrap() >= 18);
}

/// The small networks of these tests run both convolution paths (Winograd
/// from 16 input channels, `im2col` below), so the gradient check above
/// covers both; Page's network runs every convolution but the first by
/// Winograd.
#[test]
fn small_and_full_networks_run_both_convolution_paths() {
    let paths = |m: &ResNet9| {
        m.blocks()
            .iter()
            .map(|b| b.path == ConvPath::Winograd)
            .collect::<Vec<_>>()
    };
    let small = paths(&small(2));
    assert!(small.contains(&true) && small.contains(&false), "{small:?}");
    let full = ResNet9::new(ResNet9 {
        image: ImageShape {
            height: 32,
            width: 32,
            channels: 3,
        },
        width: 64,
        classes: 10,
        augmentation: None,
        normalize: None,
        label_smoothing: 0.0,
        variant: Variant::Page,
    })
    .unwrap();
    assert_eq!(
        paths(&full),
        [false, true, true, true, true, true, true, true]
    );
}
