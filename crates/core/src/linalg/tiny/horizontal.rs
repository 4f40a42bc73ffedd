//! `gemm`'s horizontal path: every output a dot product in 8 FMA lanes
//! (element `p` in lane `p % 8`, the tail zero-padded), the lanes summed
//! `(l, l + 4)`, then `(l, l + 2)`, then `(0, 1)`, times the scale.
//!
//! With AVX2 the dot products run in blocks of 2 rows x 4 columns, 8
//! independent FMA chains. With AVX-512 a pair of rows shares each 16-lane
//! register (row `i`'s 8 lanes low, row `i + 1`'s high) against a column
//! broadcast to both halves, so one FMA does two dot products' lane work,
//! lane for lane the same operations: the same bits.

use super::super::{MatMut, MatRef};
use super::has_avx512;

/// FMA lanes of `gemm`'s AVX2 kernels.
pub(super) const LANES: usize = 8;
/// Columns per block of a row pair with AVX-512: their 12 accumulators, the
/// pair and a column take 14 of the 32 vector registers.
const PAIR_COLUMNS: usize = 12;

/// Row `t`: the first `t` lanes on.
#[cfg(target_arch = "x86_64")]
pub(super) static TAIL_MASKS: [[i32; LANES]; LANES + 1] = {
    let mut masks = [[0; LANES]; LANES + 1];
    let mut t = 0;
    while t <= LANES {
        let mut lane = 0;
        while lane < t {
            masks[t][lane] = -1;
            lane += 1;
        }
        t += 1;
    }
    masks
};

/// `c <- scale * a * b` by horizontal dot products; `a`'s rows and `b`'s
/// columns contiguous, `k <= 1024`, and the CPU has AVX2 and FMA.
pub(super) fn product(c: &mut MatMut<'_>, a: &MatRef<'_>, b: &MatRef<'_>, scale: f32) {
    let (m, n, k) = (c.rows, c.cols, a.cols);
    let row = |i: usize| &a.data[i * a.row_stride..][..k];
    let col = |j: usize| &b.data[j * b.col_stride..][..k];
    let pairs = has_avx512();
    let mut i = 0;
    while i < m {
        let rows = if i + 2 <= m { 2 } else { 1 };
        let mut put = |r: usize, q: usize, v: f32| {
            c.data[(i + r) * c.row_stride + q * c.col_stride] = scale * v;
        };
        let mut j = 0;
        while j < n {
            let cols = if rows == 2 && pairs {
                pair_block(
                    (n - j).min(PAIR_COLUMNS),
                    [row(i), row(i + 1)],
                    j,
                    &col,
                    &mut put,
                )
            } else {
                fma_block(rows, n - j, i, j, &row, &col, &mut put)
            };
            j += cols;
        }
        i += rows;
    }
}

/// One AVX2 block of up to 2 rows x 4 columns from row `i` and column `j`
/// (`cols_left` columns remain); returns the columns it took.
fn fma_block<'s>(
    rows: usize,
    cols_left: usize,
    i: usize,
    j: usize,
    row: &impl Fn(usize) -> &'s [f32],
    col: &impl Fn(usize) -> &'s [f32],
    put: &mut impl FnMut(usize, usize, f32),
) -> usize {
    let cols = match cols_left {
        4.. => 4,
        2 | 3 => 2,
        _ => 1,
    };
    let mut put = |r: usize, q: usize, v: f32| put(r, j + q, v);
    match (rows, cols) {
        (2, 4) => block(
            [row(i), row(i + 1)],
            [col(j), col(j + 1), col(j + 2), col(j + 3)],
            &mut put,
        ),
        (2, 2) => block([row(i), row(i + 1)], [col(j), col(j + 1)], &mut put),
        (2, _) => block([row(i), row(i + 1)], [col(j)], &mut put),
        (_, 4) => block(
            [row(i)],
            [col(j), col(j + 1), col(j + 2), col(j + 3)],
            &mut put,
        ),
        (_, 2) => block([row(i)], [col(j), col(j + 1)], &mut put),
        _ => block([row(i)], [col(j)], &mut put),
    }
    cols
}

/// The dot products of `R` rows of `a` with `C` columns of `b`, handed to
/// `put(r, q, sum)`.
fn block<const R: usize, const C: usize>(
    rows: [&[f32]; R],
    cols: [&[f32]; C],
    put: &mut impl FnMut(usize, usize, f32),
) {
    hand_out(dots(rows, cols), put);
}

/// `put(r, q, sums[r][q])` for every entry.
fn hand_out<const R: usize, const C: usize>(
    sums: [[f32; C]; R],
    put: &mut impl FnMut(usize, usize, f32),
) {
    for (r, row) in sums.iter().enumerate() {
        for (q, &v) in row.iter().enumerate() {
            put(r, q, v);
        }
    }
}

/// The dot products of a row pair with `cols <= PAIR_COLUMNS` columns from
/// column `j`, handed to `put(r, j + q, sum)`; returns `cols`. Only where the
/// CPU has AVX-512.
fn pair_block<'s>(
    cols: usize,
    rows: [&[f32]; 2],
    j: usize,
    col: &impl Fn(usize) -> &'s [f32],
    put: &mut impl FnMut(usize, usize, f32),
) -> usize {
    /// `dots_pair_avx512::<C>` for the `C` equal to `cols`.
    macro_rules! by_width {
        ($($c:literal)*) => {
            match cols {
                $($c => pair_block_of::<$c>(rows, j, col, put),)*
                _ => unreachable!("a row pair takes 1 to {PAIR_COLUMNS} columns"),
            }
        };
    }
    by_width!(1 2 3 4 5 6 7 8 9 10 11 12);
    cols
}

fn pair_block_of<'s, const C: usize>(
    rows: [&[f32]; 2],
    j: usize,
    col: &impl Fn(usize) -> &'s [f32],
    put: &mut impl FnMut(usize, usize, f32),
) {
    let cols: [&[f32]; C] = std::array::from_fn(|q| col(j + q));
    #[cfg(target_arch = "x86_64")]
    // SAFETY: `product` takes row pairs here only where the CPU has AVX-512F.
    let sums = unsafe { dots_pair_avx512(rows, cols) };
    #[cfg(not(target_arch = "x86_64"))]
    let sums = rows.map(|x| cols.map(|y| dot_portable(x, y)));
    hand_out(sums, &mut |r, q, v| put(r, j + q, v));
}

/// `Σ_p x_p y_p` for every row `x` of `xs` and `y` of `ys`, in `gemm`'s
/// horizontal order (see the module documentation).
pub(super) fn dots<const R: usize, const C: usize>(
    xs: [&[f32]; R],
    ys: [&[f32]; C],
) -> [[f32; C]; R] {
    #[cfg(target_arch = "x86_64")]
    {
        // SAFETY: `matmul` comes here only where the CPU has AVX2 and FMA.
        unsafe { dots_fma(xs, ys) }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        xs.map(|x| ys.map(|y| dot_portable(x, y)))
    }
}

/// The length every slice has at least.
fn common_len(slices: &[&[f32]]) -> usize {
    slices.iter().fold(usize::MAX, |k, v| k.min(v.len()))
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
fn dots_fma<const R: usize, const C: usize>(xs: [&[f32]; R], ys: [&[f32]; C]) -> [[f32; C]; R] {
    use std::arch::x86_64::*;
    let k = common_len(&xs).min(common_len(&ys));
    let mut acc = [[_mm256_setzero_ps(); C]; R];
    let full = k - k % LANES;
    let mut p = 0;
    while p < full {
        for r in 0..R {
            // SAFETY: `p + 8 <= k`, within every slice.
            let xv = unsafe { _mm256_loadu_ps(xs[r].as_ptr().add(p)) };
            for q in 0..C {
                // SAFETY: as above.
                let yv = unsafe { _mm256_loadu_ps(ys[q].as_ptr().add(p)) };
                acc[r][q] = _mm256_fmadd_ps(xv, yv, acc[r][q]);
            }
        }
        p += LANES;
    }
    if full < k {
        // The tail in the low lanes, zeros above (as gemm's masked load).
        // SAFETY: the mask table has a row per tail length 0..8; the masked
        // load reads only the `k - full` values inside each slice.
        unsafe {
            let mask = _mm256_loadu_si256(TAIL_MASKS[k - full].as_ptr().cast());
            for r in 0..R {
                let xv = _mm256_maskload_ps(xs[r].as_ptr().add(full), mask);
                for q in 0..C {
                    let yv = _mm256_maskload_ps(ys[q].as_ptr().add(full), mask);
                    acc[r][q] = _mm256_fmadd_ps(xv, yv, acc[r][q]);
                }
            }
        }
    }
    acc.map(|row| row.map(|a| sum_lanes(a)))
}

/// [`dots_fma`] for a row pair: lanes 0-7 of each accumulator are row 0's
/// eight FMA lanes, lanes 8-15 row 1's, each column loaded into both halves.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
fn dots_pair_avx512<const C: usize>(xs: [&[f32]; 2], ys: [&[f32]; C]) -> [[f32; C]; 2] {
    use std::arch::x86_64::*;
    let pair = |lo: __m256, hi: __m256| {
        let lo = _mm512_castps_pd(_mm512_castps256_ps512(lo));
        _mm512_castpd_ps(_mm512_insertf64x4::<1>(lo, _mm256_castps_pd(hi)))
    };
    let both = |v: __m256| _mm512_castpd_ps(_mm512_broadcast_f64x4(_mm256_castps_pd(v)));
    let k = common_len(&xs).min(common_len(&ys));
    let mut acc = [_mm512_setzero_ps(); C];
    let full = k - k % LANES;
    let mut p = 0;
    while p < full {
        // SAFETY: `p + 8 <= k`, within every slice.
        let xv = unsafe {
            pair(
                _mm256_loadu_ps(xs[0].as_ptr().add(p)),
                _mm256_loadu_ps(xs[1].as_ptr().add(p)),
            )
        };
        for q in 0..C {
            // SAFETY: as above.
            let yv = both(unsafe { _mm256_loadu_ps(ys[q].as_ptr().add(p)) });
            acc[q] = _mm512_fmadd_ps(xv, yv, acc[q]);
        }
        p += LANES;
    }
    if full < k {
        // SAFETY: as in `dots_fma`.
        unsafe {
            let mask = _mm256_loadu_si256(TAIL_MASKS[k - full].as_ptr().cast());
            let xv = pair(
                _mm256_maskload_ps(xs[0].as_ptr().add(full), mask),
                _mm256_maskload_ps(xs[1].as_ptr().add(full), mask),
            );
            for q in 0..C {
                let yv = both(_mm256_maskload_ps(ys[q].as_ptr().add(full), mask));
                acc[q] = _mm512_fmadd_ps(xv, yv, acc[q]);
            }
        }
    }
    let low = |a: __m512| _mm512_castps512_ps256(a);
    let high = |a: __m512| _mm256_castpd_ps(_mm512_extractf64x4_pd::<1>(_mm512_castps_pd(a)));
    [
        acc.map(|a| sum_lanes(low(a))),
        acc.map(|a| sum_lanes(high(a))),
    ]
}

/// The 8 lanes summed `(l, l + 4)`, then `(l, l + 2)`, then `(0, 1)`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx")]
#[inline]
pub(super) fn sum_lanes(a: std::arch::x86_64::__m256) -> f32 {
    use std::arch::x86_64::*;
    let half = _mm_add_ps(_mm256_castps256_ps128(a), _mm256_extractf128_ps::<1>(a));
    let quarter = _mm_add_ps(half, _mm_movehl_ps(half, half));
    let last = _mm_add_ss(quarter, _mm_shuffle_ps::<0b0001>(quarter, quarter));
    _mm_cvtss_f32(last)
}

/// The same sum without intrinsics (the reference of the tests, and the
/// body on other architectures, where `matmul` never calls it).
#[cfg_attr(target_arch = "x86_64", allow(dead_code))]
pub(super) fn dot_portable(x: &[f32], y: &[f32]) -> f32 {
    let mut lanes = [0.0f32; LANES];
    for (p, (xv, yv)) in x.iter().zip(y).enumerate() {
        lanes[p % LANES] = xv.mul_add(*yv, lanes[p % LANES]);
    }
    let half: Vec<f32> = (0..4).map(|l| lanes[l] + lanes[l + 4]).collect();
    let quarter = [half[0] + half[2], half[1] + half[3]];
    quarter[0] + quarter[1]
}
