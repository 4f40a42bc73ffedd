//! A convolutional network: two `k x k` convolutions (stride 1, zero padding
//! `padding`: 0 is valid, `k / 2` same), each followed by ReLU and 2x2
//! max-pooling, then a ReLU dense layer and a softmax output (the IFCA paper's
//! CNN: valid 5x5 convolutions of 32 and 64 channels, dense 512, 10 classes;
//! LEAF's FEMNIST CNN: the same with padding 2, dense 2048, 62 classes).
//!
//! Images are channels-last (`height x width x channels`, MNIST's 28x28 is
//! 28x28x1). A convolution is `im2col` then a GEMM, a few images at a time
//! ([`conv`]): `Z = cols · Wᵀ + b` has one row per position and one column per
//! output channel, which is channels-last again.
//!
//! Parameters, back to back: conv1 `W` (`c1 x k·k·in`) and `b` (`c1`), conv2 `W`
//! (`c2 x k·k·c1`) and `b`, dense `W` (`hidden x flat`) and `b`, output `W`
//! (`classes x hidden`) and `b`; all initialised like PyTorch (`U(±1/√fan_in)`).

use fedcluster_core::train::Augmentation;
use fedcluster_core::{Batch, Model, Rng, TensorSpec, Workspace};

use crate::init::uniform_fan_in;
use crate::logistic::{
    bias_grad, count_argmax_matches, loss_and_softmax_minus_onehot, sample_loss,
};
use crate::{ModelError, Result, TargetKind, inv_len};

pub(crate) mod conv;
pub(crate) mod conv_path;
pub mod conv_timing;
#[cfg(test)]
mod kernel_tests;
pub(crate) mod layers;
pub(crate) mod pool;
pub mod step_timing;
#[cfg(test)]
mod strided_tests;
#[cfg(test)]
mod tests;
pub(crate) mod winograd;
mod winograd_grid;
#[cfg(test)]
mod winograd_tests;
mod winograd_tiling;
mod winograd_transforms;
mod winograd_transforms5;

use conv::Conv;
use conv_path::ConvPath;
use layers::{bias_relu, dense, input_grad, relu_backward, weight_grad};
use pool::{pool_forward, pool_relu_backward};

/// The network's shape.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Cnn {
    /// Input height.
    pub height: usize,
    /// Input width.
    pub width: usize,
    /// Input channels.
    pub channels: usize,
    /// Convolution kernel side.
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
    /// Augmentation of the input images in minibatch local training (the
    /// flat loop reads it through [`Model::augmentation`]).
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
    end: usize,
}

impl Cnn {
    /// The IFCA paper's CNN for `height x width x channels` images.
    pub fn paper(height: usize, width: usize, channels: usize, classes: usize) -> Result<Self> {
        Self::new(Cnn {
            height,
            width,
            channels,
            kernel: 5,
            padding: 0,
            conv1: 32,
            conv2: 64,
            hidden: 512,
            classes,
            augmentation: None,
        })
    }

    /// Checks a shape: every size at least 1, at least 2 classes, and images
    /// large enough for both convolutions and poolings.
    pub fn new(shape: Cnn) -> Result<Self> {
        let bad = |why: &str| {
            Err(ModelError::Invalid {
                model: "cnn",
                why: why.into(),
            })
        };
        let s = shape;
        if [
            s.height, s.width, s.channels, s.kernel, s.conv1, s.conv2, s.hidden,
        ]
        .contains(&0)
        {
            return bad("every size must be at least 1");
        }
        if s.classes < 2 {
            return bad("classes must be at least 2");
        }
        if s.padding >= s.kernel {
            return bad("padding must be smaller than the kernel");
        }
        let (c1, c2) = s.convs();
        if c1.out_h < 2 || c1.out_w < 2 || c2.out_h < 2 || c2.out_w < 2 {
            return bad("images are too small for two convolutions and poolings");
        }
        Ok(shape)
    }

    fn second_conv_out(&self) -> (usize, usize) {
        let (_, c2) = self.convs();
        (c2.out_h, c2.out_w)
    }

    /// How each convolution runs ([`ConvPath::choose`]: the second, 32
    /// channels in, by Winograd at the papers' shapes).
    fn paths(&self) -> (ConvPath, ConvPath) {
        let (c1, c2) = self.convs();
        (
            ConvPath::choose(&c1, self.conv1, 1),
            ConvPath::choose(&c2, self.conv2, 1),
        )
    }

    fn convs(&self) -> (Conv, Conv) {
        let (k, pad) = (self.kernel, self.padding);
        let first = Conv::new(self.height, self.width, self.channels, k, pad);
        let second = Conv::new(first.out_h / 2, first.out_w / 2, self.conv1, k, pad);
        (first, second)
    }

    /// Length of the flattened second pooling output.
    fn flat(&self) -> usize {
        let (h2, w2) = self.second_conv_out();
        (h2 / 2) * (w2 / 2) * self.conv2
    }

    fn layout(&self) -> Layout {
        let (c1, c2) = self.convs();
        let b1 = self.conv1 * c1.patch();
        let w2 = b1 + self.conv1;
        let b2 = w2 + self.conv2 * c2.patch();
        let w3 = b2 + self.conv2;
        let b3 = w3 + self.hidden * self.flat();
        let w4 = b3 + self.hidden;
        let b4 = w4 + self.classes * self.hidden;
        Layout {
            b1,
            w2,
            b2,
            w3,
            b3,
            w4,
            b4,
            end: b4 + self.classes,
        }
    }

    /// The CNN trains on class indices below `classes`.
    pub fn target_kind(&self) -> TargetKind {
        TargetKind::Class {
            classes: self.classes,
        }
    }

    fn targets<'a>(&self, batch: Batch<'a>) -> Option<&'a [u32]> {
        crate::class_targets(batch, self.height * self.width * self.channels)
    }
}

/// Buffers of one forward pass, kept for the backward pass.
struct Forward<'a> {
    scratch: &'a mut [f32],
    a1: &'a mut [f32],
    p1: &'a mut [f32],
    idx1: &'a mut [f32],
    a2: &'a mut [f32],
    p2: &'a mut [f32],
    idx2: &'a mut [f32],
    h: &'a mut [f32],
    z: &'a mut [f32],
}

impl Cnn {
    /// Lengths of the [`Forward`] buffers, in order.
    fn buffer_lens(&self, n: usize) -> [usize; 9] {
        let (c1, c2) = self.convs();
        let (path1, path2) = self.paths();
        let pos1 = c1.out_h * c1.out_w;
        let pos2 = c2.out_h * c2.out_w;
        let pooled1 = c2.in_h * c2.in_w * self.conv1;
        [
            path1
                .scratch_len(&c1, self.conv1, n)
                .max(path2.scratch_len(&c2, self.conv2, n)),
            n * pos1 * self.conv1,
            n * pooled1,
            n * pooled1,
            n * pos2 * self.conv2,
            n * self.flat(),
            n * self.flat(),
            n * self.hidden,
            n * self.classes,
        ]
    }

    fn forward(&self, params: &[f32], x: &[f32], n: usize, f: &mut Forward<'_>) {
        let l = self.layout();
        let (c1, c2) = self.convs();
        let (path1, path2) = self.paths();
        path1.forward(&c1, x, &params[..l.b1], n, f.scratch, f.a1);
        bias_relu(f.a1, &params[l.b1..l.w2]);
        pool_forward(c1.out_h, c1.out_w, self.conv1, n, f.a1, f.p1, f.idx1);
        path2.forward(&c2, f.p1, &params[l.w2..l.b2], n, f.scratch, f.a2);
        bias_relu(f.a2, &params[l.b2..l.w3]);
        pool_forward(c2.out_h, c2.out_w, self.conv2, n, f.a2, f.p2, f.idx2);
        dense(f.h, f.p2, &params[l.w3..l.b3], self.flat(), 1.0);
        bias_relu(f.h, &params[l.b3..l.w4]);
        dense(f.z, f.h, &params[l.w4..l.b4], self.hidden, 1.0);
        for row in f.z.chunks_exact_mut(self.classes) {
            for (v, b) in row.iter_mut().zip(&params[l.b4..l.end]) {
                *v += b;
            }
        }
    }
}

impl Model for Cnn {
    fn name(&self) -> &'static str {
        "cnn"
    }
    fn augmentation(&self) -> Option<Augmentation> {
        self.augmentation
    }

    fn num_params(&self) -> usize {
        self.layout().end
    }

    /// Convolution filters `[out, ky, kx, in]` (channels-last, as the flat
    /// vector holds them), then the dense layers as PyTorch's `nn.Linear`s.
    fn tensors(&self) -> Vec<TensorSpec> {
        let k = self.kernel;
        vec![
            TensorSpec::new("conv1.weight", &[self.conv1, k, k, self.channels]),
            TensorSpec::new("conv1.bias", &[self.conv1]),
            TensorSpec::new("conv2.weight", &[self.conv2, k, k, self.conv1]),
            TensorSpec::new("conv2.bias", &[self.conv2]),
            TensorSpec::new("fc1.weight", &[self.hidden, self.flat()]),
            TensorSpec::new("fc1.bias", &[self.hidden]),
            TensorSpec::new("fc2.weight", &[self.classes, self.hidden]),
            TensorSpec::new("fc2.bias", &[self.classes]),
        ]
    }

    fn input_dim(&self) -> usize {
        self.height * self.width * self.channels
    }

    fn init(&self, rng: &mut Rng, out: &mut [f32]) {
        let l = self.layout();
        let (c1, c2) = self.convs();
        uniform_fan_in(rng, c1.patch(), &mut out[..l.w2]);
        uniform_fan_in(rng, c2.patch(), &mut out[l.w2..l.w3]);
        uniform_fan_in(rng, self.flat(), &mut out[l.w3..l.w4]);
        uniform_fan_in(rng, self.hidden, &mut out[l.w4..l.end]);
    }

    fn loss(&self, params: &[f32], batch: Batch<'_>, ws: &mut Workspace) -> f64 {
        assert_eq!(params.len(), self.num_params(), "cnn: parameter length");
        let Some(y) = self.targets(batch) else {
            return f64::NAN;
        };
        let n = y.len();
        let [scratch, a1, p1, idx1, a2, p2, idx2, h, z] = ws.slices(self.buffer_lens(n));
        let mut f = Forward {
            scratch,
            a1,
            p1,
            idx1,
            a2,
            p2,
            idx2,
            h,
            z,
        };
        self.forward(params, batch.x, n, &mut f);
        let sum: f64 =
            f.z.chunks_exact(self.classes)
                .zip(y)
                .map(|(zi, &yi)| sample_loss(zi, yi))
                .sum();
        sum * inv_len(n)
    }

    fn loss_grad(
        &self,
        params: &[f32],
        batch: Batch<'_>,
        grad: &mut [f32],
        ws: &mut Workspace,
    ) -> f64 {
        assert_eq!(params.len(), self.num_params(), "cnn: parameter length");
        assert_eq!(grad.len(), self.num_params(), "cnn: gradient length");
        let Some(y) = self.targets(batch) else {
            grad.fill(f32::NAN);
            return f64::NAN;
        };
        let n = y.len();
        let l = self.layout();
        let (c1, c2) = self.convs();
        let (path1, path2) = self.paths();
        let lens = self.buffer_lens(n);
        // Forward buffers, then scratch for the backward pass.
        let [
            scratch,
            a1,
            p1,
            idx1,
            a2,
            p2,
            idx2,
            h,
            z,
            dh,
            dp2,
            da2,
            dp1,
            da1,
        ] = ws.slices([
            lens[0], lens[1], lens[2], lens[3], lens[4], lens[5], lens[6], lens[7], lens[8],
            lens[7], lens[5], lens[4], lens[2], lens[1],
        ]);
        let mut f = Forward {
            scratch,
            a1,
            p1,
            idx1,
            a2,
            p2,
            idx2,
            h,
            z,
        };
        self.forward(params, batch.x, n, &mut f);
        let mut loss = 0.0;
        for (zi, &yi) in f.z.chunks_exact_mut(self.classes).zip(y) {
            loss += loss_and_softmax_minus_onehot(zi, yi);
        }
        let s = inv_len(n) as f32;
        // Output layer.
        weight_grad(&mut grad[l.w4..l.b4], f.z, f.h, n, s);
        bias_grad(f.z, self.classes, 0, s, &mut grad[l.b4..l.end]);
        input_grad(dh, f.z, &params[l.w4..l.b4], n, 1.0);
        relu_backward(dh, f.h);
        // Dense layer.
        weight_grad(&mut grad[l.w3..l.b3], dh, f.p2, n, s);
        bias_grad(dh, self.hidden, 0, s, &mut grad[l.b3..l.w4]);
        input_grad(dp2, dh, &params[l.w3..l.b3], n, 1.0);
        // Second convolution: unpool, ReLU, weights over every position.
        pool_relu_backward(dp2, f.idx2, f.p2, da2);
        path2.backward(
            &c2,
            f.p1,
            da2,
            &params[l.w2..l.b2],
            n,
            s,
            f.scratch,
            &mut grad[l.w2..l.b2],
            Some(&mut *dp1),
        );
        bias_grad(da2, self.conv2, 0, s, &mut grad[l.b2..l.w3]);
        // First convolution (the input needs no gradient).
        pool_relu_backward(dp1, f.idx1, f.p1, da1);
        let (x, w1) = (batch.x, &params[..l.b1]);
        path1.backward(&c1, x, da1, w1, n, s, f.scratch, &mut grad[..l.b1], None);
        bias_grad(da1, self.conv1, 0, s, &mut grad[l.b1..l.w2]);
        loss * inv_len(n)
    }

    fn count_correct(&self, params: &[f32], batch: Batch<'_>, ws: &mut Workspace) -> Option<usize> {
        let y = self.targets(batch)?;
        let n = y.len();
        let [scratch, a1, p1, idx1, a2, p2, idx2, h, z] = ws.slices(self.buffer_lens(n));
        let mut f = Forward {
            scratch,
            a1,
            p1,
            idx1,
            a2,
            p2,
            idx2,
            h,
            z,
        };
        self.forward(params, batch.x, n, &mut f);
        Some(count_argmax_matches(f.z, self.classes, y))
    }

    fn forward_flops_per_sample(&self) -> u64 {
        let (c1, c2) = self.convs();
        let conv = |c: &Conv, out: usize| 2 * (c.out_h * c.out_w * c.patch() * out) as u64;
        conv(&c1, self.conv1)
            + conv(&c2, self.conv2)
            + 2 * (self.flat() * self.hidden + self.hidden * self.classes) as u64
    }

    fn head_start(&self) -> usize {
        self.layout().w4
    }
}
