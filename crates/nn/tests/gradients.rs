//! Every architecture's gradient against central finite differences, on
//! burn's CPU backend in f64 so that a step of 2^-20 is exact and noiseless.
//!
//! This binary uses the CPU device in f64 only: burn 0.21 fixes a device's
//! default float type at its first use, and its f32 and f64 CPU backends share
//! one device, so the f32 tests live in the library's own test binary.

use burn::backend::{Autodiff, NdArray};
use burn::tensor::DType;
use fedcluster_core::{Batch, ImageShape, Model, Purpose, Targets, Workspace, stream};
use fedcluster_nn::nets::{CharLstm, Cnn, Mlp, ResNet9};
use fedcluster_nn::{Architecture, NetModel};
use rand::Rng as _;

type Exact = Autodiff<NdArray<f64>>;

fn image(side: usize, channels: usize) -> ImageShape {
    ImageShape {
        height: side,
        width: side,
        channels,
    }
}

/// Largest relative error of the gradient against central differences of the
/// training-mode loss (both in f64), floored at 1% of the largest difference,
/// over the trainable parameters.
fn gradient_error<A: Architecture>(arch: A, n: usize, seed: u64) -> f64 {
    let device = Default::default();
    // Every test of this binary asks for f64; the first one fixes it.
    let _ =
        burn::tensor::backend::set_default_dtypes::<NdArray<f64>>(&device, DType::F64, DType::I64);
    let (d, classes, vocab) = (arch.input_dim(), arch.classes(), arch.vocab());
    let m = NetModel::<A, Exact>::new(arch, device, None);
    let mut rng = stream(seed, Purpose::TestData, 0, 0);
    let x: Vec<f32> = (0..n * d)
        .map(|_| match vocab {
            Some(v) => rng.random_range(0..v) as f32,
            None => rng.random_range(-1.0..1.0),
        })
        .collect();
    let y: Vec<u32> = (0..n)
        .map(|_| rng.random_range(0..classes as u32))
        .collect();
    let batch = Batch::new(&x, Targets::Class(&y), d).unwrap();
    let mut p = vec![0.0; m.num_params()];
    m.init(&mut stream(seed, Purpose::Init, 0, 0), &mut p);
    let mut grad = vec![0.0; p.len()];
    m.loss_grad(&p, batch, &mut grad, &mut Workspace::default());

    // A step of 2^-20 (exact on the f32 parameters) does not cross the switches
    // of max-pooling and ReLU that a 1e-3 step crosses on random data.
    let eps = 1.0 / f64::from(1u32 << 20);
    let mut q = p.clone();
    let fd: Vec<f64> = (0..p.len())
        .map(|i| {
            let (hi, lo) = (
                (f64::from(p[i]) + eps) as f32,
                (f64::from(p[i]) - eps) as f32,
            );
            q[i] = hi;
            let up = m.training_loss(&q, batch);
            q[i] = lo;
            let down = m.training_loss(&q, batch);
            q[i] = p[i];
            (up - down) / (f64::from(hi) - f64::from(lo))
        })
        .collect();
    let floor = 1e-2 * fd.iter().fold(0.0f64, |a, v| a.max(v.abs()));
    let trainable = m
        .layout()
        .iter()
        .flat_map(|s| std::iter::repeat_n(s.trainable, s.len()));
    grad.iter()
        .zip(&fd)
        .zip(trainable)
        .filter(|(_, t)| *t)
        .map(|((&g, &f), _)| (f64::from(g) - f).abs() / f64::from(g).abs().max(f.abs()).max(floor))
        .fold(0.0, f64::max)
}

#[test]
fn mlp_gradient() {
    let e = gradient_error(
        Mlp {
            input: 6,
            hidden: 5,
            classes: 3,
        },
        7,
        2,
    );
    assert!(e < 1e-4, "relative gradient error {e}");
}

#[test]
fn cnn_gradients_valid_and_same_padding() {
    let same = Cnn {
        image: image(8, 2),
        kernel: 3,
        padding: 1,
        conv1: 2,
        conv2: 3,
        hidden: 4,
        classes: 3,
    };
    let e = gradient_error(same, 5, 3);
    assert!(e < 1e-4, "same padding: relative gradient error {e}");
    let valid = Cnn {
        image: image(10, 1),
        kernel: 3,
        padding: 0,
        conv1: 2,
        conv2: 2,
        hidden: 3,
        classes: 2,
    };
    let e = gradient_error(valid, 4, 4);
    assert!(e < 1e-4, "valid padding: relative gradient error {e}");
}

#[test]
fn resnet9_gradient_with_batch_norm() {
    let e = gradient_error(
        ResNet9 {
            image: image(8, 2),
            width: 1,
            classes: 3,
        },
        6,
        5,
    );
    assert!(e < 1e-4, "relative gradient error {e}");
}

#[test]
fn char_lstm_gradient() {
    let e = gradient_error(
        CharLstm {
            vocab: 5,
            seq_len: 4,
            embedding: 3,
            hidden: 4,
            layers: 2,
        },
        6,
        6,
    );
    assert!(e < 1e-4, "relative gradient error {e}");
}
