//! The MLP of the IFCA paper's MNIST experiments (784-200-10), in the native
//! [`fedcluster_models::Mlp`]'s layout: `W1` (`hidden x input`), `b1`, `W2`
//! (`classes x hidden`), `b2`.

use burn::tensor::Tensor;
use burn::tensor::backend::Backend;
use serde::{Deserialize, Serialize};

use fedcluster_core::{Input, Model};

use crate::config::{self, ModelBackend, invalid};
use crate::flat::{Init, ParamSpec};
use crate::layers::{Norm, act, dense};
use crate::net::Architecture;
use crate::{Net, NnError};

/// `[model] kind = "mlp"`: one ReLU hidden layer and a softmax output
/// (784-200-10 on MNIST), native by default.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MlpConfig {
    /// Hidden units.
    #[serde(default = "config::c200")]
    pub hidden: usize,
    /// Where it runs (default: native).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backend: Option<ModelBackend>,
}

impl MlpConfig {
    /// The MLP for `input`, a classification data set: the native
    /// [`fedcluster_models::Mlp`] or [`Mlp`] on burn.
    pub fn build(&self, input: &Input) -> Result<Box<dyn Model>, NnError> {
        let classes = config::classes(input.task, "mlp")?;
        let hidden = self.hidden;
        if hidden == 0 {
            return Err(invalid("hidden", "must be at least 1, got 0"));
        }
        if config::native(self.backend) {
            return Ok(Box::new(fedcluster_models::Mlp::new(
                input.dim, hidden, classes,
            )?));
        }
        let net = Mlp {
            input: input.dim,
            hidden,
            classes,
        };
        config::on_burn(Net::Mlp(net), self.backend, None)
    }
}

/// One ReLU hidden layer and a softmax output.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Mlp {
    /// Input features.
    pub input: usize,
    /// Hidden units.
    pub hidden: usize,
    /// Output classes.
    pub classes: usize,
}

impl Architecture for Mlp {
    fn name(&self) -> &'static str {
        "mlp"
    }

    fn layout(&self) -> Vec<ParamSpec> {
        let (d, h, c) = (self.input, self.hidden, self.classes);
        vec![
            ParamSpec::new("fc1.weight", &[h, d], Init::FanIn(d)),
            ParamSpec::new("fc1.bias", &[h], Init::FanIn(d)),
            ParamSpec::new("fc2.weight", &[c, h], Init::FanIn(h)),
            ParamSpec::new("fc2.bias", &[c], Init::FanIn(h)),
        ]
    }

    fn input_dim(&self) -> usize {
        self.input
    }

    fn classes(&self) -> usize {
        self.classes
    }

    fn flops_per_sample(&self) -> u64 {
        2 * (self.input * self.hidden + self.hidden * self.classes) as u64
    }

    fn head_start(&self) -> usize {
        self.hidden * self.input + self.hidden
    }

    fn forward<B: Backend>(
        &self,
        p: &[Tensor<B, 1>],
        x: Tensor<B, 2>,
        _norm: &mut Norm<'_, B>,
    ) -> Tensor<B, 2> {
        let h = act(dense(x, &p[0], Some(&p[1])));
        dense(h, &p[2], Some(&p[3]))
    }
}
