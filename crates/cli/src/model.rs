//! The `[model]` table and the model it builds for a data set: the hand-written
//! models of `fedcluster-models` (`backend = "native"`) and the networks of
//! `fedcluster-nn` on burn's CPU (`"ndarray"`) or CUDA (`"cuda"`) backend. Every
//! size is checked before the run, with the key named.

use anyhow::{Result, anyhow, bail};
use serde::{Deserialize, Serialize};

use fedcluster_core::Model;
use fedcluster_core::local::{Augmentation, ImageShape};
use fedcluster_data::Task;
use fedcluster_models::{Cnn, LinearRegression, LogisticRegression, Mlp};
use fedcluster_nn::{Backend, Net, nets};

/// Model architectures; input and output sizes come from the data.
///
/// Every variant is a struct variant, even without keys: serde ignores the
/// other keys of an internally tagged unit variant, so `linear` would accept
/// any key.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq)]
#[serde(tag = "kind", rename_all = "kebab-case", deny_unknown_fields)]
pub enum ModelConfig {
    /// Linear regression, squared loss, no bias.
    Linear {},
    /// Multinomial logistic regression.
    Logistic {},
    /// One ReLU hidden layer and a softmax output (784-200-10 on MNIST).
    Mlp {
        /// Hidden units.
        #[serde(default = "default_hidden")]
        hidden: usize,
        /// Where it runs (default: native).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        backend: Option<ModelBackend>,
    },
    /// Two valid `k x k` convolutions with ReLU and 2x2 max-pooling, a dense ReLU
    /// layer and a softmax output, on square channels-last images (the IFCA
    /// paper's CNN).
    Cnn {
        /// Image channels (the side is inferred from the data's dimension).
        #[serde(default = "one")]
        channels: usize,
        /// Kernel side.
        #[serde(default = "five")]
        kernel: usize,
        /// Channels of the first convolution.
        #[serde(default = "c32")]
        conv1: usize,
        /// Channels of the second convolution.
        #[serde(default = "c64")]
        conv2: usize,
        /// Units of the dense layer.
        #[serde(default = "c512")]
        hidden: usize,
        /// Where it runs (default: native).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        backend: Option<ModelBackend>,
        /// Augmentation of local training.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        augment: Option<AugmentConfig>,
    },
    /// The IFCA and CFL-MGD CIFAR network: `cnn` on 32x32x3 (2 convolutions and 2
    /// dense layers).
    CnnCifar {
        /// Image channels.
        #[serde(default = "three")]
        channels: usize,
        /// Units of the dense layer.
        #[serde(default = "c512")]
        hidden: usize,
        /// Where it runs (default: native).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        backend: Option<ModelBackend>,
        /// Augmentation of local training (the papers: `{ crop_padding = 4, flip = true }`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        augment: Option<AugmentConfig>,
    },
    /// LEAF's FEMNIST CNN: 5x5 convolutions of 32 and 64 channels with same
    /// padding, each with 2x2 max-pooling, dense 2048, softmax.
    CnnFemnist {
        /// Image channels.
        #[serde(default = "one")]
        channels: usize,
        /// Units of the dense layer.
        #[serde(default = "c2048")]
        hidden: usize,
        /// Where it runs (default: ndarray).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        backend: Option<ModelBackend>,
    },
    /// ResNet9 (Page 2019), the SR-FCA paper's CIFAR network.
    Resnet9 {
        /// Image channels.
        #[serde(default = "three")]
        channels: usize,
        /// Channels of the first convolution (Page: 64).
        #[serde(default = "c64")]
        width: usize,
        /// Where it runs (default: ndarray).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        backend: Option<ModelBackend>,
        /// Augmentation of local training.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        augment: Option<AugmentConfig>,
    },
    /// LEAF's Shakespeare network: embedding, stacked LSTM, dense to the next
    /// character (vocabulary and window length from the data).
    CharLstm {
        /// Embedding dimension.
        #[serde(default = "eight")]
        embedding: usize,
        /// Hidden units per layer.
        #[serde(default = "c256")]
        hidden: usize,
        /// Stacked layers.
        #[serde(default = "two")]
        layers: usize,
        /// Where it runs (default: ndarray).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        backend: Option<ModelBackend>,
    },
}

impl Default for ModelConfig {
    fn default() -> Self {
        ModelConfig::Linear {}
    }
}

/// Where a model runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ModelBackend {
    /// The hand-written models (linear, logistic, MLP, CNN).
    Native,
    /// burn's CPU backend.
    Ndarray,
    /// burn's CUDA backend (a build with `--features cuda` and a GPU).
    Cuda,
}

/// Training-time image augmentation: a random crop of the zero-padded image and
/// a random horizontal flip, drawn from the client's stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AugmentConfig {
    /// Padding of the random crop (0: no crop).
    #[serde(default)]
    pub crop_padding: usize,
    /// Random left-right flips.
    #[serde(default)]
    pub flip: bool,
}

fn default_hidden() -> usize {
    200
}
fn one() -> usize {
    1
}
fn two() -> usize {
    2
}
fn three() -> usize {
    3
}
fn five() -> usize {
    5
}
fn eight() -> usize {
    8
}
fn c32() -> usize {
    32
}
fn c64() -> usize {
    64
}
fn c256() -> usize {
    256
}
fn c512() -> usize {
    512
}
fn c2048() -> usize {
    2048
}

/// Square channels-last images of `channels` channels making up `dim` features.
fn square(dim: usize, channels: usize) -> Result<ImageShape> {
    let pixels = dim / channels.max(1);
    let side = (pixels as f64).sqrt().round() as usize;
    if channels == 0 || side * side * channels != dim {
        bail!(
            "field `model.channels`: {dim} features are not square images of {channels} channel(s)"
        );
    }
    Ok(ImageShape {
        height: side,
        width: side,
        channels,
    })
}

fn classes_of(task: Task, kind: &str) -> Result<usize> {
    match task {
        Task::Classification { classes } => Ok(classes),
        Task::Regression => bail!("field `model.kind`: `{kind}` needs a classification data set"),
    }
}

/// The configured model for data of `dim` features and `task`.
pub fn build_model(config: ModelConfig, dim: usize, task: Task) -> Result<Box<dyn Model>> {
    let d = dim;
    let augment = |a: Option<AugmentConfig>, shape: ImageShape| {
        a.map(|a| Augmentation {
            shape,
            crop_padding: a.crop_padding,
            flip: a.flip,
        })
    };
    let nn = |net: Net, backend: Option<ModelBackend>, augmentation| {
        let backend = match backend.unwrap_or(ModelBackend::Ndarray) {
            ModelBackend::Native => bail!(
                "field `model.backend`: this network has no native implementation; use \"ndarray\" or \"cuda\""
            ),
            ModelBackend::Ndarray => Backend::Cpu,
            ModelBackend::Cuda => Backend::Cuda,
        };
        fedcluster_nn::build(net, backend, augmentation).map_err(|e| match e {
            fedcluster_nn::NnError::Backend(why) => anyhow!("field `model.backend`: {why}"),
            invalid => anyhow!("{invalid}"),
        })
    };
    let native = |backend: Option<ModelBackend>| backend.is_none_or(|b| b == ModelBackend::Native);
    Ok(match config {
        ModelConfig::Linear {} | ModelConfig::Logistic {} => {
            let kind = if matches!(config, ModelConfig::Linear {}) {
                "linear"
            } else {
                "logistic"
            };
            match (config, task) {
                (ModelConfig::Linear {}, Task::Regression) => Box::new(LinearRegression::new(d)?),
                (ModelConfig::Logistic {}, Task::Classification { classes }) => {
                    Box::new(LogisticRegression::new(d, classes)?)
                }
                _ => bail!(
                    "field `model.kind`: `{kind}` needs a {} data set",
                    if kind == "linear" {
                        "regression"
                    } else {
                        "classification"
                    }
                ),
            }
        }
        ModelConfig::Mlp { hidden, backend } => {
            let classes = classes_of(task, "mlp")?;
            if hidden == 0 {
                bail!("field `model.hidden`: must be at least 1, got 0");
            }
            if native(backend) {
                Box::new(Mlp::new(d, hidden, classes)?)
            } else {
                nn(
                    Net::Mlp(nets::Mlp {
                        input: d,
                        hidden,
                        classes,
                    }),
                    backend,
                    None,
                )?
            }
        }
        ModelConfig::Cnn {
            channels,
            kernel,
            conv1,
            conv2,
            hidden,
            backend,
            augment: a,
        } => {
            let classes = classes_of(task, "cnn")?;
            let image = square(d, channels)?;
            cnn(
                image,
                (kernel, conv1, conv2, hidden),
                classes,
                backend,
                augment(a, image),
                &nn,
            )?
        }
        ModelConfig::CnnCifar {
            channels,
            hidden,
            backend,
            augment: a,
        } => {
            let classes = classes_of(task, "cnn-cifar")?;
            let image = square(d, channels)?;
            cnn(
                image,
                (5, 32, 64, hidden),
                classes,
                backend,
                augment(a, image),
                &nn,
            )?
        }
        ModelConfig::CnnFemnist {
            channels,
            hidden,
            backend,
        } => {
            let classes = classes_of(task, "cnn-femnist")?;
            let image = square(d, channels)?;
            let net = nets::Cnn {
                image,
                kernel: 5,
                padding: 2,
                conv1: 32,
                conv2: 64,
                hidden,
                classes,
            };
            nn(Net::Cnn(net), backend, None)?
        }
        ModelConfig::Resnet9 {
            channels,
            width,
            backend,
            augment: a,
        } => {
            let classes = classes_of(task, "resnet9")?;
            let image = square(d, channels)?;
            nn(
                Net::ResNet9(nets::ResNet9 {
                    image,
                    width,
                    classes,
                }),
                backend,
                augment(a, image),
            )?
        }
        ModelConfig::CharLstm {
            embedding,
            hidden,
            layers,
            backend,
        } => {
            let vocab = classes_of(task, "char-lstm")?;
            let net = nets::CharLstm {
                vocab,
                seq_len: d,
                embedding,
                hidden,
                layers,
            };
            nn(Net::CharLstm(net), backend, None)?
        }
    })
}

/// The two-convolution CNN, native (valid padding) or on burn.
fn cnn(
    image: ImageShape,
    (kernel, conv1, conv2, hidden): (usize, usize, usize, usize),
    classes: usize,
    backend: Option<ModelBackend>,
    augmentation: Option<Augmentation>,
    nn: &dyn Fn(Net, Option<ModelBackend>, Option<Augmentation>) -> Result<Box<dyn Model>>,
) -> Result<Box<dyn Model>> {
    let net = nets::Cnn {
        image,
        kernel,
        padding: 0,
        conv1,
        conv2,
        hidden,
        classes,
    };
    // The burn network's checks name the keys for both backends.
    Net::Cnn(net).check().map_err(|e| anyhow!("{e}"))?;
    if backend.is_some_and(|b| b != ModelBackend::Native) {
        return nn(Net::Cnn(net), backend, augmentation);
    }
    let shape = Cnn {
        height: image.height,
        width: image.width,
        channels: image.channels,
        kernel,
        conv1,
        conv2,
        hidden,
        classes,
        augmentation,
    };
    Ok(Box::new(
        Cnn::new(shape).map_err(|e| anyhow!("field `model`: {e}"))?,
    ))
}
