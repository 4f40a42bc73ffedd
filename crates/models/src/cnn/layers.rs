//! The convolution and pooling pieces of [`super::Cnn`], channels-last.

/// A valid convolution's shape: `in_h x in_w x in_c` input, `k x k` kernels,
/// `out_h x out_w` positions.
pub(super) struct Conv {
    pub in_h: usize,
    pub in_w: usize,
    pub in_c: usize,
    pub k: usize,
    pub out_h: usize,
    pub out_w: usize,
}

impl Conv {
    /// Values in one patch: `k · k · in_c`.
    pub fn patch(&self) -> usize {
        self.k * self.k * self.in_c
    }
}

/// Patches of `n` images (`in_h x in_w x in_c` each) into `cols`, one row per
/// output position, values in `(ky, kx, c)` order.
pub(super) fn im2col(c: &Conv, x: &[f32], n: usize, cols: &mut [f32]) {
    let img = c.in_h * c.in_w * c.in_c;
    let row_len = c.k * c.in_c;
    let mut out = cols.chunks_exact_mut(c.patch());
    for i in 0..n {
        let image = &x[i * img..(i + 1) * img];
        for oy in 0..c.out_h {
            for ox in 0..c.out_w {
                let patch = out.next().expect("cols sized for every position");
                for ky in 0..c.k {
                    let start = ((oy + ky) * c.in_w + ox) * c.in_c;
                    patch[ky * row_len..(ky + 1) * row_len]
                        .copy_from_slice(&image[start..start + row_len]);
                }
            }
        }
    }
}

/// The adjoint of [`im2col`]: sums patch gradients `dcols` back into `dx`.
pub(super) fn col2im(c: &Conv, dcols: &[f32], n: usize, dx: &mut [f32]) {
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
                    let start = ((oy + ky) * c.in_w + ox) * c.in_c;
                    for (d, v) in image[start..start + row_len]
                        .iter_mut()
                        .zip(&patch[ky * row_len..(ky + 1) * row_len])
                    {
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
pub(super) fn pool_forward(
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
pub(super) fn pool_backward(dout: &[f32], idx: &[f32], da: &mut [f32]) {
    da.fill(0.0);
    for (g, at) in dout.iter().zip(idx) {
        da[*at as usize] += g;
    }
}
