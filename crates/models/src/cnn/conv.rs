//! Convolutions with zero padding over channels-last images (stride 1, or a
//! stride: the SR-FCA code's 5x5 stride 2), for [`super::Cnn`] and [`crate::resnet9::ResNet9`]: `im2col` then one GEMM,
//! a few images at a time. Patches are rows of `(ky, kx, c)` values, filters
//! rows of the same layout, so `Z = cols · Wᵀ` has one row per position and
//! one column per output channel, channels-last again.
//!
//! The patches of every image in a batch are never materialised: each chunk
//! of images (about a core's L2 cache of patch values, [`CHUNK_VALUES`]) is
//! unrolled into scratch and multiplied while still in cache, and the
//! backward pass unrolls it again for the filters' gradient and sums the
//! chunk's patch gradients back into the input gradient the same way, so the
//! patches cost cache traffic instead of memory traffic (measurements in
//! docs/performance.md). The filters' gradient is the sum of one product per
//! chunk, so its bits depend on the chunk size, which depends only on the
//! shapes: never on the thread count.

use fedcluster_core::linalg::{MatMut, MatRef, matmul};

use super::layers::{dense, input_grad};

/// A convolution's shape: `in_h x in_w x in_c` input, `k x k` kernels, stride
/// 1, `pad` rows and columns of zeros on every side, `out_h x out_w` positions.
pub(crate) struct Conv {
    pub in_h: usize,
    pub in_w: usize,
    pub in_c: usize,
    pub k: usize,
    pub pad: usize,
    pub out_h: usize,
    pub out_w: usize,
}

impl Conv {
    /// The convolution of `in_h x in_w x in_c` images by `k x k` kernels with
    /// padding `pad` (its positions follow; zero when the kernel does not fit).
    pub fn new(in_h: usize, in_w: usize, in_c: usize, k: usize, pad: usize) -> Self {
        Conv {
            in_h,
            in_w,
            in_c,
            k,
            pad,
            out_h: (in_h + 2 * pad + 1).saturating_sub(k),
            out_w: (in_w + 2 * pad + 1).saturating_sub(k),
        }
    }

    /// Values in one patch: `k · k · in_c`.
    pub fn patch(&self) -> usize {
        self.k * self.k * self.in_c
    }

    /// Output positions of one image.
    pub fn positions(&self) -> usize {
        self.out_h * self.out_w
    }

    /// Values of one input image.
    fn image(&self) -> usize {
        self.in_h * self.in_w * self.in_c
    }

    /// Scratch values [`conv_forward`] and [`conv_backward`] use for `n`
    /// images (they take less, one image at a time, if given less).
    pub fn scratch_len(&self, n: usize) -> usize {
        let per_image = self.positions() * self.patch();
        chunk_images(per_image, n, usize::MAX) * per_image
    }

    /// Where kernel row `ky` of output position `(oy, ox)` reads the image
    /// under `stride`: the first value's index in the image and the kernel
    /// columns `kx0..kx1` inside it (the others read padding); `None` when the
    /// whole row is padding.
    fn span(
        &self,
        stride: usize,
        oy: usize,
        ox: usize,
        ky: usize,
    ) -> Option<(usize, usize, usize)> {
        let iy = (oy * stride + ky)
            .checked_sub(self.pad)
            .filter(|&y| y < self.in_h)?;
        let x0 = ox * stride;
        let kx0 = self.pad.saturating_sub(x0);
        let kx1 = self.k.min((self.in_w + self.pad).saturating_sub(x0));
        (kx0 < kx1).then(|| ((iy * self.in_w + x0 + kx0 - self.pad) * self.in_c, kx0, kx1))
    }
}

/// Patches of `n` images (`in_h x in_w x in_c` each) into `cols`, one row per
/// output position (the kernel moved `stride` values at a time), values in
/// `(ky, kx, c)` order, zeros where the kernel reads padding.
pub(crate) fn im2col(c: &Conv, stride: usize, x: &[f32], n: usize, cols: &mut [f32]) {
    let img = c.in_h * c.in_w * c.in_c;
    let row_len = c.k * c.in_c;
    let mut out = cols.chunks_exact_mut(c.patch());
    for i in 0..n {
        let image = &x[i * img..(i + 1) * img];
        for oy in 0..c.out_h {
            for ox in 0..c.out_w {
                let patch = out.next().expect("cols sized for every position");
                for ky in 0..c.k {
                    let dst = &mut patch[ky * row_len..(ky + 1) * row_len];
                    let Some((start, kx0, kx1)) = c.span(stride, oy, ox, ky) else {
                        dst.fill(0.0);
                        continue;
                    };
                    let (a, b) = (kx0 * c.in_c, kx1 * c.in_c);
                    dst[..a].fill(0.0);
                    dst[a..b].copy_from_slice(&image[start..start + b - a]);
                    dst[b..].fill(0.0);
                }
            }
        }
    }
}

/// The adjoint of [`im2col`]: sums patch gradients `dcols` back into `dx`
/// (overwritten), dropping those of the padding.
pub(crate) fn col2im(c: &Conv, stride: usize, dcols: &[f32], n: usize, dx: &mut [f32]) {
    dx.fill(0.0);
    let img = c.in_h * c.in_w * c.in_c;
    let row_len = c.k * c.in_c;
    let mut rows = dcols.chunks_exact(c.patch());
    for i in 0..n {
        let image = &mut dx[i * img..(i + 1) * img];
        for oy in 0..c.out_h {
            for ox in 0..c.out_w {
                let patch = rows.next().expect("dcols sized for every position");
                for ky in 0..c.k {
                    let Some((start, kx0, kx1)) = c.span(stride, oy, ox, ky) else {
                        continue;
                    };
                    let src = &patch[ky * row_len + kx0 * c.in_c..ky * row_len + kx1 * c.in_c];
                    for (d, v) in image[start..start + src.len()].iter_mut().zip(src) {
                        *d += v;
                    }
                }
            }
        }
    }
}

/// Images per chunk of [`conv_forward`] and [`conv_backward`]: as many as
/// keep a chunk's patches within [`CHUNK_VALUES`] (at least one), no more
/// than `scratch` values hold.
fn chunk_images(per_image: usize, n: usize, scratch: usize) -> usize {
    let fit = (CHUNK_VALUES / per_image.max(1)).max(1);
    fit.min(scratch / per_image.max(1)).clamp(1, n.max(1))
}

/// Patch values per chunk (1 MiB): about a core's L2 cache.
const CHUNK_VALUES: usize = 1 << 18;

/// `z` (`n · positions x out`) `= im2col(x) · Wᵀ` for `n` images `x` and
/// filters `w` (`out x patch`), a chunk of images at a time through `scratch`.
pub(crate) fn conv_forward(
    c: &Conv,
    x: &[f32],
    w: &[f32],
    n: usize,
    scratch: &mut [f32],
    z: &mut [f32],
) {
    conv_forward_strided(c, 1, x, w, n, scratch, z);
}

/// [`conv_forward`] with the kernel moved `stride` values at a time (`c`'s
/// `out_h x out_w` the strided positions, `(in + 2 pad − k) / stride + 1`):
/// the SR-FCA code's 5x5 stride-2 convolution.
pub(crate) fn conv_forward_strided(
    c: &Conv,
    stride: usize,
    x: &[f32],
    w: &[f32],
    n: usize,
    scratch: &mut [f32],
    z: &mut [f32],
) {
    let out = w.len() / c.patch().max(1);
    for_chunks(c, n, scratch, |first, m, cols| {
        let images = first * c.image()..(first + m) * c.image();
        im2col(c, stride, &x[images], m, cols);
        let rows = m * c.positions();
        dense(
            &mut z[first * c.positions() * out..][..rows * out],
            cols,
            w,
            c.patch(),
            1.0,
        );
    });
}

/// The backward pass of [`conv_forward`] with `d` the gradient at `z`: the
/// filters' gradient `gw = scale · dᵀ im2col(x)` (overwritten; the sum of one
/// product per chunk, in chunk order) and, when `dx` is given, the gradient
/// at the input `dx = col2im(d · W)`.
#[allow(clippy::too_many_arguments)]
pub(crate) fn conv_backward(
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
    conv_backward_strided(c, 1, x, d, w, n, scale, scratch, gw, dx);
}

/// The backward pass of [`conv_forward_strided`], as [`conv_backward`]'s.
#[allow(clippy::too_many_arguments)]
pub(crate) fn conv_backward_strided(
    c: &Conv,
    stride: usize,
    x: &[f32],
    d: &[f32],
    w: &[f32],
    n: usize,
    scale: f32,
    scratch: &mut [f32],
    gw: &mut [f32],
    mut dx: Option<&mut [f32]>,
) {
    let out = w.len() / c.patch().max(1);
    if n == 0 {
        gw.fill(0.0);
    }
    for_chunks(c, n, scratch, |first, m, cols| {
        let images = first * c.image()..(first + m) * c.image();
        im2col(c, stride, &x[images.clone()], m, cols);
        let rows = m * c.positions();
        let d = &d[first * c.positions() * out..][..rows * out];
        matmul(
            MatMut::row_major(gw, out, c.patch()),
            MatRef::row_major(d, rows, out).t(),
            MatRef::row_major(cols, rows, c.patch()),
            first > 0,
            scale,
        );
        if let Some(dx) = dx.as_deref_mut() {
            input_grad(cols, d, w, rows, 1.0);
            col2im(c, stride, cols, m, &mut dx[images]);
        }
    });
}

/// Calls `f(first, m, cols)` for consecutive chunks of `m` of the `n` images
/// starting at `first`, with `cols` the chunk's share of `scratch`
/// (`m · positions · patch` values; `scratch` holds at least one image's,
/// as [`Conv::scratch_len`] gives).
fn for_chunks(
    c: &Conv,
    n: usize,
    scratch: &mut [f32],
    mut f: impl FnMut(usize, usize, &mut [f32]),
) {
    let per_image = c.positions() * c.patch();
    let chunk = chunk_images(per_image, n, scratch.len());
    let mut first = 0;
    while first < n {
        let m = chunk.min(n - first);
        f(first, m, &mut scratch[..m * per_image]);
        first += m;
    }
}
