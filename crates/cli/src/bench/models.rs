//! The cases of `fedcluster bench model-steps` (timed in [`super::steps`]):
//! every network at the papers' sizes on each backend that has it, with the
//! minibatch its paper uses. A network on burn runs on both CPU backends,
//! `ndarray` and `flex`; a hand-written (native) model is one more `case`.

use anyhow::Result;

use fedcluster_core::{ImageShape, Model};
use fedcluster_nn::{Backend, Net, nets};

/// One network on one backend: its label, the model, its minibatch size, the
/// vocabulary of its token inputs (for the LSTM) and the forward flops per
/// sample of its input layer, whose input gradient no backend computes.
pub(super) struct Case {
    pub label: String,
    pub model: Box<dyn Model>,
    pub batch: usize,
    pub classes: usize,
    pub vocab: Option<usize>,
    pub input_layer_flops: u64,
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

/// burn's CPU backends, each a case of every network on burn.
const BURN: [(&str, Backend); 2] = [("ndarray", Backend::Cpu), ("flex", Backend::Flex)];

/// Every case whose label contains `only` (all: `None`).
pub(super) fn cases(only: Option<&str>) -> Result<Vec<Case>> {
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
        padding: 0,
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
    // The network `net` labelled `label` on each of burn's CPU backends.
    let on_burn = |label: &str, net, batch, classes, vocab, input_layer_flops| {
        BURN.iter()
            .map(|&(name, backend)| {
                let model = fedcluster_nn::build(net, backend, None)?;
                let label = format!("{label}, {name}");
                Ok(case(
                    &label,
                    model,
                    batch,
                    classes,
                    vocab,
                    input_layer_flops,
                ))
            })
            .collect::<Result<Vec<Case>>>()
    };
    let mlp_input = 2 * 784 * 200;
    let cifar_input = conv_flops(28, 5, 3, 32);
    let mut cases = vec![case(
        "mlp 784-200-10, native",
        Box::new(fedcluster_models::Mlp::new(784, 200, 10)?),
        100,
        10,
        None,
        mlp_input,
    )];
    cases.extend(on_burn(
        "mlp 784-200-10",
        Net::Mlp(mlp),
        100,
        10,
        None,
        mlp_input,
    )?);
    cases.push(case(
        "cnn-cifar 32x32x3, native",
        Box::new(native_cifar),
        50,
        10,
        None,
        cifar_input,
    ));
    cases.extend(on_burn(
        "cnn-cifar 32x32x3",
        Net::Cnn(cifar),
        50,
        10,
        None,
        cifar_input,
    )?);
    let femnist_input = conv_flops(28, 5, 1, 32);
    let native_femnist = fedcluster_models::Cnn::new(fedcluster_models::Cnn {
        padding: 2,
        hidden: 2048,
        classes: 62,
        ..fedcluster_models::Cnn::paper(28, 28, 1, 62)?
    })?;
    cases.push(case(
        "cnn-femnist 28x28x1, native",
        Box::new(native_femnist),
        50,
        62,
        None,
        femnist_input,
    ));
    cases.extend(on_burn(
        "cnn-femnist 28x28x1",
        Net::Cnn(femnist),
        50,
        62,
        None,
        femnist_input,
    )?);
    let resnet_input = conv_flops(32, 3, 3, 64);
    let native_resnet = fedcluster_models::ResNet9::new(fedcluster_models::ResNet9 {
        image: resnet.image,
        width: resnet.width,
        classes: resnet.classes,
        augmentation: None,
        normalize: None,
        label_smoothing: 0.0,
        variant: Default::default(),
    })?;
    cases.push(case(
        "resnet9 32x32x3, native",
        Box::new(native_resnet),
        50,
        10,
        None,
        resnet_input,
    ));
    cases.extend(on_burn(
        "resnet9 32x32x3",
        Net::ResNet9(resnet),
        50,
        10,
        None,
        resnet_input,
    )?);
    let native_lstm = || -> Result<Box<dyn Model>> {
        let shape = fedcluster_models::CharLstm {
            vocab: lstm.vocab,
            seq_len: lstm.seq_len,
            embedding: lstm.embedding,
            hidden: lstm.hidden,
            layers: lstm.layers,
        };
        Ok(Box::new(fedcluster_models::CharLstm::new(shape)?))
    };
    cases.push(case(
        "char-lstm 80x80, native",
        native_lstm()?,
        50,
        80,
        Some(80),
        0,
    ));
    cases.extend(on_burn(
        "char-lstm 80x80",
        Net::CharLstm(lstm),
        50,
        80,
        Some(80),
        0,
    )?);
    // SR-FCA Table 3's step: minibatches of 10 windows.
    let native10 = native_lstm()?;
    cases.push(case(
        "char-lstm 80x80 batch 10, native",
        native10,
        10,
        80,
        Some(80),
        0,
    ));
    let lstm10 = on_burn(
        "char-lstm 80x80 batch 10",
        Net::CharLstm(lstm),
        10,
        80,
        Some(80),
        0,
    )?;
    cases.extend(lstm10);
    cases.retain(|c| only.is_none_or(|o| c.label.contains(o)));
    Ok(cases)
}
