//! Skinny matrix kernels for models with few output columns (linear regression
//! against a handful of cluster models), where a general GEMM spends more time
//! packing than multiplying. Register-blocked, 8-lane, fused multiply-add
//! (`f32::mul_add`); compiled for AVX2+FMA and chosen at run time, with the same
//! code as a portable fallback. `mul_add` is exactly rounded on both paths, so the
//! results are bit-identical whichever path runs.
//!
//! Three element-wise loops that run over every reply of every round,
//! [`all_finite`], [`axpy`] and [`add_scaled_f64`], are compiled for AVX-512
//! and AVX2 (without FMA, so they multiply then add, as the portable path does)
//! and chosen at run time too. [`exp_minus`] is a softmax's `(v - m).exp()`
//! over a slice, four lanes at a time where the platform's `expf` is glibc's
//! (checked). `tail` stores a vector's first lanes without a masked store,
//! which AMD's Zen runs slowly.
//!
//! `benches`: `fedcluster bench ifca-synthetic` and `small-clients` (see docs/performance.md).

mod elementwise;
mod expf;
#[cfg(target_arch = "x86_64")]
pub(crate) mod tail;

pub use elementwise::{add_scaled_f64, all_abs_below, all_finite, axpy, prefetch, prefetch_item};
pub use expf::exp_minus;

const LANES: usize = 8;

/// Feature-dimension tile of the gradient kernel (floats).
const D_TILE: usize = 256;

/// `out (n × count) = X (n × d) · Wᵀ`, for `W` holding `count` rows of `d`.
pub fn x_wt(x: &[f32], w: &[f32], d: usize, out: &mut [f32]) {
    let n = x.len() / d.max(1);
    let count = w.len() / d.max(1);
    assert!(
        x.len() == n * d && w.len() == count * d && out.len() == n * count,
        "x_wt shapes"
    );
    #[cfg(target_arch = "x86_64")]
    if std::is_x86_feature_detected!("avx2") && std::is_x86_feature_detected!("fma") {
        // SAFETY: the CPU supports the features the function is compiled for.
        unsafe { x_wt_avx2(x, w, d, n, count, out) };
        return;
    }
    x_wt_body(x, w, d, n, count, out);
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
fn x_wt_avx2(x: &[f32], w: &[f32], d: usize, n: usize, count: usize, out: &mut [f32]) {
    let mut i = 0;
    while i < n {
        let rows = if n - i >= 4 { 4 } else { 1 };
        let mut j = 0;
        while j < count {
            let cols = (count - j).min(2);
            // SAFETY: the block functions read rows i..i+R of x and j..j+C of w,
            // all within the slices (checked by the shape assertion in `x_wt`).
            unsafe {
                match (rows, cols) {
                    (4, 2) => avx2::x_wt_block::<4, 2>(x, w, d, i, j, count, out),
                    (4, _) => avx2::x_wt_block::<4, 1>(x, w, d, i, j, count, out),
                    (_, 2) => avx2::x_wt_block::<1, 2>(x, w, d, i, j, count, out),
                    _ => avx2::x_wt_block::<1, 1>(x, w, d, i, j, count, out),
                }
            }
            j += cols;
        }
        i += rows;
    }
}

/// The AVX2+FMA micro-kernels: the same arithmetic, lane for lane, as the
/// portable bodies below.
#[cfg(target_arch = "x86_64")]
mod avx2 {
    use std::arch::x86_64::*;

    use super::{LANES, lane_sum};

    /// How far ahead (in floats) the forward kernel prefetches its data rows.
    const PREFETCH: usize = 8192;

    #[inline]
    #[target_feature(enable = "avx2,fma")]
    pub(super) unsafe fn x_wt_block<const R: usize, const C: usize>(
        x: &[f32],
        w: &[f32],
        d: usize,
        i: usize,
        j: usize,
        count: usize,
        out: &mut [f32],
    ) {
        let full = d / LANES * LANES;
        let (xp, wp) = (x.as_ptr(), w.as_ptr());
        let mut acc = [[_mm256_setzero_ps(); C]; R];
        let mut k = 0;
        while k < full {
            // SAFETY: k + 8 <= d, so every load stays inside its row.
            unsafe {
                let wv: [__m256; C] =
                    std::array::from_fn(|c| _mm256_loadu_ps(wp.add((j + c) * d + k)));
                if j == 0 {
                    // The data rows stream from memory once per client: ask for
                    // them well ahead (prefetch never faults, even past the end).
                    for r in 0..R {
                        _mm_prefetch::<_MM_HINT_T0>(
                            xp.wrapping_add((i + r) * d + k + PREFETCH) as *const i8
                        );
                    }
                }
                for (r, acc_r) in acc.iter_mut().enumerate() {
                    let xv = _mm256_loadu_ps(xp.add((i + r) * d + k));
                    for (a, wc) in acc_r.iter_mut().zip(&wv) {
                        *a = _mm256_fmadd_ps(xv, *wc, *a);
                    }
                }
            }
            k += LANES;
        }
        for (r, acc_r) in acc.iter().enumerate() {
            for (c, a) in acc_r.iter().enumerate() {
                let mut lanes = [0.0f32; LANES];
                // SAFETY: `lanes` holds 8 values.
                unsafe { _mm256_storeu_ps(lanes.as_mut_ptr(), *a) };
                let mut s = lane_sum(&lanes);
                for k in full..d {
                    s = x[(i + r) * d + k].mul_add(w[(j + c) * d + k], s);
                }
                out[(i + r) * count + j + c] = s;
            }
        }
    }

    #[inline]
    #[target_feature(enable = "avx2,fma")]
    #[allow(clippy::too_many_arguments)]
    pub(super) unsafe fn rest_x_rows4(
        res: &[f32],
        x: &[f32],
        d: usize,
        i: usize,
        m: usize,
        scale: f32,
        lo: usize,
        hi: usize,
        out: &mut [f32],
    ) {
        let full = lo + (hi - lo) / LANES * LANES;
        let xp = x.as_ptr();
        for r in 0..m {
            let c: [f32; 4] = std::array::from_fn(|q| scale * res[(i + q) * m + r]);
            let cv: [__m256; 4] = std::array::from_fn(|q| _mm256_set1_ps(c[q]));
            let o = &mut out[r * d..(r + 1) * d];
            let op = o.as_mut_ptr();
            let mut k = lo;
            while k < full {
                // SAFETY: k + 8 <= hi <= d for the four rows of x and the output row.
                unsafe {
                    let mut v = _mm256_loadu_ps(op.add(k));
                    for (q, cq) in cv.iter().enumerate() {
                        v = _mm256_fmadd_ps(_mm256_loadu_ps(xp.add((i + q) * d + k)), *cq, v);
                    }
                    _mm256_storeu_ps(op.add(k), v);
                }
                k += LANES;
            }
            for k in full..hi {
                let mut v = o[k];
                for (q, cq) in c.iter().enumerate() {
                    v = x[(i + q) * d + k].mul_add(*cq, v);
                }
                o[k] = v;
            }
        }
    }
}

#[inline(always)]
fn x_wt_body(x: &[f32], w: &[f32], d: usize, n: usize, count: usize, out: &mut [f32]) {
    let mut i = 0;
    while i < n {
        let rows = if n - i >= 4 { 4 } else { 1 };
        let mut j = 0;
        while j < count {
            let cols = (count - j).min(2);
            match (rows, cols) {
                (4, 2) => x_wt_block::<4, 2>(x, w, d, i, j, count, out),
                (4, _) => x_wt_block::<4, 1>(x, w, d, i, j, count, out),
                (_, 2) => x_wt_block::<1, 2>(x, w, d, i, j, count, out),
                _ => x_wt_block::<1, 1>(x, w, d, i, j, count, out),
            }
            j += cols;
        }
        i += rows;
    }
}

/// Rows `i..i+R` of `X` against models `j..j+C`: `R x C` accumulators of 8 lanes
/// held in registers across the whole inner dimension.
#[inline(always)]
fn x_wt_block<const R: usize, const C: usize>(
    x: &[f32],
    w: &[f32],
    d: usize,
    i: usize,
    j: usize,
    count: usize,
    out: &mut [f32],
) {
    let xs: [&[f32]; R] = std::array::from_fn(|r| &x[(i + r) * d..(i + r + 1) * d]);
    let ws: [&[f32]; C] = std::array::from_fn(|c| &w[(j + c) * d..(j + c + 1) * d]);
    let mut acc = [[[0.0f32; LANES]; C]; R];
    let full = d / LANES * LANES;
    let mut k = 0;
    while k < full {
        let xv: [[f32; LANES]; R] =
            std::array::from_fn(|r| xs[r][k..k + LANES].try_into().expect("8 lanes"));
        let wv: [[f32; LANES]; C] =
            std::array::from_fn(|c| ws[c][k..k + LANES].try_into().expect("8 lanes"));
        for r in 0..R {
            for c in 0..C {
                for l in 0..LANES {
                    acc[r][c][l] = xv[r][l].mul_add(wv[c][l], acc[r][c][l]);
                }
            }
        }
        k += LANES;
    }
    for r in 0..R {
        for c in 0..C {
            let mut s = lane_sum(&acc[r][c]);
            for k in full..d {
                s = xs[r][k].mul_add(ws[c][k], s);
            }
            out[(i + r) * count + j + c] = s;
        }
    }
}

#[inline(always)]
fn lane_sum(v: &[f32; LANES]) -> f32 {
    ((v[0] + v[4]) + (v[1] + v[5])) + ((v[2] + v[6]) + (v[3] + v[7]))
}

/// `out (m × d) = scale · Resᵀ · X` for `Res` (`n × m`) and `X` (`n × d`): the
/// gradients of `m` linear models from their residuals.
pub fn rest_x(res: &[f32], x: &[f32], d: usize, scale: f32, out: &mut [f32]) {
    let n = x.len() / d.max(1);
    let m = out.len() / d.max(1);
    assert!(
        x.len() == n * d && res.len() == n * m && out.len() == m * d,
        "rest_x shapes"
    );
    #[cfg(target_arch = "x86_64")]
    if std::is_x86_feature_detected!("avx2") && std::is_x86_feature_detected!("fma") {
        // SAFETY: the CPU supports the features the function is compiled for.
        unsafe { rest_x_avx2(res, x, d, n, m, scale, out) };
        return;
    }
    rest_x_body(res, x, d, n, m, scale, out);
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
fn rest_x_avx2(res: &[f32], x: &[f32], d: usize, n: usize, m: usize, scale: f32, out: &mut [f32]) {
    out.fill(0.0);
    // Tiles of the feature dimension keep every output row's tile in L1 while
    // all data rows stream past; each output element still sums its rows in
    // order, so tiling does not change a bit.
    let mut lo = 0;
    while lo < d {
        let hi = (lo + D_TILE).min(d);
        let mut i = 0;
        while i + 4 <= n {
            // SAFETY: rows i..i+4 exist (checked by the shape assertion in `rest_x`).
            unsafe { avx2::rest_x_rows4(res, x, d, i, m, scale, lo, hi, out) };
            i += 4;
        }
        lo = hi;
    }
    rest_x_tail(res, x, d, n / 4 * 4, n, m, scale, out);
}

#[inline(always)]
fn rest_x_body(res: &[f32], x: &[f32], d: usize, n: usize, m: usize, scale: f32, out: &mut [f32]) {
    out.fill(0.0);
    let mut i = 0;
    while i + 4 <= n {
        let (x0, x1, x2, x3) = (
            &x[i * d..(i + 1) * d],
            &x[(i + 1) * d..(i + 2) * d],
            &x[(i + 2) * d..(i + 3) * d],
            &x[(i + 3) * d..(i + 4) * d],
        );
        for r in 0..m {
            let c: [f32; 4] = std::array::from_fn(|q| scale * res[(i + q) * m + r]);
            let o = &mut out[r * d..(r + 1) * d];
            for k in 0..d {
                o[k] = x3[k].mul_add(
                    c[3],
                    x2[k].mul_add(c[2], x1[k].mul_add(c[1], x0[k].mul_add(c[0], o[k]))),
                );
            }
        }
        i += 4;
    }
    rest_x_tail(res, x, d, i, n, m, scale, out);
}

/// Rows `i..n` one at a time (the remainder after blocks of four).
#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn rest_x_tail(
    res: &[f32],
    x: &[f32],
    d: usize,
    mut i: usize,
    n: usize,
    m: usize,
    scale: f32,
    out: &mut [f32],
) {
    while i < n {
        let xi = &x[i * d..(i + 1) * d];
        for r in 0..m {
            let c = scale * res[i * m + r];
            for (ov, xv) in out[r * d..(r + 1) * d].iter_mut().zip(xi) {
                *ov = xv.mul_add(c, *ov);
            }
        }
        i += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Smooth values in [-1, 1], different per `salt` (also the element-wise
    /// loops' test data).
    pub(super) fn data(len: usize, salt: f32) -> Vec<f32> {
        (0..len)
            .map(|i| ((i as f32 + salt) * 0.731).sin())
            .collect()
    }

    #[test]
    fn x_wt_matches_naive_on_ragged_shapes() {
        for (n, d, count) in [(1, 1, 1), (5, 13, 3), (9, 37, 7), (4, 16, 4), (6, 8, 9)] {
            let x = data(n * d, 0.0);
            let w = data(count * d, 1.0);
            let mut out = vec![0.0; n * count];
            x_wt(&x, &w, d, &mut out);
            for i in 0..n {
                for j in 0..count {
                    let want: f64 = (0..d)
                        .map(|k| f64::from(x[i * d + k]) * f64::from(w[j * d + k]))
                        .sum();
                    assert!(
                        (f64::from(out[i * count + j]) - want).abs() < 1e-4,
                        "{n} {d} {count}"
                    );
                }
            }
        }
    }

    #[test]
    fn the_simd_path_and_the_portable_path_give_identical_bits() {
        let (n, d, count) = (11, 1003, 7);
        let x = data(n * d, 0.0);
        let w = data(count * d, 1.0);
        let (mut fast, mut portable) = (vec![0.0; n * count], vec![0.0; n * count]);
        x_wt(&x, &w, d, &mut fast);
        x_wt_body(&x, &w, d, n, count, &mut portable);
        assert_eq!(fast, portable);
        let res = data(n * 3, 2.0);
        let (mut fast, mut portable) = (vec![0.0; 3 * d], vec![0.0; 3 * d]);
        rest_x(&res, &x, d, 0.25, &mut fast);
        rest_x_body(&res, &x, d, n, 3, 0.25, &mut portable);
        assert_eq!(fast, portable);
    }

    #[test]
    fn rest_x_matches_naive_on_ragged_shapes() {
        for (n, d, m) in [(1, 1, 1), (5, 13, 3), (9, 37, 2), (8, 16, 1)] {
            let x = data(n * d, 0.0);
            let res = data(n * m, 2.0);
            let mut out = vec![1.0; m * d];
            rest_x(&res, &x, d, 0.5, &mut out);
            for r in 0..m {
                for k in 0..d {
                    let want: f64 = (0..n)
                        .map(|i| 0.5 * f64::from(res[i * m + r]) * f64::from(x[i * d + k]))
                        .sum();
                    assert!((f64::from(out[r * d + k]) - want).abs() < 1e-4);
                }
            }
        }
    }
}
