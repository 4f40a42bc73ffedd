//! The native convolutional networks (`fedcluster_models::Cnn` with padding,
//! `fedcluster_models::ResNet9`) against the burn tier on the same flat
//! parameters: initialisation, loss, gradient, evaluation, full-batch and
//! minibatch training (batch norm's running statistics included), built
//! from the `[model]` configs both ways; and native training on a rayon pool
//! of 1 and of 2 threads, bit for bit.
//!
//! burn runs on its f32 CPU backend here (this binary never uses f64: a
//! device's float type is fixed at its first use).

use fedcluster_core::train::minibatch::steps;
use fedcluster_core::train::{MinibatchOptimizer, MinibatchSpec, OptimizerState};
use fedcluster_core::{Batch, ImageShape, Input, Model, Purpose, Targets, Task, Workspace, stream};
use fedcluster_nn::nets::{CnnConfig, CnnFemnistConfig, ResNet9Config};
use fedcluster_nn::{AugmentConfig, ModelBackend};
use rand::Rng as _;
use rayon::prelude::*;

fn image(side: usize, channels: usize) -> ImageShape {
    ImageShape {
        height: side,
        width: side,
        channels,
    }
}

/// Seeded features in `[-1, 1)` and classes.
fn data(n: usize, d: usize, classes: usize, seed: u64) -> (Vec<f32>, Vec<u32>) {
    let mut rng = stream(seed, Purpose::TestData, 0, 0);
    let x = (0..n * d).map(|_| rng.random_range(-1.0..1.0)).collect();
    let y = (0..n)
        .map(|_| rng.random_range(0..classes as u32))
        .collect();
    (x, y)
}

fn init(m: &dyn Model, seed: u64) -> Vec<f32> {
    let mut p = vec![0.0; m.num_params()];
    m.init(&mut stream(seed, Purpose::Init, 0, 0), &mut p);
    p
}

/// Largest difference of `a` and `b` relative to `b`'s largest entry (at least 1).
fn rel_diff(a: &[f32], b: &[f32]) -> f32 {
    assert_eq!(a.len(), b.len());
    let scale = b.iter().fold(1.0f32, |m, v| m.max(v.abs()));
    a.iter()
        .zip(b)
        .fold(0.0f32, |m, (u, v)| m.max((u - v).abs()))
        / scale
}

fn close(a: f64, b: f64, tol: f64, what: &str) {
    assert!(
        (a - b).abs() <= tol * a.abs().max(1.0),
        "{what}: {a} vs {b}"
    );
}

/// The two tiers agree on initialisation, the training-mode loss and its
/// gradient, and evaluation.
fn same_loss_and_gradient(native: &dyn Model, burn: &dyn Model, n: usize, seed: u64) {
    let p = init(burn, seed);
    assert_eq!(init(native, seed), p, "the same initialisation");
    assert_eq!(native.tensors(), burn.tensors());
    assert_eq!(native.head_start(), burn.head_start());
    let d = burn.input_dim();
    let (x, y) = data(n, d, 3, seed);
    let b = Batch::new(&x, Targets::Class(&y), d).unwrap();
    let ws = &mut Workspace::default();
    let (mut g1, mut g2) = (vec![0.0; p.len()], vec![0.0; p.len()]);
    let l1 = native.loss_grad(&p, b, &mut g1, ws);
    let l2 = burn.loss_grad(&p, b, &mut g2, ws);
    close(l1, l2, 1e-5, "training loss");
    let e = rel_diff(&g1, &g2);
    assert!(e < 1e-4, "gradients differ by {e} of the largest");
    close(native.loss(&p, b, ws), burn.loss(&p, b, ws), 1e-5, "loss");
    assert_eq!(
        native.count_correct(&p, b, ws),
        burn.count_correct(&p, b, ws)
    );
}

/// Both tiers of a `[model]` config: `build(None)` (the default) and
/// `build(Some(ndarray))`.
fn both(
    build: impl Fn(Option<ModelBackend>) -> Box<dyn Model>,
) -> (Box<dyn Model>, Box<dyn Model>) {
    let native = build(None);
    assert_eq!(
        format!("{:?}", native.tensors()),
        format!("{:?}", build(Some(ModelBackend::Native)).tensors())
    );
    (native, build(Some(ModelBackend::Ndarray)))
}

fn classes(k: usize) -> Task {
    Task::Classification { classes: k }
}

/// Whether the native tier's convolutions run as burn's do.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Paths {
    /// `im2col` and a GEMM in both tiers.
    Same,
    /// Some native convolution by Winograd (`cnn::conv_path`).
    Winograd,
}

/// Full-batch steps, then minibatch steps of Adam and of SGD with momentum
/// and weight decay (with augmentation when the models have it), from the
/// same parameters and streams: the same parameters after, running
/// statistics included, and the same optimizer state.
///
/// `paths` says whether the two tiers run the same convolution algorithm
/// (`im2col` and a GEMM). Where the native tier runs Winograd, its gradients
/// agree with burn's to rounding (about 1e-6 of the largest), and SGD's
/// steps, linear in them, still agree to 1e-4; Adam's do not: a gradient
/// that is exactly 0 by `im2col` (a filter tap that meets only padding and
/// dead units in the batch) comes out of Winograd's transforms as rounding
/// noise near Adam's `eps`, and Adam, dividing each coordinate's step by
/// its own gradient's size, moves it by up to about `lr`. There Adam is held
/// to its steps' bound (5 steps of at most about `2 lr`) and to the loss
/// after training within 1%: at this test's shape the loss after 5 Adam
/// steps is 2.2838 by burn and by the native tier on `im2col`, 2.2721 by the
/// native tier on Winograd.
fn same_training(native: &dyn Model, burn: &dyn Model, n: usize, seed: u64, paths: Paths) {
    let p = init(burn, seed);
    let d = burn.input_dim();
    let (x, y) = data(n, d, 3, seed);
    let b = Batch::new(&x, Targets::Class(&y), d).unwrap();
    let ws = &mut Workspace::default();
    let (mut a, mut c) = (p.clone(), p.clone());
    let la = native.train(&mut a, b, 0.1, 3, ws);
    let lc = burn.train(&mut c, b, 0.1, 3, ws);
    close(la, lc, 1e-5, "full-batch start loss");
    let e = rel_diff(&a, &c);
    assert!(
        e < 1e-4,
        "after full-batch steps the parameters differ by {e}"
    );
    for optimizer in [
        MinibatchOptimizer::Adam,
        MinibatchOptimizer::Sgd {
            momentum: 0.9,
            weight_decay: 5e-4,
        },
    ] {
        let spec = MinibatchSpec {
            optimizer,
            lr: 0.02,
            batch_size: 8,
            pull: None,
            schedule: None,
            decay: None,
        };
        // The model's own loop where it has one, else the flat loop.
        let run = |m: &dyn Model| {
            let (mut w, mut state) = (p.clone(), OptimizerState::default());
            let mut rng = stream(seed, Purpose::Client, 0, 0);
            let ws = &mut Workspace::default();
            let first = steps(m, &mut w, b, &spec, 5, &mut state, &mut rng, ws);
            (first, w, state)
        };
        let (l1, w1, s1) = run(native);
        let (l2, w2, s2) = run(burn);
        close(l1, l2, 1e-5, "minibatch first loss");
        if paths == Paths::Winograd && optimizer == MinibatchOptimizer::Adam {
            let e = rel_diff(&w1, &w2);
            assert!(e <= 10.0 * spec.lr, "Adam: parameters differ by {e}");
            let after = |m: &dyn Model, w: &[f32]| m.loss(w, b, &mut Workspace::default());
            close(
                after(native, &w1),
                after(burn, &w2),
                1e-2,
                "loss after Adam",
            );
            continue;
        }
        let e = rel_diff(&w1, &w2);
        assert!(e < 1e-4, "{optimizer:?}: parameters differ by {e}");
        assert_eq!(s1.t, s2.t);
        let e = rel_diff(&s1.first, &s2.first);
        assert!(e < 1e-4, "{optimizer:?}: optimizer state differs by {e}");
    }
}

fn resnet_tiers(augment: bool) -> (Box<dyn Model>, Box<dyn Model>) {
    let input = Input::images(image(8, 2), classes(3));
    let augment = augment.then_some(AugmentConfig {
        crop_padding: 1,
        flip: true,
        cutout: 2,
        brightness: 0.1,
        contrast: Some([0.5, 1.5]),
    });
    both(|backend| {
        ResNet9Config {
            channels: 2,
            width: 2,
            backend,
            augment,
            normalize: None,
            label_smoothing: 0.0,
            variant: Default::default(),
        }
        .build(&input)
        .unwrap()
    })
}

#[test]
fn resnet9_tiers_agree_on_loss_gradient_evaluation_and_training() {
    let (native, burn) = resnet_tiers(false);
    same_loss_and_gradient(native.as_ref(), burn.as_ref(), 6, 1);
    same_training(native.as_ref(), burn.as_ref(), 16, 2, Paths::Same);
    let (native, burn) = resnet_tiers(true);
    same_training(native.as_ref(), burn.as_ref(), 16, 3, Paths::Same);
}

/// LEAF's FEMNIST CNN's shape (5x5, same padding), small, from
/// `kind = "cnn-femnist"`; and `kind = "cnn"` with padding 1.
#[test]
fn padded_cnn_tiers_agree_on_loss_gradient_evaluation_and_training() {
    let input = Input::images(image(8, 1), classes(3));
    let (native, burn) = both(|backend| {
        CnnFemnistConfig {
            channels: 1,
            hidden: 8,
            backend,
        }
        .build(&input)
        .unwrap()
    });
    same_loss_and_gradient(native.as_ref(), burn.as_ref(), 5, 4);
    same_training(native.as_ref(), burn.as_ref(), 16, 5, Paths::Winograd);
    let input = Input::images(image(9, 2), classes(3));
    let (native, burn) = both(|backend| {
        CnnConfig {
            channels: 2,
            kernel: 3,
            padding: 1,
            conv1: 3,
            conv2: 4,
            hidden: 5,
            backend,
            augment: None,
        }
        .build(&input)
        .unwrap()
    });
    same_loss_and_gradient(native.as_ref(), burn.as_ref(), 5, 6);
}

/// Four clients' minibatch training on a rayon pool of 1 and of 2 threads:
/// the same bits.
#[test]
fn native_training_is_bit_identical_on_one_and_two_threads() {
    let femnist = CnnFemnistConfig {
        channels: 1,
        hidden: 8,
        backend: None,
    }
    .build(&Input::images(image(8, 1), classes(3)))
    .unwrap();
    let (resnet, _) = resnet_tiers(true);
    for model in [femnist, resnet] {
        let d = model.input_dim();
        let spec = MinibatchSpec {
            optimizer: MinibatchOptimizer::Sgd {
                momentum: 0.9,
                weight_decay: 5e-4,
            },
            lr: 0.02,
            batch_size: 4,
            pull: None,
            schedule: None,
            decay: None,
        };
        let train = |client: u64| {
            let (x, y) = data(10, d, 3, 20 + client);
            let b = Batch::new(&x, Targets::Class(&y), d).unwrap();
            let mut w = init(model.as_ref(), 7);
            let mut rng = stream(7, Purpose::Client, 0, client);
            let ws = &mut Workspace::default();
            let mut state = OptimizerState::default();
            model.train_minibatch(&mut w, b, &spec, 6, &mut state, &mut rng, ws);
            model.train(&mut w, b, 0.05, 2, ws);
            w.iter().map(|v| v.to_bits()).collect::<Vec<_>>()
        };
        let on = |threads: usize| {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap();
            pool.install(|| (0..4u64).into_par_iter().map(train).collect::<Vec<_>>())
        };
        let one = on(1);
        assert!(one.iter().all(|w| w.len() == model.num_params()));
        assert_eq!(one, on(2), "{}", model.name());
    }
}
