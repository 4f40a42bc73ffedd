//! Every network on burn's two CPU backends trains bit-identically whatever
//! the thread count: four clients' local training (SGD with momentum, a few
//! minibatch steps, each client from the same start on its own data and its
//! own stream) run on a rayon pool of 1 thread and of 2 threads, as the
//! simulator runs clients, give the same parameters bit for bit. Neither
//! backend uses threads inside an operation (`fedcluster_nn::device`), so the
//! pool only decides which client runs where. The two backends also agree
//! with each other, to rounding, on the loss and the gradient.

use fedcluster_core::ImageShape;
use fedcluster_core::train::minibatch::steps;
use fedcluster_core::train::{
    Augmentation, Jitter, MinibatchOptimizer, MinibatchSpec, OptimizerState,
};
use fedcluster_core::{Batch, Model, Purpose, Targets, Workspace, stream};
use fedcluster_nn::{Backend, Net, nets};
use rand::Rng as _;
use rayon::prelude::*;

const CLIENTS: u64 = 4;
const POINTS: usize = 12;
const STEPS: usize = 3;

/// One client's features (or token ids below `vocab`) and classes.
struct Client {
    x: Vec<f32>,
    y: Vec<u32>,
}

fn clients(model: &dyn Model, classes: usize, vocab: Option<usize>) -> Vec<Client> {
    let d = model.input_dim();
    (0..CLIENTS)
        .map(|i| {
            let mut rng = stream(3, Purpose::TestData, i, 0);
            let x = (0..POINTS * d)
                .map(|_| match vocab {
                    Some(v) => rng.random_range(0..v) as f32,
                    None => rng.random_range(-1.0..1.0),
                })
                .collect();
            let y = (0..POINTS)
                .map(|_| rng.random_range(0..classes as u32))
                .collect();
            Client { x, y }
        })
        .collect()
}

/// Every client's parameters after `STEPS` minibatch steps from `start`, the
/// clients run on a rayon pool of `threads` threads.
fn train(model: &dyn Model, clients: &[Client], start: &[f32], threads: usize) -> Vec<Vec<f32>> {
    let spec = MinibatchSpec {
        optimizer: MinibatchOptimizer::Sgd {
            momentum: 0.9,
            weight_decay: 0.0,
        },
        lr: 0.05,
        batch_size: 4,
        pull: None,
        schedule: None,
        decay: None,
    };
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .expect("a rayon pool");
    pool.install(|| {
        clients
            .par_iter()
            .enumerate()
            .map(|(i, c)| {
                let batch = Batch::new(&c.x, Targets::Class(&c.y), model.input_dim())
                    .expect("a batch of the model's width");
                let mut params = start.to_vec();
                let mut rng = stream(5, Purpose::Client, 0, i as u64);
                let (mut state, mut ws) = (OptimizerState::default(), Workspace::default());
                let loss = steps(
                    model,
                    &mut params,
                    batch,
                    &spec,
                    STEPS,
                    &mut state,
                    &mut rng,
                    &mut ws,
                );
                assert!(loss.is_finite(), "client {i}: loss {loss}");
                params
            })
            .collect()
    })
}

fn bits(models: &[Vec<f32>]) -> Vec<Vec<u32>> {
    models
        .iter()
        .map(|p| p.iter().map(|v| v.to_bits()).collect())
        .collect()
}

/// `net` (with `augmentation`) on both CPU backends: bit-identical on 1 and 2
/// threads, and the backends' losses and gradients equal to rounding.
fn check(net: Net, augmentation: Option<Augmentation>, classes: usize, vocab: Option<usize>) {
    let mut grads = Vec::new();
    for backend in [Backend::Cpu, Backend::Flex] {
        let model = fedcluster_nn::build(net, backend, augmentation).expect("a small network");
        let mut start = vec![0.0; model.num_params()];
        model.init(&mut stream(1, Purpose::Init, 0, 0), &mut start);
        let data = clients(model.as_ref(), classes, vocab);
        let one = train(model.as_ref(), &data, &start, 1);
        let two = train(model.as_ref(), &data, &start, 2);
        assert!(
            one.iter().all(|p| p != &start),
            "{backend:?}: training left a client's parameters unchanged"
        );
        assert_eq!(
            bits(&one),
            bits(&two),
            "{backend:?}: 1 and 2 threads differ"
        );
        let c = &data[0];
        let batch = Batch::new(&c.x, Targets::Class(&c.y), model.input_dim()).unwrap();
        let mut grad = vec![0.0; model.num_params()];
        let loss = model.loss_grad(&start, batch, &mut grad, &mut Workspace::default());
        grads.push((loss, grad));
    }
    let ((l0, g0), (l1, g1)) = (&grads[0], &grads[1]);
    assert!(
        (l0 - l1).abs() <= 1e-5 * l0.abs().max(1.0),
        "loss {l0} vs {l1}"
    );
    let scale = g0.iter().fold(0f32, |m, v| m.max(v.abs())).max(1e-6);
    for (i, (a, b)) in g0.iter().zip(g1).enumerate() {
        assert!(
            (a - b).abs() <= 1e-4 * scale,
            "gradient {i}: ndarray {a}, flex {b}"
        );
    }
}

fn image(side: usize, channels: usize) -> ImageShape {
    ImageShape {
        height: side,
        width: side,
        channels,
    }
}

#[test]
fn mlp_is_bit_identical_across_threads() {
    let net = Net::Mlp(nets::Mlp {
        input: 12,
        hidden: 8,
        classes: 3,
    });
    check(net, None, 3, None);
}

#[test]
fn cnn_is_bit_identical_across_threads() {
    let net = Net::Cnn(nets::Cnn {
        image: image(8, 2),
        kernel: 3,
        padding: 1,
        conv1: 4,
        conv2: 6,
        hidden: 10,
        classes: 3,
    });
    check(net, None, 3, None);
}

#[test]
fn resnet9_with_augmentation_is_bit_identical_across_threads() {
    let shape = image(8, 3);
    let net = Net::ResNet9(nets::ResNet9 {
        image: shape,
        width: 2,
        classes: 3,
    });
    let augmentation = Augmentation {
        shape,
        crop_padding: 1,
        flip: true,
        jitter: Jitter {
            brightness: 0.1,
            contrast: Some((0.5, 1.5)),
            cutout: 2,
        },
    };
    check(net, Some(augmentation), 3, None);
}

#[test]
fn char_lstm_is_bit_identical_across_threads() {
    let net = Net::CharLstm(nets::CharLstm {
        vocab: 7,
        seq_len: 5,
        embedding: 3,
        hidden: 6,
        layers: 2,
    });
    check(net, None, 7, Some(7));
}
