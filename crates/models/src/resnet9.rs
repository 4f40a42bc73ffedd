//! ResNet9 (Page, "How to train your ResNet 4: Architecture", 2019), the
//! SR-FCA paper's CIFAR-10 network, hand-written over flat parameters on
//! channels-last images, in the layout of the burn tier's
//! `fedcluster_nn::nets::ResNet9`:
//!
//! ```text
//! prep    conv 3x3 (c -> w) BN ReLU
//! layer1  conv 3x3 (w -> 2w) BN ReLU maxpool2, + residual(conv BN ReLU, conv BN ReLU)
//! layer2  conv 3x3 (2w -> 4w) BN ReLU maxpool2
//! layer3  conv 3x3 (4w -> 8w) BN ReLU maxpool2, + residual(conv BN ReLU, conv BN ReLU)
//! head    global max-pool, linear (8w -> classes, no bias), x 0.125
//! ```
//!
//! With `variant` [`Variant::Srfca`], the SR-FCA public code's "ffcv"
//! ResNet9 instead (a 5x5 stride-2 convolution, residual blocks at 2w and
//! 4w, a 3x3 convolution without padding to 2w, logits x 0.2:
//! [`variant`]), on the same machinery.
//!
//! Convolutions have no bias, padding 1 (by Winograd F(2x2, 3x3),
//! [`crate::cnn::winograd`], from 16 input channels, else im2col and GEMMs
//! a few images at a time,
//! [`crate::cnn::conv`]). Each block's tensors, back to back:
//! filters `[out, 3, 3, in]`, batch norm's scale and shift, then its running
//! mean and variance, which are part of the flat vector: gradients are zero
//! there, training ([`Model::train`], [`Model::train_minibatch`]) moves them
//! after each step from the batch's statistics, and evaluation
//! ([`Model::loss`], [`Model::count_correct`]) normalises with them, while
//! [`Model::loss_grad`] uses the batch's statistics and updates nothing, as
//! the burn tier does. The width `w` is a parameter (Page: 64).
//!
//! Two recipe pieces of the SR-FCA public code, off by default: a per-channel
//! `(v − mean) / std` normalisation of the input images (torchvision's
//! `Normalize`), applied in every pass, training (after the augmentation)
//! and evaluation alike; and label smoothing of the loss
//! ([`smoothed_cross_entropy`]), in training and evaluation alike (as the
//! code's `calc_loss`).
//!
//! [`smoothed_cross_entropy`]: fedcluster_core::train::smoothing::smoothed_cross_entropy

mod block;
mod loss;
mod pass;
#[cfg(test)]
mod tests;
mod train;
pub mod variant;
#[cfg(test)]
mod variant_tests;

use fedcluster_core::train::minibatch::run_steps;
use fedcluster_core::train::{Augmentation, MinibatchSpec, Normalize, OptimizerState};
use fedcluster_core::{Batch, ImageShape, Model, Rng, Targets, TensorSpec, Workspace};

use crate::cnn::conv::Conv;
use crate::cnn::conv_path::ConvPath;
use crate::init::uniform_fan_in;
use crate::{ModelError, Result, fits};
use block::Block;
pub use variant::Variant;

/// Samples per forward pass when evaluating (bounds the activations' memory).
pub const EVAL_CHUNK: usize = 64;

/// ResNet9's shape.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ResNet9 {
    /// Input images (square, side a multiple of 8).
    pub image: ImageShape,
    /// Channels of the first convolution, `w` (Page: 64).
    pub width: usize,
    /// Output classes.
    pub classes: usize,
    /// Augmentation of the input images in minibatch local training.
    pub augmentation: Option<Augmentation>,
    /// Per-channel normalisation of the input images, in every pass (`None`:
    /// the images as given).
    pub normalize: Option<Normalize>,
    /// Label smoothing `ε` of the loss, in `[0, 1)` (0: plain cross-entropy).
    pub label_smoothing: f32,
    /// Page's network (the default) or the SR-FCA code's.
    pub variant: Variant,
}

impl ResNet9 {
    /// Checks a shape: width and channels at least 1, at least 2 classes,
    /// square images whose side is a multiple of 8 (three poolings; the
    /// SR-FCA variant: of 4, at least 12), a normalisation for the images'
    /// channels, a smoothing in `[0, 1)`.
    pub fn new(shape: ResNet9) -> Result<Self> {
        let bad = |why: String| {
            Err(ModelError::Invalid {
                model: "resnet9",
                why,
            })
        };
        let ImageShape {
            height,
            width,
            channels,
        } = shape.image;
        if shape.width == 0 || channels == 0 {
            return bad("width and channels must be at least 1".into());
        }
        if shape.classes < 2 {
            return bad("classes must be at least 2".into());
        }
        if height != width {
            return bad(format!("images must be square, got {height}x{width}"));
        }
        if let Some(why) = shape.variant.check_side(height) {
            return bad(why);
        }
        if let Some(n) = shape.normalize
            && n.channels != channels
        {
            return bad(format!(
                "normalize has statistics for {} channel(s), the images have {channels}",
                n.channels
            ));
        }
        if !(0.0..1.0).contains(&shape.label_smoothing) {
            return bad(format!(
                "label smoothing must lie in [0, 1), got {}",
                shape.label_smoothing
            ));
        }
        Ok(shape)
    }

    /// The eight conv-BN-ReLU blocks, their tensors from offset 0.
    fn blocks(&self) -> Vec<Block> {
        let (mut side, mut at) = (self.image.height, 0);
        let specs = self.variant.specs(self.image.channels, self.width);
        let mut blocks = Vec::with_capacity(specs.len());
        for s in specs {
            let out = variant::out_side(side, &s);
            let conv = Conv {
                in_h: side,
                in_w: side,
                in_c: s.cin,
                k: s.k,
                pad: s.pad,
                out_h: out,
                out_w: out,
            };
            let path = ConvPath::choose(&conv, s.cout, s.stride);
            let b = Block {
                name: s.name,
                conv,
                cout: s.cout,
                pool: s.pool,
                path,
                residual: s.residual,
                at,
            };
            at = b.end();
            side = if s.pool { out / 2 } else { out };
            blocks.push(b);
        }
        blocks
    }

    /// Channels into the linear layer (the last block's).
    fn head_width(&self) -> usize {
        self.variant.specs(self.image.channels, self.width)[7].cout
    }

    /// Where the linear layer's weights start.
    fn head_at(&self) -> usize {
        self.blocks()[7].end()
    }

    /// The batch's class targets when its shape fits.
    fn targets<'a>(&self, batch: Batch<'a>) -> Option<&'a [u32]> {
        match batch.y {
            Targets::Class(y) if !y.is_empty() && fits(batch, self.input_dim()) => Some(y),
            _ => None,
        }
    }

    /// The mean loss with the batch's statistics (as in training, without
    /// updating the running ones): the loss [`Model::loss_grad`]
    /// differentiates.
    pub fn training_loss(&self, params: &[f32], batch: Batch<'_>, ws: &mut Workspace) -> f64 {
        match self.targets(batch) {
            Some(y) => self.batch_pass(params, batch.x, y, None, ws),
            None => f64::NAN,
        }
    }
}

impl Model for ResNet9 {
    fn name(&self) -> &'static str {
        "resnet9"
    }

    fn num_params(&self) -> usize {
        self.head_at() + self.classes * self.head_width()
    }

    fn input_dim(&self) -> usize {
        self.image.height * self.image.width * self.image.channels
    }

    /// The burn tier's names and shapes: per block `{name}.conv.weight`
    /// `[out, k, k, in]`, `{name}.bn.weight`, `.bias`, `.running_mean`,
    /// `.running_var`; then `linear.weight` (the SR-FCA variant's block
    /// names: [`variant`]).
    fn tensors(&self) -> Vec<TensorSpec> {
        let mut out = Vec::with_capacity(41);
        for b in self.blocks() {
            let (o, i, k, name) = (b.cout, b.conv.in_c, b.conv.k, b.name);
            out.push(TensorSpec::new(
                &format!("{name}.conv.weight"),
                &[o, k, k, i],
            ));
            for t in ["weight", "bias", "running_mean", "running_var"] {
                out.push(TensorSpec::new(&format!("{name}.bn.{t}"), &[o]));
            }
        }
        out.push(TensorSpec::new(
            "linear.weight",
            &[self.classes, self.head_width()],
        ));
        out
    }

    /// As the burn tier (and PyTorch): filters `U(±1/√fan_in)`, scales 1,
    /// shifts 0, running means 0, variances 1, the linear layer
    /// `U(±1/√fan_in)` (`8w` inputs; the SR-FCA variant's `2w`).
    fn init(&self, rng: &mut Rng, out: &mut [f32]) {
        for b in self.blocks() {
            uniform_fan_in(rng, b.conv.patch(), &mut out[b.filters()]);
            out[b.vector(0)].fill(1.0);
            out[b.vector(1)].fill(0.0);
            out[b.vector(2)].fill(0.0);
            out[b.vector(3)].fill(1.0);
        }
        let head_at = self.head_at();
        uniform_fan_in(rng, self.head_width(), &mut out[head_at..]);
    }

    fn loss(&self, params: &[f32], batch: Batch<'_>, ws: &mut Workspace) -> f64 {
        assert_eq!(params.len(), self.num_params(), "resnet9: parameter length");
        match batch.y {
            Targets::Class(y) if y.is_empty() && fits(batch, self.input_dim()) => 0.0,
            _ => match self.targets(batch) {
                Some(y) => self.evaluate(params, batch, y, ws).0 / y.len() as f64,
                None => f64::NAN,
            },
        }
    }

    fn loss_grad(
        &self,
        params: &[f32],
        batch: Batch<'_>,
        grad: &mut [f32],
        ws: &mut Workspace,
    ) -> f64 {
        assert_eq!(params.len(), self.num_params(), "resnet9: parameter length");
        assert_eq!(grad.len(), self.num_params(), "resnet9: gradient length");
        let Some(y) = self.targets(batch) else {
            grad.fill(f32::NAN);
            return f64::NAN;
        };
        self.batch_pass(params, batch.x, y, Some(grad), ws)
    }

    fn count_correct(&self, params: &[f32], batch: Batch<'_>, ws: &mut Workspace) -> Option<usize> {
        let y = match batch.y {
            Targets::Class([]) => return Some(0),
            _ => self.targets(batch)?,
        };
        Some(self.evaluate(params, batch, y, ws).1)
    }

    fn forward_flops_per_sample(&self) -> u64 {
        let convs: u64 = self
            .blocks()
            .iter()
            .map(|b| 2 * (b.conv.positions() * b.conv.patch() * b.cout) as u64)
            .sum();
        convs + 2 * (self.head_width() * self.classes) as u64
    }

    fn head_start(&self) -> usize {
        self.head_at()
    }

    fn augmentation(&self) -> Option<Augmentation> {
        self.augmentation
    }

    fn train(
        &self,
        params: &mut [f32],
        batch: Batch<'_>,
        lr: f32,
        steps: usize,
        ws: &mut Workspace,
    ) -> f64 {
        train::full_batch(self, params, batch, lr, steps, ws)
    }

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
        let Some(mut pass) = train::NormPass::new(self, batch) else {
            return Some(f64::NAN);
        };
        Some(run_steps(&mut pass, params, spec, steps, state, rng, ws))
    }
}
