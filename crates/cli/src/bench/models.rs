//! `fedcluster bench model-steps`: one local training step (forward, backward
//! and an SGD update on a minibatch) of every network at the papers' sizes, on
//! each backend that has it, single-threaded, as achieved GFLOP/s against one
//! core's peak. A step is timed inside a call of `steps` steps, so the
//! per-call upload and download of the parameters is amortised as in a client
//! round.

use std::time::Instant;

use anyhow::Result;
use rand::Rng as _;

use fedcluster_core::train::{MinibatchOptimizer, MinibatchSpec, OptimizerState, minibatch};
use fedcluster_core::{Batch, ImageShape, Model, Purpose, Targets, Workspace, stream};
use fedcluster_nn::{Backend, Net, nets};

use super::{BenchOptions, BenchReport};

/// Points of the synthetic client each step samples its minibatch from.
const CLIENT_POINTS: usize = 500;

/// One network on one backend: its label, the model, its minibatch size, the
/// vocabulary of its token inputs (for the LSTM) and the forward flops per
/// sample of its input layer, whose input gradient no backend computes.
struct Case {
    label: String,
    model: Box<dyn Model>,
    batch: usize,
    classes: usize,
    vocab: Option<usize>,
    input_layer_flops: u64,
}

/// Forward flops per sample of a convolution with `out_side`² outputs of
/// `out` channels, each from a `kernel`² x `input` window.
fn conv_flops(out_side: u64, kernel: u64, input: u64, out: u64) -> u64 {
    2 * out_side * out_side * kernel * kernel * input * out
}

fn image(side: usize, channels: usize) -> ImageShape {
    ImageShape {
        height: side,
        width: side,
        channels,
    }
}

fn cases() -> Result<Vec<Case>> {
    let cpu = |net| fedcluster_nn::build(net, Backend::Cpu, None).map_err(anyhow::Error::from);
    let mlp = nets::Mlp {
        input: 784,
        hidden: 200,
        classes: 10,
    };
    let cifar = nets::Cnn {
        image: image(32, 3),
        kernel: 5,
        padding: 0,
        conv1: 32,
        conv2: 64,
        hidden: 512,
        classes: 10,
    };
    let femnist = nets::Cnn {
        image: image(28, 1),
        kernel: 5,
        padding: 2,
        conv1: 32,
        conv2: 64,
        hidden: 2048,
        classes: 62,
    };
    let resnet = nets::ResNet9 {
        image: image(32, 3),
        width: 64,
        classes: 10,
    };
    let lstm = nets::CharLstm {
        vocab: 80,
        seq_len: 80,
        embedding: 8,
        hidden: 256,
        layers: 2,
    };
    let native_cifar = fedcluster_models::Cnn::new(fedcluster_models::Cnn {
        height: 32,
        width: 32,
        channels: 3,
        kernel: 5,
        conv1: 32,
        conv2: 64,
        hidden: 512,
        classes: 10,
        augmentation: None,
    })?;
    let case = |label: &str, model, batch, classes, vocab, input_layer_flops| Case {
        label: label.into(),
        model,
        batch,
        classes,
        vocab,
        input_layer_flops,
    };
    let mlp_input = 2 * 784 * 200;
    let cifar_input = conv_flops(28, 5, 3, 32);
    Ok(vec![
        case(
            "mlp 784-200-10, native",
            Box::new(fedcluster_models::Mlp::new(784, 200, 10)?),
            100,
            10,
            None,
            mlp_input,
        ),
        case(
            "mlp 784-200-10, ndarray",
            cpu(Net::Mlp(mlp))?,
            100,
            10,
            None,
            mlp_input,
        ),
        case(
            "cnn-cifar 32x32x3, native",
            Box::new(native_cifar),
            50,
            10,
            None,
            cifar_input,
        ),
        case(
            "cnn-cifar 32x32x3, ndarray",
            cpu(Net::Cnn(cifar))?,
            50,
            10,
            None,
            cifar_input,
        ),
        case(
            "cnn-femnist 28x28x1, ndarray",
            cpu(Net::Cnn(femnist))?,
            50,
            62,
            None,
            conv_flops(28, 5, 1, 32),
        ),
        case(
            "resnet9 32x32x3, ndarray",
            cpu(Net::ResNet9(resnet))?,
            50,
            10,
            None,
            conv_flops(32, 3, 3, 64),
        ),
        case(
            "char-lstm 80x80, ndarray",
            cpu(Net::CharLstm(lstm))?,
            50,
            80,
            Some(80),
            0,
        ),
        // SR-FCA Table 3's step: minibatches of 10 windows.
        case(
            "char-lstm 80x80 batch 10, ndarray",
            cpu(Net::CharLstm(lstm))?,
            10,
            80,
            Some(80),
            0,
        ),
    ])
}

/// Times `options.rounds` calls of 5 SGD steps of every case.
pub(super) fn model_steps(options: &BenchOptions) -> Result<Vec<BenchReport>> {
    let steps = 5;
    let mut reports = Vec::new();
    for case in cases()? {
        let d = case.model.input_dim();
        let mut rng = stream(1, Purpose::ClientData, 0, 0);
        let x: Vec<f32> = (0..CLIENT_POINTS * d)
            .map(|_| match case.vocab {
                Some(v) => rng.random_range(0..v) as f32,
                None => rng.random_range(-1.0..1.0),
            })
            .collect();
        let y: Vec<u32> = (0..CLIENT_POINTS)
            .map(|_| rng.random_range(0..case.classes as u32))
            .collect();
        let data = Batch::new(&x, Targets::Class(&y), d)?;
        let mut params = vec![0.0; case.model.num_params()];
        case.model
            .init(&mut stream(1, Purpose::Init, 0, 0), &mut params);
        let optimizer = MinibatchOptimizer::Sgd {
            momentum: 0.9,
            weight_decay: 0.0,
        };
        let spec = MinibatchSpec {
            optimizer,
            lr: 1e-3,
            batch_size: case.batch,
            pull: None,
        };
        let (mut state, mut ws) = (OptimizerState::default(), Workspace::default());
        let mut times = Vec::new();
        for round in 0..options.rounds + 1 {
            let mut rng = stream(1, Purpose::Client, round as u64, 0);
            let start = Instant::now();
            let loss = minibatch::steps(
                case.model.as_ref(),
                &mut params,
                data,
                &spec,
                steps,
                &mut state,
                &mut rng,
                &mut ws,
            );
            anyhow::ensure!(loss.is_finite(), "{}: training diverged", case.label);
            if round > 0 {
                times.push(start.elapsed().as_secs_f64() / steps as f64);
            }
        }
        // Forward, weight gradients and input gradients, less the input layer's.
        let per_sample = 3 * case.model.forward_flops_per_sample() - case.input_layer_flops;
        let flops = per_sample as f64 * case.batch as f64;
        let mut report = BenchReport::of_steps(&case.label, &times, flops);
        report.split = vec![("parameters".into(), case.model.num_params() as f64)];
        reports.push(report);
    }
    Ok(reports)
}
