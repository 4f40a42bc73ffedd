//! `[model] kind = "cnn-ifca-cifar"`: the IFCA public code's CIFAR-10 network
//! (the TF CIFAR-10 tutorial's, [`fedcluster_models::TfCifarCnn`]: two 5x5
//! convolutions of 64 filters with 3x3/2 max-pooling and local response
//! normalisation, dense 384 and 192), native only, with its recipe as keys:
//! the input stage (`crop` window, `standardize`, `normalize`), applied at
//! training and evaluation alike, and `label_smoothing` of its loss.

use serde::{Deserialize, Serialize};

use fedcluster_core::train::{InputStage, Normalize};
use fedcluster_core::{Input, Model};
use fedcluster_models::TfCifarCnn;

use crate::NnError;
use crate::config::{self, AugmentConfig};

/// `[model] kind = "cnn-ifca-cifar"`, with the IFCA code's defaults: 24x24
/// crops (drawn in training, central at evaluation), per-image
/// standardisation, no smoothing.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CnnIfcaCifarConfig {
    /// Image channels.
    #[serde(default = "config::three")]
    pub channels: usize,
    /// Filters of each convolution.
    #[serde(default = "config::c64")]
    pub filters: usize,
    /// Units of the first hidden dense layer (the tutorial's `local3`).
    #[serde(default = "c384")]
    pub dense1: usize,
    /// Units of the second (`local4`).
    #[serde(default = "c192")]
    pub dense2: usize,
    /// `[height, width]` of the window the network sees: drawn uniformly in
    /// training, the central one at evaluation (the whole image when equal).
    #[serde(default = "crop24")]
    pub crop: [usize; 2],
    /// TF's per-image standardisation of the window.
    #[serde(default = "yes")]
    pub standardize: bool,
    /// A per-channel `(v − mean) / std` after the standardisation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub normalize: Option<NormalizeConfig>,
    /// Label smoothing `ε` of the loss, in `[0, 1)`.
    #[serde(default)]
    pub label_smoothing: f32,
    /// Augmentation of local training on the raw images: the offset and flip
    /// before the window, brightness, contrast and Cutout on the window.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub augment: Option<AugmentConfig>,
}

/// `normalize = { mean = [...], std = [...] }`, one value per channel.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "NormalizeKeys", into = "NormalizeKeys")]
pub struct NormalizeConfig(pub Normalize);

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct NormalizeKeys {
    mean: Vec<f32>,
    std: Vec<f32>,
}

impl TryFrom<NormalizeKeys> for NormalizeConfig {
    type Error = String;

    fn try_from(k: NormalizeKeys) -> Result<Self, String> {
        Normalize::new(&k.mean, &k.std)
            .map(NormalizeConfig)
            .ok_or_else(|| {
                format!(
                    "normalize: mean and std need one value per channel (1 to {}), finite, \
                 every std positive; got mean {:?}, std {:?}",
                    fedcluster_core::train::stage::MAX_NORMALIZE_CHANNELS,
                    k.mean,
                    k.std
                )
            })
    }
}

impl From<NormalizeConfig> for NormalizeKeys {
    fn from(NormalizeConfig(n): NormalizeConfig) -> Self {
        NormalizeKeys {
            mean: n.mean[..n.channels].to_vec(),
            std: n.std[..n.channels].to_vec(),
        }
    }
}

fn c384() -> usize {
    384
}
fn c192() -> usize {
    192
}
fn crop24() -> [usize; 2] {
    [24, 24]
}
fn yes() -> bool {
    true
}

impl CnnIfcaCifarConfig {
    /// The network for `input`, a classification data set of images.
    pub fn build(&self, input: &Input) -> Result<Box<dyn Model>, NnError> {
        let classes = config::classes(input.task, "cnn-ifca-cifar")?;
        let image = config::image(input, self.channels)?;
        for (field, v) in [
            ("filters", self.filters),
            ("dense1", self.dense1),
            ("dense2", self.dense2),
        ] {
            if v == 0 {
                return Err(config::invalid(field, "must be at least 1, got 0"));
            }
        }
        if !(0.0..1.0).contains(&self.label_smoothing) {
            return Err(config::invalid(
                "label_smoothing",
                format!("must lie in [0, 1), got {}", self.label_smoothing),
            ));
        }
        let stage = InputStage {
            raw: image,
            size: (self.crop[0], self.crop[1]),
            standardize: self.standardize,
            normalize: self.normalize.map(|n| n.0),
        };
        stage
            .check()
            .map_err(|(field, why)| config::invalid(field, why))?;
        let net = TfCifarCnn {
            stage,
            filters: self.filters,
            dense1: self.dense1,
            dense2: self.dense2,
            classes,
            label_smoothing: self.label_smoothing,
            augmentation: AugmentConfig::of(self.augment, image),
        };
        Ok(Box::new(
            TfCifarCnn::new(net).map_err(NnError::NativeShape)?,
        ))
    }
}

#[cfg(test)]
mod tests;
