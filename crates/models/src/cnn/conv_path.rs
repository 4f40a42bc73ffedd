//! How a network's convolution runs: by Winograd where
//! [`winograd::wins`], else by `im2col` and a GEMM (strided convolutions
//! always by `im2col`). Chosen once per layer from its shape, so a model's
//! path, and its bits, never depend on the batch or the thread count.

use super::conv::{Conv, conv_backward, conv_backward_strided, conv_forward, conv_forward_strided};
use super::winograd;

/// The path of one convolution.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ConvPath {
    /// Winograd F(2x2, 3x3) or F(2x2, 5x5) ([`winograd::wins`]).
    Winograd,
    /// `im2col` and a GEMM, stride 1.
    Im2col,
    /// `im2col` with this stride and a GEMM ([`conv_forward_strided`]).
    Strided(usize),
}

impl ConvPath {
    /// The path for `c` to `cout` channels with the kernel moved `stride`
    /// values at a time.
    pub fn choose(c: &Conv, cout: usize, stride: usize) -> Self {
        if stride > 1 {
            ConvPath::Strided(stride)
        } else if winograd::wins(c, cout) {
            ConvPath::Winograd
        } else {
            ConvPath::Im2col
        }
    }

    /// Scratch values the passes over `n` images need.
    pub fn scratch_len(self, c: &Conv, cout: usize, n: usize) -> usize {
        match self {
            ConvPath::Winograd => winograd::scratch_len(c, cout, n),
            ConvPath::Im2col | ConvPath::Strided(_) => c.scratch_len(n),
        }
    }

    /// `z` = the convolution of the `n` images `x` by the filters `w`, as
    /// [`conv_forward`].
    pub fn forward(
        self,
        c: &Conv,
        x: &[f32],
        w: &[f32],
        n: usize,
        scratch: &mut [f32],
        z: &mut [f32],
    ) {
        match self {
            ConvPath::Winograd => winograd::forward(c, x, w, n, scratch, z),
            ConvPath::Im2col => conv_forward(c, x, w, n, scratch, z),
            ConvPath::Strided(stride) => conv_forward_strided(c, stride, x, w, n, scratch, z),
        }
    }

    /// The backward pass of [`ConvPath::forward`], as [`conv_backward`]: the
    /// filters' gradient `gw` (overwritten, times `scale`) and, when given,
    /// the input gradient `dx` (overwritten).
    #[allow(clippy::too_many_arguments)]
    pub fn backward(
        self,
        c: &Conv,
        x: &[f32],
        d: &[f32],
        w: &[f32],
        n: usize,
        scale: f32,
        scratch: &mut [f32],
        gw: &mut [f32],
        dx: Option<&mut [f32]>,
    ) {
        match self {
            ConvPath::Winograd => winograd::backward(c, x, d, w, n, scale, scratch, gw, dx),
            ConvPath::Im2col => conv_backward(c, x, d, w, n, scale, scratch, gw, dx),
            ConvPath::Strided(stride) => {
                conv_backward_strided(c, stride, x, d, w, n, scale, scratch, gw, dx)
            }
        }
    }
}
