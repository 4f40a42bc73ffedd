//! The layers the native convolutional networks share ([`super::Cnn`] and
//! [`crate::resnet9::ResNet9`]), channels-last: im2col convolutions with zero
//! padding, 2x2 max-pooling, dense products by GEMM, ReLU, and their
//! backward passes.

use fedcluster_core::linalg::{MatMut, MatRef, matmul};

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

    /// Where kernel row `ky` of output position `(oy, ox)` reads the image:
    /// the first value's index in the image and the kernel columns
    /// `kx0..kx1` inside it (the others read padding); `None` when the whole
    /// row is padding.
    fn span(&self, oy: usize, ox: usize, ky: usize) -> Option<(usize, usize, usize)> {
        let iy = (oy + ky).checked_sub(self.pad).filter(|&y| y < self.in_h)?;
        let kx0 = self.pad.saturating_sub(ox);
        let kx1 = self.k.min((self.in_w + self.pad).saturating_sub(ox));
        (kx0 < kx1).then(|| ((iy * self.in_w + ox + kx0 - self.pad) * self.in_c, kx0, kx1))
    }
}

/// Patches of `n` images (`in_h x in_w x in_c` each) into `cols`, one row per
/// output position, values in `(ky, kx, c)` order, zeros where the kernel
/// reads padding.
pub(crate) fn im2col(c: &Conv, x: &[f32], n: usize, cols: &mut [f32]) {
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
                    let Some((start, kx0, kx1)) = c.span(oy, ox, ky) else {
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
pub(crate) fn col2im(c: &Conv, dcols: &[f32], n: usize, dx: &mut [f32]) {
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
                    let Some((start, kx0, kx1)) = c.span(oy, ox, ky) else {
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

/// 2x2 max-pooling (stride 2, odd edges dropped) of `n` maps `h x w x c`; writes
/// the maxima into `out` and, for the backward pass, the flat index in `a` of each
/// maximum into `idx` (as `f32`, exact below 2^24).
pub(crate) fn pool_forward(
    h: usize,
    w: usize,
    c: usize,
    n: usize,
    a: &[f32],
    out: &mut [f32],
    idx: &mut [f32],
) {
    let (ph, pw) = (h / 2, w / 2);
    let mut o = 0;
    for i in 0..n {
        let base = i * h * w * c;
        for py in 0..ph {
            for px in 0..pw {
                for ch in 0..c {
                    let mut best = (f32::NEG_INFINITY, 0usize);
                    for (dy, dx) in [(0, 0), (0, 1), (1, 0), (1, 1)] {
                        let at = base + ((2 * py + dy) * w + 2 * px + dx) * c + ch;
                        if a[at] > best.0 {
                            best = (a[at], at);
                        }
                    }
                    out[o] = best.0;
                    idx[o] = best.1 as f32;
                    o += 1;
                }
            }
        }
    }
}

/// Routes pooled gradients `dout` to the maxima recorded by [`pool_forward`].
pub(crate) fn pool_backward(dout: &[f32], idx: &[f32], da: &mut [f32]) {
    da.fill(0.0);
    for (g, at) in dout.iter().zip(idx) {
        da[*at as usize] += g;
    }
}

/// `z (rows x cols) += bias` per column, then ReLU in place.
pub(crate) fn bias_relu(z: &mut [f32], bias: &[f32]) {
    for row in z.chunks_exact_mut(bias.len()) {
        for (v, b) in row.iter_mut().zip(bias) {
            *v = (*v + b).max(0.0);
        }
    }
}

/// `z (rows x cols) = scale · a · Wᵀ` for `w` (`cols x inner`).
pub(crate) fn dense(z: &mut [f32], a: &[f32], w: &[f32], inner: usize, scale: f32) {
    let cols = w.len() / inner;
    let rows = a.len() / inner;
    matmul(
        MatMut::row_major(z, rows, cols),
        MatRef::row_major(a, rows, inner),
        MatRef::row_major(w, cols, inner).t(),
        false,
        scale,
    );
}

/// `g (rows_out x inner) = scale · dᵀ a` for `d` (`n x rows_out`), `a` (`n x inner`).
pub(crate) fn weight_grad(g: &mut [f32], d: &[f32], a: &[f32], n: usize, scale: f32) {
    let rows_out = d.len() / n.max(1);
    let inner = a.len() / n.max(1);
    matmul(
        MatMut::row_major(g, rows_out, inner),
        MatRef::row_major(d, n, rows_out).t(),
        MatRef::row_major(a, n, inner),
        false,
        scale,
    );
}

/// `da (n x inner) = scale · d · W` for `d` (`n x rows_out`) and `w`
/// (`rows_out x inner`).
pub(crate) fn input_grad(da: &mut [f32], d: &[f32], w: &[f32], n: usize, scale: f32) {
    let rows_out = d.len() / n.max(1);
    let inner = w.len() / rows_out.max(1);
    matmul(
        MatMut::row_major(da, n, inner),
        MatRef::row_major(d, n, rows_out),
        MatRef::row_major(w, rows_out, inner),
        false,
        scale,
    );
}

/// Zeroes `d` where the ReLU output `a` is not positive.
pub(crate) fn relu_backward(d: &mut [f32], a: &[f32]) {
    for (g, v) in d.iter_mut().zip(a) {
        if *v <= 0.0 {
            *g = 0.0;
        }
    }
}
