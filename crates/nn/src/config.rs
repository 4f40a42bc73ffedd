//! What the `[model]` configs of the networks share: where a network runs
//! ([`ModelBackend`]), training-time augmentation ([`AugmentConfig`]), and the
//! steps of a build from the data's [`Input`]: its classes, its image shape,
//! and the network on burn. Each network's config and its `build` live beside
//! the network in [`crate::nets`].

use serde::{Deserialize, Serialize};

use fedcluster_core::ImageShape;
use fedcluster_core::train::{Augmentation, Jitter};
use fedcluster_core::{Input, Model, Task};

use crate::{Backend, Net, NnError};

/// Where a model runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ModelBackend {
    /// The hand-written models (linear, logistic, MLP, CNN).
    Native,
    /// burn's ndarray CPU backend.
    Ndarray,
    /// burn's flex CPU backend (im2col + GEMM).
    Flex,
    /// burn's CUDA backend (a build with `--features cuda` and a GPU).
    Cuda,
}

/// Training-time image augmentation: a random crop of the zero-padded image,
/// a random horizontal flip, and optionally the CIFAR-10 recipes' jitter
/// (brightness, contrast, Cutout; [`fedcluster_core::train::Jitter`]), drawn
/// from the client's stream.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, try_from = "AugmentKeys")]
pub struct AugmentConfig {
    /// Padding of the random crop (0: no crop).
    pub crop_padding: usize,
    /// Random left-right flips.
    pub flip: bool,
    /// Side of the Cutout square set to 0 (ffcv's `Cutout`; 0: none).
    #[serde(skip_serializing_if = "is_zero")]
    pub cutout: usize,
    /// Largest brightness shift (TF's `random_brightness(max_delta)`, on
    /// images in `[0, 1]`: `63/255` in the IFCA code; 0: none).
    #[serde(skip_serializing_if = "is_zero_f32")]
    pub brightness: f32,
    /// Contrast factor range `[lower, upper]` (TF's `random_contrast`;
    /// `[0.2, 1.8]` in the IFCA code).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub contrast: Option<[f32; 2]>,
}

// Checked finite when read, so equality is an equivalence.
impl Eq for AugmentConfig {}

/// `[model] augment` as written, checked into an [`AugmentConfig`].
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct AugmentKeys {
    #[serde(default)]
    crop_padding: usize,
    #[serde(default)]
    flip: bool,
    #[serde(default)]
    cutout: usize,
    #[serde(default)]
    brightness: f32,
    #[serde(default)]
    contrast: Option<[f32; 2]>,
}

/// The largest brightness shift or contrast factor taken (far beyond any
/// recipe, and small enough that a uniform draw's range stays finite).
const MAX_JITTER: f32 = 1e6;

impl TryFrom<AugmentKeys> for AugmentConfig {
    type Error = String;

    fn try_from(k: AugmentKeys) -> Result<Self, String> {
        let fits = |v: f32| (0.0..=MAX_JITTER).contains(&v);
        if !fits(k.brightness) {
            return Err(format!(
                "augment.brightness must lie in [0, {MAX_JITTER}], got {}",
                k.brightness
            ));
        }
        if let Some([lo, hi]) = k.contrast
            && !(fits(lo) && fits(hi) && lo <= hi)
        {
            return Err(format!(
                "augment.contrast must be [lower, upper] with 0 <= lower <= upper <= \
                 {MAX_JITTER}, got [{lo}, {hi}]"
            ));
        }
        Ok(Self {
            crop_padding: k.crop_padding,
            flip: k.flip,
            cutout: k.cutout,
            brightness: k.brightness,
            contrast: k.contrast,
        })
    }
}

fn is_zero(v: &usize) -> bool {
    *v == 0
}

fn is_zero_f32(v: &f32) -> bool {
    *v == 0.0
}

impl AugmentConfig {
    /// The augmentation of `shape`d images, when configured.
    pub(crate) fn of(config: Option<AugmentConfig>, shape: ImageShape) -> Option<Augmentation> {
        config.map(|a| Augmentation {
            shape,
            crop_padding: a.crop_padding,
            flip: a.flip,
            jitter: Jitter {
                brightness: a.brightness,
                contrast: a.contrast.map(|[lo, hi]| (lo, hi)),
                cutout: a.cutout,
            },
        })
    }
}

/// An error on the `[model]` key `field`.
pub(crate) fn invalid(field: &'static str, why: impl Into<String>) -> NnError {
    NnError::Invalid {
        field,
        why: why.into(),
    }
}

/// Whether a network that has a hand-written implementation runs it (the
/// default).
pub(crate) fn native(backend: Option<ModelBackend>) -> bool {
    backend.is_none_or(|b| b == ModelBackend::Native)
}

/// The classes of a classification data set, for the model `kind`.
pub(crate) fn classes(task: Task, kind: &str) -> Result<usize, NnError> {
    match task {
        Task::Classification { classes } => Ok(classes),
        Task::Regression => Err(invalid(
            "kind",
            format!("`{kind}` needs a classification data set"),
        )),
    }
}

/// The images of `input` for a network configured with `channels`: the
/// declared shape, or else square channels-last images making up its
/// features.
pub(crate) fn image(input: &Input, channels: usize) -> Result<ImageShape, NnError> {
    match input.image {
        Some(shape) if shape.channels != channels => Err(invalid(
            "channels",
            format!(
                "the data's images have {} channel(s), the config says {channels}",
                shape.channels
            ),
        )),
        Some(shape) => Ok(shape),
        None => square(input.dim, channels),
    }
}

/// Square channels-last images of `channels` channels making up `dim` features.
fn square(dim: usize, channels: usize) -> Result<ImageShape, NnError> {
    let pixels = dim / channels.max(1);
    let side = (pixels as f64).sqrt().round() as usize;
    if channels == 0 || side * side * channels != dim {
        return Err(invalid(
            "channels",
            format!("{dim} features are not square images of {channels} channel(s)"),
        ));
    }
    Ok(ImageShape {
        height: side,
        width: side,
        channels,
    })
}

/// `net` on burn's backend `backend` (default: ndarray); errors name
/// `model.backend` when it cannot run there.
pub(crate) fn on_burn(
    net: Net,
    backend: Option<ModelBackend>,
    augmentation: Option<Augmentation>,
) -> Result<Box<dyn Model>, NnError> {
    let backend = match backend.unwrap_or(ModelBackend::Ndarray) {
        ModelBackend::Native => {
            return Err(invalid(
                "backend",
                "this network has no native implementation; use \"ndarray\", \"flex\" or \"cuda\"",
            ));
        }
        ModelBackend::Ndarray => Backend::Cpu,
        ModelBackend::Flex => Backend::Flex,
        ModelBackend::Cuda => Backend::Cuda,
    };
    crate::build(net, backend, augmentation).map_err(|e| match e {
        NnError::Backend(why) => invalid("backend", why),
        other => other,
    })
}

// Defaults of the configs' keys (serde takes a function's path).
pub(crate) fn one() -> usize {
    1
}
pub(crate) fn two() -> usize {
    2
}
pub(crate) fn three() -> usize {
    3
}
pub(crate) fn five() -> usize {
    5
}
pub(crate) fn eight() -> usize {
    8
}
pub(crate) fn c32() -> usize {
    32
}
pub(crate) fn c64() -> usize {
    64
}
pub(crate) fn c200() -> usize {
    200
}
pub(crate) fn c256() -> usize {
    256
}
pub(crate) fn c512() -> usize {
    512
}
pub(crate) fn c2048() -> usize {
    2048
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn images_come_from_the_input_or_are_square() {
        let task = Task::Classification { classes: 10 };
        let shape = ImageShape {
            height: 4,
            width: 6,
            channels: 3,
        };
        assert_eq!(image(&Input::images(shape, task), 3), Ok(shape));
        assert_eq!(
            image(&Input::images(shape, task), 1)
                .unwrap_err()
                .to_string(),
            "field `model.channels`: the data's images have 3 channel(s), the config says 1"
        );
        assert_eq!(
            image(&Input::flat(48, task), 3),
            Ok(ImageShape {
                height: 4,
                width: 4,
                channels: 3
            })
        );
        assert_eq!(
            image(&Input::flat(50, task), 1).unwrap_err().to_string(),
            "field `model.channels`: 50 features are not square images of 1 channel(s)"
        );
        assert!(image(&Input::flat(48, task), 0).is_err());
    }

    #[test]
    fn each_burn_backend_builds_and_native_names_them() {
        let net = Net::Mlp(crate::nets::Mlp {
            input: 4,
            hidden: 3,
            classes: 2,
        });
        for backend in [None, Some(ModelBackend::Ndarray), Some(ModelBackend::Flex)] {
            let model = on_burn(net, backend, None).expect("a CPU backend");
            assert_eq!(model.num_params(), 4 * 3 + 3 + 3 * 2 + 2, "{backend:?}");
        }
        let err = on_burn(net, Some(ModelBackend::Native), None).err();
        assert_eq!(
            err.expect("no native network on burn").to_string(),
            "field `model.backend`: this network has no native implementation; use \"ndarray\", \"flex\" or \"cuda\""
        );
    }
}
