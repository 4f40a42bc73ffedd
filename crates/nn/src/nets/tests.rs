//! The architectures against references: parameter counts of the papers'
//! networks (as PyTorch counts them), gradients against finite differences,
//! the flat round trip, the native models on the same flat parameters, and
//! the device training loops against the flat loop.

use fedcluster_core::ImageShape;
use fedcluster_core::train::minibatch::flat_steps;
use fedcluster_core::train::{
    Augmentation, Jitter, MinibatchOptimizer, MinibatchSpec, OptimizerState,
};
use fedcluster_core::{Batch, Model, Purpose, Targets, Workspace, stream};
use rand::Rng as _;

use super::{CharLstm, Cnn, Mlp, ResNet9};
use crate::device::Cpu;
use crate::flat::{Params, num_params};
use crate::net::{Architecture, NetModel};

fn cpu<A: Architecture>(arch: A) -> NetModel<A, Cpu> {
    NetModel::new(arch, Default::default(), None)
}

fn image(side: usize, channels: usize) -> ImageShape {
    ImageShape {
        height: side,
        width: side,
        channels,
    }
}

/// Seeded features in `[-1, 1)` (or token ids below `vocab`) and classes.
fn data(
    n: usize,
    d: usize,
    classes: usize,
    vocab: Option<usize>,
    seed: u64,
) -> (Vec<f32>, Vec<u32>) {
    let mut rng = stream(seed, Purpose::TestData, 0, 0);
    let x = (0..n * d)
        .map(|_| match vocab {
            Some(v) => rng.random_range(0..v) as f32,
            None => rng.random_range(-1.0..1.0),
        })
        .collect();
    let y = (0..n)
        .map(|_| rng.random_range(0..classes as u32))
        .collect();
    (x, y)
}

fn params<M: Model + ?Sized>(m: &M, seed: u64) -> Vec<f32> {
    let mut p = vec![0.0; m.num_params()];
    m.init(&mut stream(seed, Purpose::Init, 0, 0), &mut p);
    p
}

#[test]
fn parameter_counts_match_the_reference_architectures() {
    // LEAF's Shakespeare model as PyTorch counts it: nn.Embedding(80, 8) = 640,
    // nn.LSTM(8, 256, num_layers=2) = 4·256·(8 + 256) + 4·256·(256 + 256) + 4 · 4·256
    // = 799,744 (two biases per layer), nn.Linear(256, 80) = 20,560: 819,920.
    let lstm = CharLstm {
        vocab: 80,
        seq_len: 80,
        embedding: 8,
        hidden: 256,
        layers: 2,
    };
    assert_eq!(num_params(&lstm.layout()), 819_920);
    // LEAF's FEMNIST CNN: conv 5x5x1x32 + 32 = 832, conv 5x5x32x64 + 64 = 51,264,
    // dense 7·7·64 x 2048 + 2048 = 6,424,576, dense 2048 x 62 + 62 = 127,038:
    // 6,603,710, the count LEAF's TensorFlow model reports.
    let femnist = Cnn {
        image: image(28, 1),
        kernel: 5,
        padding: 2,
        conv1: 32,
        conv2: 64,
        hidden: 2048,
        classes: 62,
    };
    assert_eq!(num_params(&femnist.layout()), 6_603_710);
    // The IFCA CNN on 32x32x3: conv 5x5x3x32 + 32 = 2,432, conv 5x5x32x64 + 64 =
    // 51,264, dense 5·5·64 x 512 + 512 = 819,712, dense 512 x 10 + 10 = 5,130.
    let cifar = Cnn {
        image: image(32, 3),
        kernel: 5,
        padding: 0,
        conv1: 32,
        conv2: 64,
        hidden: 512,
        classes: 10,
    };
    assert_eq!(num_params(&cifar.layout()), 878_538);
    // Page's ResNet9: conv weights 9·(3·64 + 64·128 + 2·128² + 128·256 + 256·512 +
    // 2·512²) = 6,563,520, batch-norm scales and shifts 2·2,240 = 4,480, linear
    // 512 x 10 without bias = 5,120: 6,573,120 trainable (the 6.57M usually quoted),
    // plus the 4,480 running means and variances kept in the flat vector.
    let resnet = ResNet9 {
        image: image(32, 3),
        width: 64,
        classes: 10,
    };
    let layout = resnet.layout();
    let trainable: usize = layout.iter().filter(|s| s.trainable).map(|s| s.len()).sum();
    assert_eq!((trainable, num_params(&layout)), (6_573_120, 6_577_600));
    // The MLP 784-200-10: 157,000 + 200 + 2,000 + 10.
    let mlp = Mlp {
        input: 784,
        hidden: 200,
        classes: 10,
    };
    assert_eq!(num_params(&mlp.layout()), 159_010);
}

#[test]
fn flat_parameters_round_trip_bit_for_bit() {
    let m = cpu(ResNet9 {
        image: image(8, 3),
        width: 2,
        classes: 3,
    });
    // (Gradients against finite differences: tests/gradients.rs, in f64.)
    let p = params(&m, 1);
    let loaded = Params::<burn::backend::NdArray<f32>>::load(m.layout(), &p, &Default::default());
    let mut back = vec![f32::NAN; p.len()];
    loaded.write(&mut back);
    assert_eq!(
        p.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
        back.iter().map(|v| v.to_bits()).collect::<Vec<_>>()
    );
}

/// The native model and the network agree on the same flat parameters and batch.
fn agree(native: &dyn Model, net: &dyn Model, n: usize, seed: u64) {
    assert_eq!(native.num_params(), net.num_params());
    let p = params(net, seed);
    let mut native_init = vec![0.0; p.len()];
    native.init(&mut stream(seed, Purpose::Init, 0, 0), &mut native_init);
    assert_eq!(
        native_init, p,
        "the same initialisation from the same stream"
    );
    let (x, y) = data(n, net.input_dim(), 4, None, seed);
    let b = Batch::new(&x, Targets::Class(&y), net.input_dim()).unwrap();
    let ws = &mut Workspace::default();
    let (l1, l2) = (native.loss(&p, b, ws), net.loss(&p, b, ws));
    assert!(
        (l1 - l2).abs() < 1e-5 * l1.abs().max(1.0),
        "loss {l1} vs {l2}"
    );
    let (mut g1, mut g2) = (vec![0.0; p.len()], vec![0.0; p.len()]);
    native.loss_grad(&p, b, &mut g1, ws);
    net.loss_grad(&p, b, &mut g2, ws);
    let scale = g1.iter().fold(0.0f32, |a, v| a.max(v.abs()));
    let worst = g1
        .iter()
        .zip(&g2)
        .fold(0.0f32, |a, (u, v)| a.max((u - v).abs()));
    assert!(
        worst < 1e-5 * scale.max(1.0),
        "gradient differs by {worst} (scale {scale})"
    );
    assert_eq!(
        native.count_correct(&p, b, ws),
        net.count_correct(&p, b, ws)
    );
    // Full-batch training: the native model's exact shortcut against plain
    // gradient descent on the device.
    let (mut a, mut c) = (p.clone(), p.clone());
    let la = native.train(&mut a, b, 0.1, 5, ws);
    let lc = net.train(&mut c, b, 0.1, 5, ws);
    assert!(
        (la - lc).abs() < 1e-5 * la.abs().max(1.0),
        "start loss {la} vs {lc}"
    );
    let worst = a
        .iter()
        .zip(&c)
        .fold(0.0f32, |m, (u, v)| m.max((u - v).abs()));
    assert!(
        worst < 1e-4,
        "after 5 steps the parameters differ by {worst}"
    );
}

#[test]
fn the_mlp_and_the_cnn_agree_with_the_native_models() {
    let native = fedcluster_models::Mlp::new(10, 6, 4).unwrap();
    agree(
        &native,
        &cpu(Mlp {
            input: 10,
            hidden: 6,
            classes: 4,
        }),
        9,
        7,
    );
    let shape = fedcluster_models::Cnn {
        height: 10,
        width: 10,
        channels: 2,
        kernel: 3,
        padding: 0,
        conv1: 3,
        conv2: 4,
        hidden: 5,
        classes: 4,
        augmentation: None,
    };
    let native = fedcluster_models::Cnn::new(shape).unwrap();
    let net = Cnn {
        image: image(10, 2),
        kernel: 3,
        padding: 0,
        conv1: 3,
        conv2: 4,
        hidden: 5,
        classes: 4,
    };
    agree(&native, &cpu(net), 6, 8);
}

#[test]
fn device_training_follows_the_flat_loop() {
    let shape = image(6, 1);
    let augmentation = Some(Augmentation {
        shape,
        crop_padding: 1,
        flip: true,
        jitter: Jitter::default(),
    });
    let net = Cnn {
        image: shape,
        kernel: 3,
        padding: 1,
        conv1: 2,
        conv2: 2,
        hidden: 4,
        classes: 3,
    };
    let m = NetModel::<_, Cpu>::new(net, Default::default(), augmentation);
    let (x, y) = data(10, m.input_dim(), 3, None, 9);
    let b = Batch::new(&x, Targets::Class(&y), m.input_dim()).unwrap();
    let p = params(&m, 9);
    for optimizer in [
        MinibatchOptimizer::Adam,
        MinibatchOptimizer::Sgd {
            momentum: 0.9,
            weight_decay: 1e-3,
        },
    ] {
        let spec = MinibatchSpec {
            optimizer,
            lr: 0.05,
            batch_size: 4,
            pull: None,
            schedule: None,
            decay: None,
        };
        let run = |device: bool| {
            let (mut w, mut state) = (p.clone(), OptimizerState::default());
            let mut rng = stream(9, Purpose::Client, 0, 0);
            let ws = &mut Workspace::default();
            let loss = if device {
                m.train_minibatch(&mut w, b, &spec, 7, &mut state, &mut rng, ws)
                    .unwrap()
            } else {
                flat_steps(&m, &mut w, b, &spec, 7, &mut state, &mut rng, ws)
            };
            (loss, w, state)
        };
        let (l1, w1, s1) = run(true);
        let (l2, w2, s2) = run(false);
        assert!(
            (l1 - l2).abs() < 1e-6,
            "{optimizer:?}: first loss {l1} vs {l2}"
        );
        let worst = w1
            .iter()
            .zip(&w2)
            .fold(0.0f32, |a, (u, v)| a.max((u - v).abs()));
        assert!(worst < 1e-5, "{optimizer:?}: parameters differ by {worst}");
        assert_eq!(s1.t, s2.t);
        let worst = s1
            .first
            .iter()
            .zip(&s2.first)
            .fold(0.0f32, |a, (u, v)| a.max((u - v).abs()));
        assert!(worst < 1e-5, "{optimizer:?}: state differs by {worst}");
        // Bit-identical run to run.
        assert_eq!(run(true).1, w1);
    }
}

#[test]
fn batch_norm_trains_with_batch_statistics_and_evaluates_with_running_ones() {
    let m = cpu(ResNet9 {
        image: image(8, 1),
        width: 1,
        classes: 2,
    });
    let (x, y) = data(6, m.input_dim(), 2, None, 10);
    let b = Batch::new(&x, Targets::Class(&y), m.input_dim()).unwrap();
    let p = params(&m, 10);
    let ws = &mut Workspace::default();
    // Fresh running statistics (mean 0, variance 1) are not the batch's.
    assert!((m.loss(&p, b, ws) - m.training_loss(&p, b)).abs() > 1e-6);
    let mut trained = p.clone();
    m.train(&mut trained, b, 0.01, 3, ws);
    let at = m.layout()[..3].iter().map(|s| s.len()).sum::<usize>();
    let (mean_before, mean_after) = (&p[at..at + 1], &trained[at..at + 1]);
    assert_eq!(mean_before, [0.0]);
    assert_ne!(
        mean_after,
        [0.0],
        "the first running mean moved towards the batch's"
    );
}

#[test]
fn impossible_shapes_name_their_key() {
    use crate::{Backend, Net, NnError, build};
    let err = |net| match build(net, Backend::Cpu, None) {
        Err(NnError::Invalid { field, .. }) => field,
        other => panic!("{:?}", other.map(|m| m.name())),
    };
    assert_eq!(
        err(Net::Mlp(Mlp {
            input: 4,
            hidden: 0,
            classes: 2
        })),
        "hidden"
    );
    assert_eq!(
        err(Net::Cnn(Cnn {
            image: image(6, 1),
            kernel: 5,
            padding: 0,
            conv1: 2,
            conv2: 2,
            hidden: 3,
            classes: 2
        })),
        "kernel"
    );
    assert_eq!(
        err(Net::ResNet9(ResNet9 {
            image: image(12, 3),
            width: 4,
            classes: 2
        })),
        "channels"
    );
    assert_eq!(
        err(Net::CharLstm(CharLstm {
            vocab: 5,
            seq_len: 3,
            embedding: 0,
            hidden: 4,
            layers: 1
        })),
        "embedding"
    );
    let cuda = build(
        Net::Mlp(Mlp {
            input: 4,
            hidden: 2,
            classes: 2,
        }),
        Backend::Cuda,
        None,
    );
    assert!(matches!(cuda, Err(NnError::Backend(_))), "no CUDA here");
}
