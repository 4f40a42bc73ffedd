//! The IFCA public code's CIFAR-10 network (jichan3751/ifca, `cifar/`), which
//! is the TensorFlow CIFAR-10 tutorial's (`tutorials/image/cifar10/cifar10.py`,
//! `inference`): on 24x24 crops, a 5x5 convolution of 64 filters (same
//! padding) with ReLU, 3x3 max-pooling of stride 2 (same padding), local
//! response normalisation ([`lrn`]), a second 5x5/64 convolution with ReLU,
//! normalisation, pooling, dense 384 and 192 with ReLU, and the logits.
//!
//! The network takes the raw images (32x32x3 for CIFAR-10) and runs them
//! through its [`InputStage`] itself: the central 24x24 window and TF's
//! per-image standardisation at evaluation, a drawn window with the jitter in
//! training ([`train`], its own minibatch loop: the flat loop's draws and
//! formulas with the stage between the augmentation and the network). Its
//! loss is the cross-entropy against label-smoothed targets
//! (`label_smoothing`, 0: plain), at training and evaluation alike.
//!
//! Parameters, back to back: conv1 `W` (`f x 5·5·c`, channels-last patches)
//! and `b`, conv2 `W` (`f x 5·5·f`) and `b`, then dense `W` (`out x in`) and
//! `b` for the two hidden layers and the logits. Initialised as the tutorial:
//! truncated normals of standard deviation 0.05 (convolutions), 0.04 (hidden
//! layers) and 1/192 (logits), biases 0, 0.1, 0.1, 0.1 and 0.

use rand::Rng as _;
use rand_distr::StandardNormal;

use fedcluster_core::train::minibatch::run_steps;
use fedcluster_core::train::{Augmentation, InputStage, MinibatchSpec, OptimizerState};
use fedcluster_core::{Batch, Model, Rng, TensorSpec, Workspace};

use crate::cnn::conv::Conv;
use crate::{ModelError, Result, TargetKind};

pub mod lrn;
mod pass;
pub mod pool;
#[cfg(test)]
mod tests;
mod train;

use pass::Images;

/// Side of both convolutions' kernels.
const KERNEL: usize = 5;

/// Images an evaluation runs through the network at once (its buffers hold
/// about 0.4 MB an image).
const EVAL_CHUNK: usize = 256;

/// The network's shape and recipe.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TfCifarCnn {
    /// The raw images and what the network sees of them.
    pub stage: InputStage,
    /// Filters of each convolution (64).
    pub filters: usize,
    /// Units of the first hidden dense layer (384).
    pub dense1: usize,
    /// Units of the second (192).
    pub dense2: usize,
    /// Output classes.
    pub classes: usize,
    /// Label smoothing `ε` of the loss, in `[0, 1)` (0: plain cross-entropy).
    pub label_smoothing: f32,
    /// Training-time augmentation of the raw images (its crop offset and flip
    /// before the stage's window, its jitter on the window).
    pub augmentation: Option<Augmentation>,
}

/// Offsets of the parameter blocks.
struct Layout {
    b1: usize,
    w2: usize,
    b2: usize,
    w3: usize,
    b3: usize,
    w4: usize,
    b4: usize,
    w5: usize,
    b5: usize,
    end: usize,
}

impl TfCifarCnn {
    /// Checks a shape: sizes at least 1, at least 2 classes, a stage that
    /// fits the images, and a smoothing in `[0, 1)`.
    pub fn new(net: TfCifarCnn) -> Result<Self> {
        let bad = |why: String| {
            Err(ModelError::Invalid {
                model: "cnn-ifca-cifar",
                why,
            })
        };
        if [net.filters, net.dense1, net.dense2, net.stage.raw.channels].contains(&0) {
            return bad("every size must be at least 1".into());
        }
        if net.classes < 2 {
            return bad("classes must be at least 2".into());
        }
        if let Err((key, why)) = net.stage.check() {
            return bad(format!("{key} {why}"));
        }
        if !(0.0..1.0).contains(&net.label_smoothing) {
            return bad(format!(
                "label smoothing must lie in [0, 1), got {}",
                net.label_smoothing
            ));
        }
        Ok(net)
    }

    fn convs(&self) -> (Conv, Conv) {
        let ((h, w), c, f) = (self.stage.size, self.stage.raw.channels, self.filters);
        let ((h1, _), (w1, _)) = (pool::out_and_pad(h), pool::out_and_pad(w));
        let pad = KERNEL / 2;
        (
            Conv::new(h, w, c, KERNEL, pad),
            Conv::new(h1, w1, f, KERNEL, pad),
        )
    }

    /// Length of the flattened second pooling output.
    fn flat(&self) -> usize {
        let (h, w) = self.stage.size;
        let side = |s: usize| pool::out_and_pad(pool::out_and_pad(s).0).0;
        side(h) * side(w) * self.filters
    }

    fn layout(&self) -> Layout {
        let (c1, c2) = self.convs();
        let f = self.filters;
        let b1 = f * c1.patch();
        let w2 = b1 + f;
        let b2 = w2 + f * c2.patch();
        let w3 = b2 + f;
        let b3 = w3 + self.dense1 * self.flat();
        let w4 = b3 + self.dense1;
        let b4 = w4 + self.dense2 * self.dense1;
        let w5 = b4 + self.dense2;
        let b5 = w5 + self.classes * self.dense2;
        Layout {
            b1,
            w2,
            b2,
            w3,
            b3,
            w4,
            b4,
            w5,
            b5,
            end: b5 + self.classes,
        }
    }

    /// The network trains on class indices below `classes`.
    pub fn target_kind(&self) -> TargetKind {
        TargetKind::Class {
            classes: self.classes,
        }
    }

    fn targets<'a>(&self, batch: Batch<'a>) -> Option<&'a [u32]> {
        crate::class_targets(batch, self.stage.raw_dim())
    }
}

/// Truncated normal draws (redrawn beyond two standard deviations, as TF's
/// `truncated_normal_initializer`) of standard deviation `std` into `out`.
fn truncated_normal(rng: &mut Rng, std: f32, out: &mut [f32]) {
    for v in out {
        *v = loop {
            let z: f32 = rng.sample(StandardNormal);
            if z.abs() <= 2.0 {
                break std * z;
            }
        };
    }
}

impl Model for TfCifarCnn {
    fn name(&self) -> &'static str {
        "cnn-ifca-cifar"
    }

    fn num_params(&self) -> usize {
        self.layout().end
    }

    fn input_dim(&self) -> usize {
        self.stage.raw_dim()
    }

    /// Convolution filters `[out, ky, kx, in]` (channels-last), then the
    /// dense layers as PyTorch's `nn.Linear`s: `fc1` and `fc2` are the
    /// tutorial's `local3` and `local4`, `fc3` its `softmax_linear`.
    fn tensors(&self) -> Vec<TensorSpec> {
        let (c, f) = (self.stage.raw.channels, self.filters);
        vec![
            TensorSpec::new("conv1.weight", &[f, KERNEL, KERNEL, c]),
            TensorSpec::new("conv1.bias", &[f]),
            TensorSpec::new("conv2.weight", &[f, KERNEL, KERNEL, f]),
            TensorSpec::new("conv2.bias", &[f]),
            TensorSpec::new("fc1.weight", &[self.dense1, self.flat()]),
            TensorSpec::new("fc1.bias", &[self.dense1]),
            TensorSpec::new("fc2.weight", &[self.dense2, self.dense1]),
            TensorSpec::new("fc2.bias", &[self.dense2]),
            TensorSpec::new("fc3.weight", &[self.classes, self.dense2]),
            TensorSpec::new("fc3.bias", &[self.classes]),
        ]
    }

    fn init(&self, rng: &mut Rng, out: &mut [f32]) {
        let l = self.layout();
        truncated_normal(rng, 0.05, &mut out[..l.b1]);
        out[l.b1..l.w2].fill(0.0);
        truncated_normal(rng, 0.05, &mut out[l.w2..l.b2]);
        out[l.b2..l.w3].fill(0.1);
        truncated_normal(rng, 0.04, &mut out[l.w3..l.b3]);
        out[l.b3..l.w4].fill(0.1);
        truncated_normal(rng, 0.04, &mut out[l.w4..l.b4]);
        out[l.b4..l.w5].fill(0.1);
        truncated_normal(rng, 1.0 / 192.0, &mut out[l.w5..l.b5]);
        out[l.b5..l.end].fill(0.0);
    }

    fn loss(&self, params: &[f32], batch: Batch<'_>, ws: &mut Workspace) -> f64 {
        self.loss_and_correct(params, batch, ws).0
    }

    fn loss_grad(
        &self,
        params: &[f32],
        batch: Batch<'_>,
        grad: &mut [f32],
        ws: &mut Workspace,
    ) -> f64 {
        assert_eq!(
            params.len(),
            self.num_params(),
            "tf-cifar: parameter length"
        );
        assert_eq!(grad.len(), self.num_params(), "tf-cifar: gradient length");
        let Some(y) = self.targets(batch) else {
            grad.fill(f32::NAN);
            return f64::NAN;
        };
        self.pass(params, Images::Raw(batch.x), y, Some(grad), ws).0
    }

    fn count_correct(&self, params: &[f32], batch: Batch<'_>, ws: &mut Workspace) -> Option<usize> {
        self.loss_and_correct(params, batch, ws).1
    }

    fn loss_and_correct(
        &self,
        params: &[f32],
        batch: Batch<'_>,
        ws: &mut Workspace,
    ) -> (f64, Option<usize>) {
        assert_eq!(
            params.len(),
            self.num_params(),
            "tf-cifar: parameter length"
        );
        let Some(y) = self.targets(batch) else {
            return (f64::NAN, None);
        };
        // In chunks, so that the buffers stay those of EVAL_CHUNK images.
        let (d, mut sum, mut correct) = (self.stage.raw_dim(), 0.0, 0);
        for (x, y) in batch.x.chunks(EVAL_CHUNK * d).zip(y.chunks(EVAL_CHUNK)) {
            let (loss, right) = self.pass(params, Images::Raw(x), y, None, ws);
            sum += loss * y.len() as f64;
            correct += right;
        }
        (sum / y.len().max(1) as f64, Some(correct))
    }

    fn forward_flops_per_sample(&self) -> u64 {
        let (c1, c2) = self.convs();
        let conv = |c: &Conv| 2 * (c.positions() * c.patch() * self.filters) as u64;
        let dense = self.flat() * self.dense1 + self.dense1 * self.dense2;
        conv(&c1) + conv(&c2) + 2 * (dense + self.dense2 * self.classes) as u64
    }

    fn head_start(&self) -> usize {
        self.layout().w5
    }

    #[allow(clippy::too_many_arguments)]
    fn train_minibatch(
        &self,
        params: &mut [f32],
        batch: Batch<'_>,
        spec: &MinibatchSpec<'_>,
        steps: usize,
        state: &mut OptimizerState,
        rng: &mut Rng,
        ws: &mut Workspace,
    ) -> Option<f64> {
        let Some(mut pass) = train::StagedPass::new(self, batch) else {
            return Some(f64::NAN);
        };
        Some(run_steps(&mut pass, params, spec, steps, state, rng, ws))
    }
}
