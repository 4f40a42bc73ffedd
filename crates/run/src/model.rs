//! The `[model]` table: one line per model kind, naming the config that lives
//! beside the model (linear and logistic in `fedcluster-models`, the networks
//! in `fedcluster-nn`, which run natively or on burn's CPU or CUDA backend).
//! Each config builds its model from the data's [`Input`]; every size is
//! checked before the run, with the key named.

use anyhow::Result;

use fedcluster_core::{Input, Model};
use fedcluster_models::{LinearConfig, LogisticConfig};
use fedcluster_nn::nets::{
    CharLstmConfig, CnnCifarConfig, CnnConfig, CnnFemnistConfig, CnnIfcaCifarConfig, MlpConfig,
    ResNet9Config,
};

pub use fedcluster_nn::{AugmentConfig, ModelBackend};

/// Declares the closed [`ModelConfig`] enum, one line per model kind:
/// `Variant = "kind" in Config,`. Names and the build derive from these
/// lines; each `Config` has `build(&self, &Input) -> Result<Box<dyn Model>, E>`.
macro_rules! model_table {
    ($($variant:ident = $name:literal in $config:ty,)*) => {
        /// Model architectures, chosen by `kind` in the `[model]` table; input
        /// and output sizes come from the data.
        #[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
        #[serde(tag = "kind", deny_unknown_fields)]
        pub enum ModelConfig {
            $(
                #[doc = concat!("`kind = \"", $name, "\"`.")]
                #[serde(rename = $name)]
                $variant($config),
            )*
        }

        impl ModelConfig {
            /// Every model kind, in table order.
            pub const NAMES: &[&str] = &[$($name),*];

            /// The `kind` of the model as written in configs.
            pub fn name(&self) -> &'static str {
                match self {
                    $(ModelConfig::$variant(_) => $name,)*
                }
            }

            /// The configured model for data of `input`; errors name the
            /// `[model]` key that does not fit.
            pub fn build(&self, input: &Input) -> Result<Box<dyn Model>> {
                Ok(match self {
                    $(ModelConfig::$variant(c) => c.build(input)?,)*
                })
            }
        }
    };
}

model_table! {
    Linear = "linear" in LinearConfig,
    Logistic = "logistic" in LogisticConfig,
    Mlp = "mlp" in MlpConfig,
    Cnn = "cnn" in CnnConfig,
    CnnCifar = "cnn-cifar" in CnnCifarConfig,
    CnnFemnist = "cnn-femnist" in CnnFemnistConfig,
    CnnIfcaCifar = "cnn-ifca-cifar" in CnnIfcaCifarConfig,
    Resnet9 = "resnet9" in ResNet9Config,
    CharLstm = "char-lstm" in CharLstmConfig,
}

impl Default for ModelConfig {
    fn default() -> Self {
        ModelConfig::Linear(LinearConfig {})
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use fedcluster_core::Task;

    fn parse(text: &str) -> Result<ModelConfig, toml::de::Error> {
        toml::from_str(text)
    }

    #[test]
    fn kinds_parse_with_their_defaults_and_write_back() {
        for &name in ModelConfig::NAMES {
            let config = parse(&format!("kind = \"{name}\"")).unwrap();
            assert_eq!(config.name(), name);
            let text = toml::to_string(&config).unwrap();
            assert_eq!(parse(&text).unwrap(), config, "{text}");
        }
        assert_eq!(parse("kind = \"linear\"").unwrap(), ModelConfig::default());
        assert_eq!(
            parse("kind = \"mlp\"").unwrap(),
            ModelConfig::Mlp(MlpConfig {
                hidden: 200,
                backend: None
            })
        );
        assert_eq!(
            toml::to_string(&parse("kind = \"cnn-cifar\"").unwrap()).unwrap(),
            "kind = \"cnn-cifar\"\nchannels = 3\nhidden = 512\n"
        );
    }

    #[test]
    fn unknown_kinds_and_keys_are_refused() {
        assert!(parse("kind = \"gpt\"").is_err());
        assert!(parse("kind = \"linear\"\nhidden = 3").is_err());
        assert!(parse("kind = \"mlp\"\nchannels = 3").is_err());
        assert!(parse("kind = \"cnn\"\naugment = { pad = 1 }").is_err());
    }

    #[test]
    fn augmentation_takes_the_cifar_recipes_jitter_and_checks_it() {
        let srfca = "kind = \"resnet9\"\naugment = { crop_padding = 2, flip = true, cutout = 8 }";
        let ifca = "kind = \"cnn-cifar\"\n\
                    augment = { flip = true, brightness = 0.25, contrast = [0.2, 1.8] }";
        for text in [srfca, ifca] {
            let config = parse(text).unwrap();
            let again = parse(&toml::to_string(&config).unwrap()).unwrap();
            assert_eq!(again, config, "{text}");
        }
        let plain = parse("kind = \"cnn\"\naugment = { crop_padding = 4, flip = true }").unwrap();
        let written = toml::to_string(&plain).unwrap();
        assert!(
            !written.contains("cutout")
                && !written.contains("brightness")
                && !written.contains("contrast"),
            "keys left at their defaults are not written: {written}"
        );
        for (bad, named) in [
            ("brightness = -0.1", "augment.brightness"),
            ("brightness = nan", "augment.brightness"),
            ("contrast = [1.8, 0.2]", "augment.contrast"),
            ("contrast = [0.2, inf]", "augment.contrast"),
        ] {
            let err = parse(&format!("kind = \"cnn\"\naugment = {{ {bad} }}")).unwrap_err();
            assert!(format!("{err:#}").contains(named), "{bad}: {err:#}");
        }
    }

    #[test]
    fn builds_check_the_task_and_the_declared_images() {
        let classes = Task::Classification { classes: 10 };
        let err = |config: ModelConfig, input: Input| config.build(&input).err().unwrap();
        assert_eq!(
            err(ModelConfig::default(), Input::flat(4, classes)).to_string(),
            "field `model.kind`: `linear` needs a regression data set"
        );
        assert_eq!(
            err(
                parse("kind = \"mlp\"").unwrap(),
                Input::flat(4, Task::Regression)
            )
            .to_string(),
            "field `model.kind`: `mlp` needs a classification data set"
        );
        let shape = fedcluster_core::ImageShape {
            height: 28,
            width: 28,
            channels: 1,
        };
        let cnn = parse("kind = \"cnn\"\nconv1 = 2\nconv2 = 2\nhidden = 4").unwrap();
        let model = cnn.build(&Input::images(shape, classes)).unwrap();
        let square = cnn.build(&Input::flat(784, classes)).unwrap();
        assert_eq!(model.num_params(), square.num_params());
        let cifar = parse("kind = \"cnn-cifar\"").unwrap();
        assert_eq!(
            err(cifar, Input::images(shape, classes)).to_string(),
            "field `model.channels`: the data's images have 1 channel(s), the config says 3"
        );
    }
}
