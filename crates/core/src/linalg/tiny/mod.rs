//! Tiny products without the `gemm` crate's dispatch, bit for bit as `gemm`
//! 0.19 computes them.
//!
//! A small client (two MNIST images, a 196 x 10 logistic model) spends a
//! quarter of its local training in `gemm`'s set-up around products of a
//! few hundred multiply-adds. For exactly the shapes where `gemm` takes its
//! own shortcuts, this module does the same arithmetic directly:
//!
//! - the *horizontal* path (`gemm` on an x86-64 CPU with FMA: its AVX2
//!   kernels): both operands contiguous along the inner dimension `k`
//!   (`a`'s rows, `b`'s columns) and `m x n <= 256`. Each output is a dot
//!   product in 8 FMA lanes (element `p` in lane `p % 8`, the tail
//!   zero-padded), the lanes summed `(l, l + 4)`, then `(l, l + 2)`, then
//!   `(0, 1)`, times the scale; `k <= 1024` (one of `gemm`'s depth blocks).
//!   [`horizontal`] computes them, two rows per 16-lane FMA where the CPU
//!   has AVX-512.
//! - `gevv` (any CPU, where the horizontal path does not apply) for `k <= 2`
//!   with `b`'s and `c`'s rows contiguous: `l1 (s r1) + l0 (s r0)` unfused,
//!   where `gemm` first transposes a row-major product (`l` from `b`, `r`
//!   from `a`). [`gevv`] computes them.
//!
//! Only products that overwrite `c` come here; everything else goes to
//! `gemm`. `tests` checks every path against `gemm` itself. [`fused`] runs a
//! `gevv` weight update and the horizontal product after it in one pass.

mod fused;
mod gevv;
mod horizontal;
#[cfg(test)]
mod tests;

use super::{MatMut, MatRef};
use gevv::{Sink, gevv};

/// Largest `m x n` of `gemm`'s horizontal path.
const HORIZONTAL_OUTPUTS: usize = 16 * 16;
/// `gemm`'s depth block on the horizontal path.
const HORIZONTAL_DEPTH: usize = 1024;

/// `c <- scale * a * b` where `gemm` would take a shortcut; `false` (and
/// `c` untouched) elsewhere.
pub(super) fn matmul(c: &mut MatMut<'_>, a: &MatRef<'_>, b: &MatRef<'_>, scale: f32) -> bool {
    if takes_horizontal_path(c, a, b) {
        if a.cols > HORIZONTAL_DEPTH {
            return false;
        }
        horizontal::product(c, a, b, scale);
        return true;
    }
    gevv(c, a, b, scale, Sink::Store)
}

/// `y <- y + alpha * (scale * a * b)` where [`matmul`] would take the `gevv`
/// shortcut: each product rounded as `matmul` rounds it, then added as
/// `axpy` adds it, so the same bits as the two calls without the product's
/// matrix ([`fused_update`] where it applies, else `gevv`); `false` (and
/// `y` untouched) elsewhere.
pub(super) fn add_product(
    y: &mut MatMut<'_>,
    alpha: f32,
    a: &MatRef<'_>,
    b: &MatRef<'_>,
    scale: f32,
) -> bool {
    !takes_horizontal_path(y, a, b)
        && (fused_update(y, alpha, a, b, scale) || gevv(y, a, b, scale, Sink::AddScaled(alpha)))
}

/// [`add_product`] by the fused pass without products (8 lanes, the samples
/// loaded once for four weight rows): for `y` (the weights, `rows x dim`)
/// and `b` (the samples, `n x dim`) row-major and `a` the transpose of a
/// row-major `n x rows` (`Δᵀ`, a linear layer's gradient step) where
/// [`fused_samples`] applies; `false`, nothing touched, elsewhere.
fn fused_update(
    y: &mut MatMut<'_>,
    alpha: f32,
    a: &MatRef<'_>,
    b: &MatRef<'_>,
    scale: f32,
) -> bool {
    let (rows, dim, n) = (y.rows, y.cols, a.cols);
    let rows_in_order =
        (y.col_stride, y.row_stride, b.col_stride, b.row_stride) == (1, dim, 1, dim);
    if !rows_in_order || (a.row_stride, a.col_stride) != (1, rows) {
        return false;
    }
    let (w, x, delta) = (
        &mut y.data[..rows * dim],
        &b.data[..n * dim],
        &a.data[..n * rows],
    );
    #[cfg(target_arch = "x86_64")]
    if let Some((samples, n)) = fused_samples(w, dim, x) {
        // SAFETY: `fused_samples` checked the CPU; the slices have the shapes.
        unsafe { fused::step(w, dim, alpha, samples, n, scale, delta) };
        return true;
    }
    let _ = (w, alpha, x, scale, delta);
    false
}

/// [`super::step_then_forward`] where [`add_product`] takes the `gevv`
/// shortcut and [`matmul`] the horizontal one ([`fused_samples`]); `false`,
/// nothing touched, elsewhere.
pub(super) fn step_then_forward(
    w: &mut [f32],
    dim: usize,
    alpha: f32,
    x: &[f32],
    scale: f32,
    z: &mut [f32],
) -> bool {
    #[cfg(target_arch = "x86_64")]
    if let Some((samples, n)) = fused_samples(w, dim, x) {
        // SAFETY: `fused_samples` checked the CPU; the caller the lengths.
        unsafe { fused::step_then_forward(w, dim, alpha, samples, n, scale, z) };
        return true;
    }
    let _ = (w, dim, alpha, x, scale, z);
    false
}

/// The samples (the first twice for one) and their number `n`, where the
/// fused pass applies: one or two samples, `dim >= 2` (for `dim = 1`,
/// `rows = 1` the update is a horizontal product too), and the CPU has FMA.
#[cfg(target_arch = "x86_64")]
fn fused_samples<'x>(w: &[f32], dim: usize, x: &'x [f32]) -> Option<([&'x [f32]; 2], usize)> {
    let (n, rows) = (x.len() / dim.max(1), w.len() / dim.max(1));
    let applies = has_fma()
        && (n == 1 || n == 2)
        && (2..=HORIZONTAL_DEPTH).contains(&dim)
        && rows >= 1
        && n * rows <= HORIZONTAL_OUTPUTS;
    applies.then(|| ([&x[..dim], &x[(n - 1) * dim..][..dim]], n))
}

/// Whether `matmul` computes `c` by horizontal dot products.
fn takes_horizontal_path(c: &MatMut<'_>, a: &MatRef<'_>, b: &MatRef<'_>) -> bool {
    has_fma() && a.col_stride == 1 && b.row_stride == 1 && c.rows * c.cols <= HORIZONTAL_OUTPUTS
}

/// Whether the CPU has AVX-512F.
pub(super) fn has_avx512() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::is_x86_feature_detected!("avx512f")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// Whether `gemm` runs its FMA (AVX2) kernels here, and so can we.
fn has_fma() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::is_x86_feature_detected!("fma") && std::is_x86_feature_detected!("avx2")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}
