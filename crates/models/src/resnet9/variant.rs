//! The two ResNet9s: Page's (the default) and the SR-FCA public code's
//! "ffcv" ResNet9 (`cifar_code/model.py` of harshv834/sr-fca at a1b418f), as
//! eight conv-BN-ReLU blocks each, two of them residual.
//!
//! ```text
//! SR-FCA code (model.N: its nn.Sequential's index)
//! prep    model.0    conv 3x3 (c -> w) BN ReLU
//! layer1  model.1    conv 5x5 stride 2 pad 2 (w -> 2w) BN ReLU
//! res1    model.2    + residual(conv BN ReLU, conv BN ReLU)
//! layer2  model.3-4  conv 3x3 (2w -> 4w) BN ReLU maxpool2
//! res2    model.5    + residual(conv BN ReLU, conv BN ReLU)
//! layer3  model.6    conv 3x3 pad 0 (4w -> 2w) BN ReLU
//! head    model.7-10 global max-pool, linear (2w -> classes, no bias), x 0.2
//! ```
//!
//! Every convolution has no bias; batch normalisation is PyTorch's default
//! (`ε = 1e-5`, momentum 0.1); the residual adds the block pair's output to
//! its input, with no ReLU after the sum; initialisation is PyTorch's default
//! for both, as [`super::ResNet9`]'s `init` writes it.

use serde::{Deserialize, Serialize};

/// Which ResNet9 (`[model] variant`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Variant {
    /// Page's ResNet9 ("How to train your ResNet 4", 2019), the network the
    /// SR-FCA paper names.
    #[default]
    Page,
    /// The SR-FCA public code's ffcv ResNet9 (`cifar_code/model.py`).
    Srfca,
}

/// One conv-BN-ReLU block of a variant.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Spec {
    /// Its tensors' name prefix.
    pub name: &'static str,
    pub cin: usize,
    pub cout: usize,
    /// Square kernels of this side.
    pub k: usize,
    pub stride: usize,
    pub pad: usize,
    /// A 2x2 max-pooling after the ReLU.
    pub pool: bool,
    /// The block's output is its ReLU's plus the output of the block two
    /// before (the end of a residual pair; never pooled).
    pub residual: bool,
}

const fn spec(name: &'static str, cin: usize, cout: usize, pool: bool, residual: bool) -> Spec {
    Spec {
        name,
        cin,
        cout,
        k: 3,
        stride: 1,
        pad: 1,
        pool,
        residual,
    }
}

impl Variant {
    /// The eight blocks for `c` image channels and width `w`.
    pub(super) fn specs(self, c: usize, w: usize) -> [Spec; 8] {
        match self {
            Variant::Page => [
                spec("prep", c, w, false, false),
                spec("layer1", w, 2 * w, true, false),
                spec("res1.0", 2 * w, 2 * w, false, false),
                spec("res1.1", 2 * w, 2 * w, false, true),
                spec("layer2", 2 * w, 4 * w, true, false),
                spec("layer3", 4 * w, 8 * w, true, false),
                spec("res3.0", 8 * w, 8 * w, false, false),
                spec("res3.1", 8 * w, 8 * w, false, true),
            ],
            Variant::Srfca => [
                spec("prep", c, w, false, false),
                Spec {
                    k: 5,
                    stride: 2,
                    pad: 2,
                    ..spec("layer1", w, 2 * w, false, false)
                },
                spec("res1.0", 2 * w, 2 * w, false, false),
                spec("res1.1", 2 * w, 2 * w, false, true),
                spec("layer2", 2 * w, 4 * w, true, false),
                spec("res2.0", 4 * w, 4 * w, false, false),
                spec("res2.1", 4 * w, 4 * w, false, true),
                Spec {
                    pad: 0,
                    ..spec("layer3", 4 * w, 2 * w, false, false)
                },
            ],
        }
    }

    /// The scale of the logits (Page's `Mul(0.125)`, the code's `Mul(0.2)`).
    pub(super) fn logit_scale(self) -> f32 {
        match self {
            Variant::Page => 0.125,
            Variant::Srfca => 0.2,
        }
    }

    /// Why square images of side `side` do not fit, if they do not.
    pub(super) fn check_side(self, side: usize) -> Option<String> {
        match self {
            Variant::Page if side < 8 || !side.is_multiple_of(8) => Some(format!(
                "images must be square with a side that is a multiple of 8 (three poolings), got side {side}"
            )),
            // Stride 2 and a pooling halve it twice; the last 3x3 without
            // padding needs at least 3 positions.
            Variant::Srfca if side < 12 || !side.is_multiple_of(4) => Some(format!(
                "the SR-FCA code's ResNet9 takes square images whose side is a multiple of 4 and at least 12 (a stride-2 convolution, a pooling, then a 3x3 convolution without padding), got side {side}"
            )),
            _ => None,
        }
    }
}

/// The side of a convolution's output: `(side + 2 pad − k) / stride + 1`
/// (PyTorch's, rounding down; 0 when the kernel does not fit).
pub(super) fn out_side(side: usize, s: &Spec) -> usize {
    (side + 2 * s.pad)
        .checked_sub(s.k)
        .map_or(0, |span| span / s.stride + 1)
}
