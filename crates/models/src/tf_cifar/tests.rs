//! The IFCA CIFAR network: its size, gradients against finite differences,
//! the loss through the input stage and label smoothing, and its own
//! minibatch loop against the flat loop.

use fedcluster_core::train::minibatch::flat_steps;
use fedcluster_core::train::{MinibatchOptimizer, Normalize};
use fedcluster_core::{ImageShape, Purpose, Targets, stream};

use super::*;
use crate::cnn::conv_path::ConvPath;
use crate::gradcheck::max_rel_error;
use crate::testutil::{classes, normal, rng};

fn net(raw: usize, crop: usize, label_smoothing: f32) -> TfCifarCnn {
    TfCifarCnn::new(TfCifarCnn {
        stage: InputStage {
            raw: ImageShape {
                height: raw,
                width: raw,
                channels: 2,
            },
            size: (crop, crop),
            standardize: true,
            normalize: None,
        },
        filters: 3,
        dense1: 5,
        dense2: 4,
        classes: 3,
        label_smoothing,
        augmentation: None,
    })
    .unwrap()
}

fn params(model: &TfCifarCnn, seed: u64) -> Vec<f32> {
    let mut p = vec![0.0; model.num_params()];
    // Larger than the tutorial's start, so that every layer matters.
    model.init(&mut rng(seed), &mut p);
    p.iter_mut().for_each(|v| *v *= 8.0);
    p
}

#[test]
fn the_tutorial_network_has_its_size() {
    let full = TfCifarCnn::new(TfCifarCnn {
        stage: InputStage {
            raw: ImageShape {
                height: 32,
                width: 32,
                channels: 3,
            },
            size: (24, 24),
            standardize: true,
            normalize: None,
        },
        filters: 64,
        dense1: 384,
        dense2: 192,
        classes: 10,
        label_smoothing: 0.0,
        augmentation: None,
    })
    .unwrap();
    // conv1 64x(75+1), conv2 64x(1600+1), local3 384x(6x6x64+1), local4
    // 192x(384+1), softmax_linear 10x(192+1): the tutorial's 1,068,298.
    assert_eq!(full.num_params(), 1_068_298);
    assert_eq!(full.input_dim(), 32 * 32 * 3);
    let sizes: usize = full
        .tensors()
        .iter()
        .map(|t| t.shape.iter().product::<usize>())
        .sum();
    assert_eq!(sizes, full.num_params());
    assert_eq!(full.head_start(), full.num_params() - 10 * 193);
    for bad in [
        TfCifarCnn { filters: 0, ..full },
        TfCifarCnn { classes: 1, ..full },
        TfCifarCnn {
            label_smoothing: 1.0,
            ..full
        },
        TfCifarCnn {
            stage: InputStage {
                size: (33, 24),
                ..full.stage
            },
            ..full
        },
    ] {
        assert!(TfCifarCnn::new(bad).is_err(), "{bad:?}");
    }
}

#[test]
fn gradients_match_finite_differences() {
    for (crop, eps) in [(4, 0.0), (5, 0.1)] {
        let model = net(6, crop, eps);
        let mut r = rng(11);
        let x = normal(&mut r, 4 * model.input_dim(), 1.0);
        let y = classes(&mut r, 4, 3);
        let batch = Batch::new(&x, Targets::Class(&y), model.input_dim()).unwrap();
        let p = params(&model, 5);
        let err = max_rel_error(&model, &p, batch, 1e-3);
        assert!(
            err < 2e-2,
            "crop {crop}, smoothing {eps}: relative error {err}"
        );
    }
}

/// With 16 filters the second convolution runs by Winograd F(2x2, 5x5)
/// ([`ConvPath::choose`]); its gradient is checked the same way. The f32
/// loss's rounding grows with the width: the same net by `im2col` errs by
/// 0.031 at this step (0.027 by Winograd), so the bound is 5e-2; a wrong
/// tap or edge errs by far more.
#[test]
fn gradients_match_finite_differences_through_winograd() {
    let model = TfCifarCnn {
        filters: crate::cnn::winograd::MIN_CHANNELS,
        ..net(6, 5, 0.1)
    };
    let (c1, c2) = model.convs();
    let f = model.filters;
    assert_eq!(ConvPath::choose(&c1, f, 1), ConvPath::Im2col);
    assert_eq!(ConvPath::choose(&c2, f, 1), ConvPath::Winograd);
    let mut r = rng(12);
    let x = normal(&mut r, 4 * model.input_dim(), 1.0);
    let y = classes(&mut r, 4, 3);
    let batch = Batch::new(&x, Targets::Class(&y), model.input_dim()).unwrap();
    let p = params(&model, 6);
    let err = max_rel_error(&model, &p, batch, 1e-3);
    assert!(err < 5e-2, "relative error {err}");
}

#[test]
fn the_loss_is_label_smoothed_and_sees_only_the_standardised_window() {
    let model = net(6, 4, 0.3);
    let l = model.layout();
    // Every weight and bias 0 but the logits' biases (ln 2, 0, 0): p = (½, ¼, ¼)
    // for every image; class 0 with ε = 0.3 over 3 classes has q = (0.8, 0.1,
    // 0.1), so the loss is −(0.8 ln ½ + 0.2 ln ¼) = 1.2 ln 2.
    let mut p = vec![0.0; model.num_params()];
    p[l.b5] = 2f32.ln();
    let x = normal(&mut rng(2), 2 * model.input_dim(), 1.0);
    let batch = Batch::new(&x, Targets::Class(&[0, 0]), model.input_dim()).unwrap();
    let mut ws = Workspace::default();
    let loss = model.loss(&p, batch, &mut ws);
    assert!((loss - 1.2 * 2f64.ln()).abs() < 1e-6, "{loss}");

    // Evaluation sees the central window, standardised: changing the border
    // or mapping an image to a·x + b (a > 0) changes nothing.
    let p = params(&model, 4);
    let y = [1u32, 2];
    let loss_of = |x: &[f32], ws: &mut Workspace| {
        model.loss_and_correct(
            &p,
            Batch::new(x, Targets::Class(&y), model.input_dim()).unwrap(),
            ws,
        )
    };
    let before = loss_of(&x, &mut ws);
    let mut border = x.clone();
    border[0] += 5.0; // row 0, column 0: outside the central 4x4 of 6x6
    let scaled: Vec<f32> = x.iter().map(|v| 3.0 * v + 5.0).collect();
    assert_eq!(loss_of(&border, &mut ws), before);
    let after = loss_of(&scaled, &mut ws);
    assert!(
        (after.0 - before.0).abs() < 1e-5 && after.1 == before.1,
        "{after:?} {before:?}"
    );

    // Evaluation in chunks of EVAL_CHUNK images: the mean and count of all.
    let many = normal(&mut rng(6), (EVAL_CHUNK + 3) * model.input_dim(), 1.0);
    let labels = classes(&mut rng(7), EVAL_CHUNK + 3, 3);
    let whole = Batch::new(&many, Targets::Class(&labels), model.input_dim()).unwrap();
    let (loss, right) = model.loss_and_correct(&p, whole, &mut ws);
    let (mut sum, mut count) = (0.0, 0);
    for i in 0..labels.len() {
        let d = model.input_dim();
        let one = Batch::new(&many[i * d..(i + 1) * d], Targets::Class(&labels[i..=i]), d);
        let (l, c) = model.loss_and_correct(&p, one.unwrap(), &mut ws);
        sum += l;
        count += c.unwrap();
    }
    assert!(
        (loss - sum / labels.len() as f64).abs() < 1e-6,
        "{loss} vs {sum}"
    );
    assert_eq!(right, Some(count));

    // A normalisation after the standardisation moves the loss.
    let normalized = TfCifarCnn {
        stage: InputStage {
            normalize: Normalize::new(&[0.5, -0.5], &[2.0, 0.5]),
            ..model.stage
        },
        ..model
    };
    let b = Batch::new(&x, Targets::Class(&y), model.input_dim()).unwrap();
    assert_ne!(normalized.loss(&p, b, &mut ws), before.0);
}

#[test]
fn its_loop_takes_the_flat_loops_steps_on_the_whole_image() {
    let model = net(5, 5, 0.1);
    let mut r = rng(8);
    let x = normal(&mut r, 12 * model.input_dim(), 1.0);
    let y = classes(&mut r, 12, 3);
    let batch = Batch::new(&x, Targets::Class(&y), model.input_dim()).unwrap();
    let spec = MinibatchSpec {
        optimizer: MinibatchOptimizer::Sgd {
            momentum: 0.9,
            weight_decay: 1e-3,
        },
        lr: 0.05,
        batch_size: 5,
        pull: None,
        schedule: None,
        decay: None,
    };
    let start = params(&model, 1);
    let run = |own: bool| {
        let (mut p, mut state) = (start.clone(), OptimizerState::default());
        let mut rng = stream(3, Purpose::Client, 0, 0);
        let mut ws = Workspace::default();
        let first = if own {
            model
                .train_minibatch(&mut p, batch, &spec, 7, &mut state, &mut rng, &mut ws)
                .unwrap()
        } else {
            flat_steps(
                &model, &mut p, batch, &spec, 7, &mut state, &mut rng, &mut ws,
            )
        };
        (first, p)
    };
    let (own, flat) = (run(true), run(false));
    assert!(own.0.is_finite());
    assert_eq!(own, flat);
    assert_ne!(own.1, start);
    // A smaller window draws its corners: other steps.
    let cropped = net(5, 4, 0.1);
    let mut p = params(&cropped, 1);
    let (mut state, mut rng) = (OptimizerState::default(), stream(3, Purpose::Client, 0, 0));
    let first = cropped.train_minibatch(
        &mut p,
        batch,
        &spec,
        3,
        &mut state,
        &mut rng,
        &mut Workspace::default(),
    );
    assert!(first.unwrap().is_finite());
}
