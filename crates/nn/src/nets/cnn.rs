//! Two-convolution CNNs: `k x k` convolutions (valid or same padding), each
//! with ReLU and 2x2 max-pooling, a ReLU dense layer and a softmax output, on
//! channels-last images: the native [`fedcluster_models::Cnn`] (by default)
//! or the same network on burn, in the same layout. With valid padding it is
//! the IFCA paper's CNN (and its CIFAR network on 32x32x3); with same
//! padding, 5x5 filters, dense 2048 and 62 classes it is LEAF's FEMNIST
//! network.

use burn::tensor::Tensor;
use burn::tensor::backend::Backend;
use serde::{Deserialize, Serialize};

use fedcluster_core::ImageShape;
use fedcluster_core::train::Augmentation;
use fedcluster_core::{Input, Model};

use crate::config::{self, AugmentConfig, ModelBackend};
use crate::flat::{Init, ParamSpec};
use crate::layers::{Norm, act, conv2d, dense, images, max_pool2};
use crate::net::Architecture;
use crate::{Net, NnError};

/// `[model] kind = "cnn"`: two `k x k` convolutions (valid by default) with
/// ReLU and 2x2 max-pooling, a dense ReLU layer and a softmax output, on
/// square channels-last images (the IFCA paper's CNN), native by default.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CnnConfig {
    /// Image channels (the side is inferred from the data's dimension).
    #[serde(default = "config::one")]
    pub channels: usize,
    /// Kernel side.
    #[serde(default = "config::five")]
    pub kernel: usize,
    /// Zero padding of both convolutions (0: valid; `kernel / 2`: same).
    #[serde(default)]
    pub padding: usize,
    /// Channels of the first convolution.
    #[serde(default = "config::c32")]
    pub conv1: usize,
    /// Channels of the second convolution.
    #[serde(default = "config::c64")]
    pub conv2: usize,
    /// Units of the dense layer.
    #[serde(default = "config::c512")]
    pub hidden: usize,
    /// Where it runs (default: native).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backend: Option<ModelBackend>,
    /// Augmentation of local training.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub augment: Option<AugmentConfig>,
}

impl CnnConfig {
    /// The CNN for `input`, a classification data set of images.
    pub fn build(&self, input: &Input) -> Result<Box<dyn Model>, NnError> {
        let classes = config::classes(input.task, "cnn")?;
        let image = config::image(input, self.channels)?;
        let net = Cnn {
            image,
            kernel: self.kernel,
            padding: self.padding,
            conv1: self.conv1,
            conv2: self.conv2,
            hidden: self.hidden,
            classes,
        };
        let augmentation = AugmentConfig::of(self.augment, image);
        cnn(net, self.backend, augmentation)
    }
}

/// `[model] kind = "cnn-cifar"`: `cnn` on 32x32x3 (5x5 convolutions of 32 and
/// 64 channels, dense 512, then the classes), native by default. It has the
/// shape the IFCA paper gives its CIFAR network (2 convolutions, 2 dense
/// layers), but not its sizes, which neither the IFCA nor the CFL-MGD paper
/// states: it is not either paper's network.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CnnCifarConfig {
    /// Image channels.
    #[serde(default = "config::three")]
    pub channels: usize,
    /// Units of the dense layer.
    #[serde(default = "config::c512")]
    pub hidden: usize,
    /// Where it runs (default: native).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backend: Option<ModelBackend>,
    /// Augmentation of local training (the papers: `{ crop_padding = 4, flip = true }`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub augment: Option<AugmentConfig>,
}

impl CnnCifarConfig {
    /// The CIFAR CNN for `input`, a classification data set of images.
    pub fn build(&self, input: &Input) -> Result<Box<dyn Model>, NnError> {
        let classes = config::classes(input.task, "cnn-cifar")?;
        let image = config::image(input, self.channels)?;
        let net = Cnn {
            image,
            kernel: 5,
            padding: 0,
            conv1: 32,
            conv2: 64,
            hidden: self.hidden,
            classes,
        };
        let augmentation = AugmentConfig::of(self.augment, image);
        cnn(net, self.backend, augmentation)
    }
}

/// `[model] kind = "cnn-femnist"`: LEAF's FEMNIST CNN, 5x5 convolutions of 32
/// and 64 channels with same padding, each with 2x2 max-pooling, dense 2048,
/// softmax; native by default.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CnnFemnistConfig {
    /// Image channels.
    #[serde(default = "config::one")]
    pub channels: usize,
    /// Units of the dense layer.
    #[serde(default = "config::c2048")]
    pub hidden: usize,
    /// Where it runs (default: native).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backend: Option<ModelBackend>,
}

impl CnnFemnistConfig {
    /// The FEMNIST CNN for `input`, a classification data set of images.
    pub fn build(&self, input: &Input) -> Result<Box<dyn Model>, NnError> {
        let classes = config::classes(input.task, "cnn-femnist")?;
        let image = config::image(input, self.channels)?;
        let net = Cnn {
            image,
            kernel: 5,
            padding: 2,
            conv1: 32,
            conv2: 64,
            hidden: self.hidden,
            classes,
        };
        cnn(net, self.backend, None)
    }
}

/// The two-convolution CNN `net`, native (by default) or on burn.
fn cnn(
    net: Cnn,
    backend: Option<ModelBackend>,
    augmentation: Option<Augmentation>,
) -> Result<Box<dyn Model>, NnError> {
    // The burn network's checks name the keys for both backends.
    Net::Cnn(net).check()?;
    if !config::native(backend) {
        return config::on_burn(Net::Cnn(net), backend, augmentation);
    }
    if net.padding >= net.kernel {
        return Err(config::invalid(
            "padding",
            format!("must be below the kernel side {}", net.kernel),
        ));
    }
    let shape = fedcluster_models::Cnn {
        height: net.image.height,
        width: net.image.width,
        channels: net.image.channels,
        kernel: net.kernel,
        padding: net.padding,
        conv1: net.conv1,
        conv2: net.conv2,
        hidden: net.hidden,
        classes: net.classes,
        augmentation,
    };
    Ok(Box::new(
        fedcluster_models::Cnn::new(shape).map_err(NnError::NativeShape)?,
    ))
}

/// The CNN's shape.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cnn {
    /// Input images.
    pub image: ImageShape,
    /// Filter side.
    pub kernel: usize,
    /// Zero padding of both convolutions (0: valid; `kernel / 2`: same).
    pub padding: usize,
    /// Channels of the first convolution.
    pub conv1: usize,
    /// Channels of the second convolution.
    pub conv2: usize,
    /// Units of the dense layer.
    pub hidden: usize,
    /// Output classes.
    pub classes: usize,
}

impl Cnn {
    /// Side after convolution `(h, w)` -> `(h', w')`.
    fn conv(&self, (h, w): (usize, usize)) -> (usize, usize) {
        let grow = 2 * self.padding + 1;
        (
            (h + grow).saturating_sub(self.kernel),
            (w + grow).saturating_sub(self.kernel),
        )
    }

    /// Positions after the first and the second convolution, and the
    /// flattened length after the second pooling.
    fn sizes(&self) -> ((usize, usize), (usize, usize), usize) {
        let c1 = self.conv((self.image.height, self.image.width));
        let c2 = self.conv((c1.0 / 2, c1.1 / 2));
        (c1, c2, (c2.0 / 2) * (c2.1 / 2) * self.conv2)
    }

    /// Why this shape cannot be built, naming the `[model]` key.
    pub fn check(&self) -> Result<(), (&'static str, String)> {
        for (field, v) in [
            ("kernel", self.kernel),
            ("conv1", self.conv1),
            ("conv2", self.conv2),
            ("hidden", self.hidden),
        ] {
            if v == 0 {
                return Err((field, "must be at least 1, got 0".into()));
            }
        }
        let (_, _, flat) = self.sizes();
        if flat == 0 {
            let ImageShape { height, width, .. } = self.image;
            return Err((
                "kernel",
                format!(
                    "{height}x{width} images are too small for two {k}x{k} convolutions and poolings",
                    k = self.kernel
                ),
            ));
        }
        Ok(())
    }
}

impl Architecture for Cnn {
    fn name(&self) -> &'static str {
        "cnn"
    }

    fn layout(&self) -> Vec<ParamSpec> {
        let (k, c, c1, c2) = (self.kernel, self.image.channels, self.conv1, self.conv2);
        let (_, _, flat) = self.sizes();
        vec![
            ParamSpec::new("conv1.weight", &[c1, k, k, c], Init::FanIn(k * k * c)),
            ParamSpec::new("conv1.bias", &[c1], Init::FanIn(k * k * c)),
            ParamSpec::new("conv2.weight", &[c2, k, k, c1], Init::FanIn(k * k * c1)),
            ParamSpec::new("conv2.bias", &[c2], Init::FanIn(k * k * c1)),
            ParamSpec::new("fc1.weight", &[self.hidden, flat], Init::FanIn(flat)),
            ParamSpec::new("fc1.bias", &[self.hidden], Init::FanIn(flat)),
            ParamSpec::new(
                "fc2.weight",
                &[self.classes, self.hidden],
                Init::FanIn(self.hidden),
            ),
            ParamSpec::new("fc2.bias", &[self.classes], Init::FanIn(self.hidden)),
        ]
    }

    fn input_dim(&self) -> usize {
        self.image.height * self.image.width * self.image.channels
    }

    fn classes(&self) -> usize {
        self.classes
    }

    fn flops_per_sample(&self) -> u64 {
        let k2 = (self.kernel * self.kernel) as u64;
        let ((h1, w1), (h2, w2), flat) = self.sizes();
        let conv1 = 2 * k2 * (self.image.channels * self.conv1 * h1 * w1) as u64;
        let conv2 = 2 * k2 * (self.conv1 * self.conv2 * h2 * w2) as u64;
        conv1 + conv2 + 2 * (flat * self.hidden + self.hidden * self.classes) as u64
    }

    fn head_start(&self) -> usize {
        let layout = self.layout();
        layout[..6].iter().map(ParamSpec::len).sum()
    }

    fn images(&self) -> Option<ImageShape> {
        Some(self.image)
    }

    fn forward<B: Backend>(
        &self,
        p: &[Tensor<B, 1>],
        x: Tensor<B, 2>,
        _norm: &mut Norm<'_, B>,
    ) -> Tensor<B, 2> {
        let [n, _] = x.dims();
        let (k, pad) = (self.kernel, self.padding);
        let x = images(x, self.image);
        let x = max_pool2(act(conv2d(x, &p[0], Some(&p[1]), k, pad)));
        let x = max_pool2(act(conv2d(x, &p[2], Some(&p[3]), k, pad)));
        let [_, h, w, c] = x.dims();
        let x = act(dense(x.reshape([n, h * w * c]), &p[4], Some(&p[5])));
        dense(x, &p[6], Some(&p[7]))
    }
}
