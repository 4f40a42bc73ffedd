//! ResNet9 (Page, "How to train your ResNet 4: Architecture", 2019), the
//! SR-FCA paper's CIFAR-10 network, on channels-last images:
//!
//! ```text
//! prep    conv 3x3 (c -> w) BN ReLU
//! layer1  conv 3x3 (w -> 2w) BN ReLU maxpool2, + residual(conv BN ReLU, conv BN ReLU)
//! layer2  conv 3x3 (2w -> 4w) BN ReLU maxpool2
//! layer3  conv 3x3 (4w -> 8w) BN ReLU maxpool2, + residual(conv BN ReLU, conv BN ReLU)
//! head    global max-pool, linear (8w -> classes, no bias), x 0.125
//! ```
//!
//! Convolutions have no bias (batch norm follows), padding 1. Each batch
//! norm's running mean and variance are part of the flat vector, after its
//! scale and shift: clients update them in training and the server averages
//! them with the other parameters (as FedAvg on ResNets does); evaluation
//! normalises with them. [`fedcluster_models::ResNet9`] is the same network
//! hand-written, on the same flat vector, and the default backend.

use burn::tensor::Tensor;
use burn::tensor::backend::Backend;
use serde::{Deserialize, Serialize};

use fedcluster_core::ImageShape;
use fedcluster_core::train::Normalize;
use fedcluster_core::{Input, Model};
use fedcluster_models::resnet9::Variant;

use crate::config::{self, AugmentConfig, ModelBackend};
use crate::flat::{Init, ParamSpec};
use crate::layers::{Norm, act, batch_norm, conv2d, dense, global_max_pool, images, max_pool2};
use crate::net::Architecture;
use crate::nets::ifca_cifar::NormalizeConfig;
use crate::{Net, NnError};

/// `[model] kind = "resnet9"`: ResNet9 (Page 2019), the SR-FCA paper's CIFAR
/// network, native by default, with the SR-FCA code's recipe keys
/// `normalize` and `label_smoothing` and its network, `variant = "srfca"`
/// (native only; off by default).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ResNet9Config {
    /// Image channels.
    #[serde(default = "config::three")]
    pub channels: usize,
    /// Channels of the first convolution (Page: 64).
    #[serde(default = "config::c64")]
    pub width: usize,
    /// Where it runs (default: native).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backend: Option<ModelBackend>,
    /// Augmentation of local training.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub augment: Option<AugmentConfig>,
    /// A per-channel `(v − mean) / std` of the input images, at training
    /// (after the augmentation) and evaluation alike.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub normalize: Option<NormalizeConfig>,
    /// Label smoothing `ε` of the loss (training and evaluation), in `[0, 1)`.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub label_smoothing: f32,
    /// Page's network (`"page"`, the default) or the SR-FCA public code's
    /// (`"srfca"`, native only): `fedcluster_models::resnet9::variant`.
    #[serde(default, skip_serializing_if = "is_page")]
    pub variant: Variant,
}

fn is_page(variant: &Variant) -> bool {
    *variant == Variant::Page
}

impl ResNet9Config {
    /// ResNet9 for `input`, a classification data set of images.
    pub fn build(&self, input: &Input) -> Result<Box<dyn Model>, NnError> {
        let classes = config::classes(input.task, "resnet9")?;
        let image = config::image(input, self.channels)?;
        let net = ResNet9 {
            image,
            width: self.width,
            classes,
        };
        let augmentation = AugmentConfig::of(self.augment, image);
        if self.variant != Variant::Page && !config::native(self.backend) {
            return Err(config::invalid(
                "variant",
                "\"srfca\" is built on the native backend only; remove `backend` or this key",
            ));
        }
        // The burn network's checks name the keys for both backends (the
        // SR-FCA variant's shapes are checked natively).
        if self.variant == Variant::Page {
            Net::ResNet9(net).check()?;
        }
        let normalize = self.recipe(image.channels)?;
        if !config::native(self.backend) {
            if normalize.is_some() || self.label_smoothing != 0.0 {
                let key = if normalize.is_some() {
                    "normalize"
                } else {
                    "label_smoothing"
                };
                return Err(config::invalid(
                    key,
                    "is built on the native backend only; remove `backend` or this key",
                ));
            }
            return config::on_burn(Net::ResNet9(net), self.backend, augmentation);
        }
        let shape = fedcluster_models::ResNet9 {
            image,
            width: self.width,
            classes,
            augmentation,
            normalize,
            label_smoothing: self.label_smoothing,
            variant: self.variant,
        };
        Ok(Box::new(
            fedcluster_models::ResNet9::new(shape).map_err(NnError::NativeShape)?,
        ))
    }
}

impl ResNet9Config {
    /// The recipe keys checked against images of `channels` channels: the
    /// normalisation, if any.
    fn recipe(&self, channels: usize) -> Result<Option<Normalize>, NnError> {
        if !(0.0..1.0).contains(&self.label_smoothing) {
            return Err(config::invalid(
                "label_smoothing",
                format!("must lie in [0, 1), got {}", self.label_smoothing),
            ));
        }
        let normalize = self.normalize.map(|n| n.0);
        if let Some(n) = normalize
            && n.channels != channels
        {
            return Err(config::invalid(
                "normalize",
                format!(
                    "has statistics for {} channel(s), the images have {channels}",
                    n.channels
                ),
            ));
        }
        Ok(normalize)
    }
}

/// ResNet9's shape.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ResNet9 {
    /// Input images (square, side divisible by 8).
    pub image: ImageShape,
    /// Channels of the first convolution, `w` (Page: 64).
    pub width: usize,
    /// Output classes.
    pub classes: usize,
}

/// The `(input, output)` channels of the eight convolutions, and whether a
/// pooling follows.
fn convs(c: usize, w: usize) -> [(usize, usize, bool); 8] {
    [
        (c, w, false),
        (w, 2 * w, true),
        (2 * w, 2 * w, false),
        (2 * w, 2 * w, false),
        (2 * w, 4 * w, true),
        (4 * w, 8 * w, true),
        (8 * w, 8 * w, false),
        (8 * w, 8 * w, false),
    ]
}

const NAMES: [&str; 8] = [
    "prep", "layer1", "res1.0", "res1.1", "layer2", "layer3", "res3.0", "res3.1",
];

impl ResNet9 {
    /// Why this shape cannot be built, naming the `[model]` key.
    pub fn check(&self) -> Result<(), (&'static str, String)> {
        if self.width == 0 {
            return Err(("width", "must be at least 1, got 0".into()));
        }
        let ImageShape { height, width, .. } = self.image;
        if height != width || height < 8 || height % 8 != 0 {
            return Err((
                "channels",
                format!(
                    "ResNet9 takes square images whose side is a multiple of 8 (three poolings), got {height}x{width}"
                ),
            ));
        }
        Ok(())
    }
}

impl Architecture for ResNet9 {
    fn name(&self) -> &'static str {
        "resnet9"
    }

    fn layout(&self) -> Vec<ParamSpec> {
        let mut layout = Vec::new();
        for ((cin, cout, _), name) in convs(self.image.channels, self.width)
            .into_iter()
            .zip(NAMES)
        {
            let fan_in = 9 * cin;
            layout.push(ParamSpec::new(
                format!("{name}.conv.weight"),
                &[cout, 3, 3, cin],
                Init::FanIn(fan_in),
            ));
            layout.push(ParamSpec::new(
                format!("{name}.bn.weight"),
                &[cout],
                Init::Const(1.0),
            ));
            layout.push(ParamSpec::new(
                format!("{name}.bn.bias"),
                &[cout],
                Init::Const(0.0),
            ));
            layout.push(ParamSpec::running(
                format!("{name}.bn.running_mean"),
                cout,
                0.0,
            ));
            layout.push(ParamSpec::running(
                format!("{name}.bn.running_var"),
                cout,
                1.0,
            ));
        }
        let last = 8 * self.width;
        layout.push(ParamSpec::new(
            "linear.weight",
            &[self.classes, last],
            Init::FanIn(last),
        ));
        layout
    }

    fn input_dim(&self) -> usize {
        self.image.height * self.image.width * self.image.channels
    }

    fn classes(&self) -> usize {
        self.classes
    }

    fn flops_per_sample(&self) -> u64 {
        let mut side = self.image.height;
        let mut flops = 0u64;
        for (cin, cout, pool) in convs(self.image.channels, self.width) {
            flops += 2 * 9 * (cin * cout * side * side) as u64;
            if pool {
                side /= 2;
            }
        }
        flops + 2 * (8 * self.width * self.classes) as u64
    }

    fn head_start(&self) -> usize {
        let layout = self.layout();
        layout[..layout.len() - 1].iter().map(ParamSpec::len).sum()
    }

    fn images(&self) -> Option<ImageShape> {
        Some(self.image)
    }

    fn forward<B: Backend>(
        &self,
        p: &[Tensor<B, 1>],
        x: Tensor<B, 2>,
        norm: &mut Norm<'_, B>,
    ) -> Tensor<B, 2> {
        let mut x = images(x, self.image);
        // conv-BN-ReLU number `i` (its five tensors start at 5 i).
        let mut block = |x: Tensor<B, 4>, i: usize| {
            let y = conv2d(x, &p[5 * i], None, 3, 1);
            act(batch_norm(y, p, 5 * i + 1, norm))
        };
        x = block(x, 0);
        x = max_pool2(block(x, 1));
        let r = block(x.clone(), 2);
        x = x + block(r, 3);
        x = max_pool2(block(x, 4));
        x = max_pool2(block(x, 5));
        let r = block(x.clone(), 6);
        x = x + block(r, 7);
        dense(global_max_pool(x), &p[40], None) * 0.125
    }
}

#[cfg(test)]
mod tests;

fn is_zero(v: &f32) -> bool {
    *v == 0.0
}
