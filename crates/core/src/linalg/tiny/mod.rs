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
//! - `gevv` (any CPU, where the horizontal path does not apply) for `k <= 2`
//!   with `b`'s and `c`'s rows contiguous: `l1 (s r1) + l0 (s r0)` unfused,
//!   where `gemm` first transposes a row-major product (`l` from `b`, `r`
//!   from `a`).
//!
//! Only products that overwrite `c` come here; everything else goes to
//! `gemm`. `tests` checks every path against `gemm` itself.

use super::{MatMut, MatRef};

/// Largest `m x n` of `gemm`'s horizontal path.
const HORIZONTAL_OUTPUTS: usize = 16 * 16;
/// `gemm`'s depth block on the horizontal path.
const HORIZONTAL_DEPTH: usize = 1024;
/// FMA lanes of `gemm`'s AVX2 kernels.
const LANES: usize = 8;
/// Row `t`: the first `t` lanes on.
#[cfg(target_arch = "x86_64")]
static TAIL_MASKS: [[i32; LANES]; LANES + 1] = {
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

/// `c <- scale * a * b` where `gemm` would take a shortcut; `false` (and
/// `c` untouched) elsewhere.
pub(super) fn matmul(c: &mut MatMut<'_>, a: &MatRef<'_>, b: &MatRef<'_>, scale: f32) -> bool {
    let (m, n, k) = (c.rows, c.cols, a.cols);
    if takes_horizontal_path(c, a, b) {
        if k > HORIZONTAL_DEPTH {
            return false;
        }
        let row = |i: usize| &a.data[i * a.row_stride..][..k];
        let col = |j: usize| &b.data[j * b.col_stride..][..k];
        let mut i = 0;
        // Blocks of 2 rows x 4 columns: 8 independent FMA chains hide the latency.
        while i < m {
            let rows = if i + 2 <= m { 2 } else { 1 };
            let mut j = 0;
            while j < n {
                let cols = match n - j {
                    4.. => 4,
                    2 | 3 => 2,
                    _ => 1,
                };
                let mut put = |r: usize, q: usize, v: f32| {
                    c.data[(i + r) * c.row_stride + (j + q) * c.col_stride] = scale * v;
                };
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
                j += cols;
            }
            i += rows;
        }
        return true;
    }
    gevv(c, a, b, scale, Sink::Store)
}

/// `y <- y + alpha * (scale * a * b)` where [`matmul`] would take the `gevv`
/// shortcut: each product rounded as `matmul` rounds it, then added as
/// `axpy` adds it, so the same bits as the two calls without the product's
/// matrix; `false` (and `y` untouched) elsewhere.
pub(super) fn add_product(
    y: &mut MatMut<'_>,
    alpha: f32,
    a: &MatRef<'_>,
    b: &MatRef<'_>,
    scale: f32,
) -> bool {
    !takes_horizontal_path(y, a, b) && gevv(y, a, b, scale, Sink::AddScaled(alpha))
}

/// Whether `matmul` computes `c` by horizontal dot products.
fn takes_horizontal_path(c: &MatMut<'_>, a: &MatRef<'_>, b: &MatRef<'_>) -> bool {
    has_fma() && a.col_stride == 1 && b.row_stride == 1 && c.rows * c.cols <= HORIZONTAL_OUTPUTS
}

/// `gemm`'s `gevv` for `k <= 2` into `c` through `sink`; `false` (and `c`
/// untouched) for other shapes.
fn gevv(c: &mut MatMut<'_>, a: &MatRef<'_>, b: &MatRef<'_>, scale: f32, sink: Sink) -> bool {
    let (n, k) = (c.cols, a.cols);
    // Only rows contiguous in `b` and `c` (every product of the models here):
    // the others go to `gemm`.
    if k == 0 || k > 2 || c.col_stride != 1 || b.col_stride != 1 {
        return false;
    }
    let y = |p: usize| &b.data[p * b.row_stride..][..n];
    let job = Gevv {
        // `gemm` transposes the problem when `c` is closer to row-major.
        transposed: c.col_stride < c.row_stride,
        c,
        a,
        y0: y(0),
        y1: if k == 2 { y(1) } else { &[][..] },
        scale,
        sink,
    };
    #[cfg(target_arch = "x86_64")]
    if std::is_x86_feature_detected!("avx512f") {
        // SAFETY: the CPU supports the feature the function is compiled for.
        unsafe { gevv_avx512(job) };
        return true;
    }
    #[cfg(target_arch = "x86_64")]
    if std::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU supports the feature the function is compiled for.
        unsafe { gevv_avx2(job) };
        return true;
    }
    job.run();
    true
}

/// How a row of `gevv` lands in its output: overwriting it (a product), or
/// added to it times `alpha` (a product then an `axpy`).
#[derive(Clone, Copy)]
enum Sink {
    Store,
    AddScaled(f32),
}

/// One `gevv` product: `c`'s rows (contiguous), `a`'s `k <= 2` columns, `b`'s
/// rows `y0` and `y1` (`y1` empty for `k = 1`).
struct Gevv<'j, 'c, 'a> {
    c: &'j mut MatMut<'c>,
    a: &'j MatRef<'a>,
    y0: &'j [f32],
    y1: &'j [f32],
    scale: f32,
    transposed: bool,
    sink: Sink,
}

impl Gevv<'_, '_, '_> {
    #[inline(always)]
    fn run(self) {
        let Gevv {
            c,
            a,
            y0,
            y1,
            scale,
            transposed,
            sink,
        } = self;
        let x = |i: usize, p: usize| a.data[i * a.row_stride + p * a.col_stride];
        for i in 0..c.rows {
            let out = &mut c.data[i * c.row_stride..][..c.cols];
            let xs = [x(i, 0), if y1.is_empty() { 0.0 } else { x(i, 1) }];
            gevv_row_sink(out, y0, y1, xs, scale, transposed, sink);
        }
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn gevv_avx2(job: Gevv<'_, '_, '_>) {
    job.run();
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
fn gevv_avx512(job: Gevv<'_, '_, '_>) {
    job.run();
}

/// One contiguous row of `gevv`: `g_j = y1_j (s x1) + y0_j (s x0)`
/// (`transposed`) or `x1 (s y1_j) + x0 (s y0_j)`, `y1` empty for `k = 1`;
/// `out_j = g_j`, or `out_j += alpha g_j`. Multiplies and adds, never fused:
/// the same bits on every path.
#[inline(always)]
fn gevv_row_sink(
    out: &mut [f32],
    y0: &[f32],
    y1: &[f32],
    xs: [f32; 2],
    scale: f32,
    transposed: bool,
    sink: Sink,
) {
    match sink {
        Sink::Store => gevv_row_body(out, y0, y1, xs, scale, transposed, |o, g| *o = g),
        Sink::AddScaled(alpha) => {
            gevv_row_body(out, y0, y1, xs, scale, transposed, |o, g| *o += alpha * g)
        }
    }
}

#[inline(always)]
fn gevv_row_body(
    out: &mut [f32],
    y0: &[f32],
    y1: &[f32],
    xs: [f32; 2],
    scale: f32,
    transposed: bool,
    put: impl Fn(&mut f32, f32),
) {
    let [x0, x1] = xs;
    match (y1.is_empty(), transposed) {
        (true, true) => {
            let s0 = scale * x0;
            out.iter_mut().zip(y0).for_each(|(o, a)| put(o, a * s0));
        }
        (true, false) => out
            .iter_mut()
            .zip(y0)
            .for_each(|(o, a)| put(o, x0 * (scale * a))),
        (false, true) => {
            let (s0, s1) = (scale * x0, scale * x1);
            for ((o, a), b) in out.iter_mut().zip(y0).zip(y1) {
                put(o, b * s1 + a * s0);
            }
        }
        (false, false) => {
            for ((o, a), b) in out.iter_mut().zip(y0).zip(y1) {
                put(o, x1 * (scale * b) + x0 * (scale * a));
            }
        }
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

/// The dot products of `R` rows of `a` with `C` columns of `b`, handed to
/// `put(r, q, sum)`.
fn block<const R: usize, const C: usize>(
    rows: [&[f32]; R],
    cols: [&[f32]; C],
    put: &mut impl FnMut(usize, usize, f32),
) {
    let sums = dots(rows, cols);
    for (r, row) in sums.iter().enumerate() {
        for (q, &v) in row.iter().enumerate() {
            put(r, q, v);
        }
    }
}

/// `Σ_p x_p y_p` for every row `x` of `xs` and `y` of `ys`, in `gemm`'s
/// horizontal order (see the module documentation).
fn dots<const R: usize, const C: usize>(xs: [&[f32]; R], ys: [&[f32]; C]) -> [[f32; C]; R] {
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

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
fn dots_fma<const R: usize, const C: usize>(xs: [&[f32]; R], ys: [&[f32]; C]) -> [[f32; C]; R] {
    use std::arch::x86_64::*;
    let k = xs.iter().chain(&ys).fold(usize::MAX, |k, v| k.min(v.len()));
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
    acc.map(|row| {
        row.map(|a| {
            let half = _mm_add_ps(_mm256_castps256_ps128(a), _mm256_extractf128_ps::<1>(a));
            let quarter = _mm_add_ps(half, _mm_movehl_ps(half, half));
            let last = _mm_add_ss(quarter, _mm_shuffle_ps::<0b0001>(quarter, quarter));
            _mm_cvtss_f32(last)
        })
    })
}

/// The same sum without intrinsics (the reference of the tests, and the
/// body on other architectures, where `matmul` never calls it).
#[cfg_attr(target_arch = "x86_64", allow(dead_code))]
fn dot_portable(x: &[f32], y: &[f32]) -> f32 {
    let mut lanes = [0.0f32; LANES];
    for (p, (xv, yv)) in x.iter().zip(y).enumerate() {
        lanes[p % LANES] = xv.mul_add(*yv, lanes[p % LANES]);
    }
    let half: Vec<f32> = (0..4).map(|l| lanes[l] + lanes[l + 4]).collect();
    let quarter = [half[0] + half[2], half[1] + half[3]];
    quarter[0] + quarter[1]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn values(len: usize, seed: u32) -> Vec<f32> {
        (0..len)
            .map(|i| ((i as u32).wrapping_mul(2_654_435_761) ^ seed) as f32 / u32::MAX as f32 - 0.5)
            .collect()
    }

    #[test]
    fn every_shortcut_gives_gemms_bits() {
        let mut checked = 0;
        for (m, n) in [
            (1, 1),
            (2, 10),
            (10, 2),
            (3, 7),
            (16, 16),
            (2, 40),
            (17, 16),
        ] {
            for k in [1, 2, 3, 7, 8, 9, 196, 1024, 1030] {
                for scale in [1.0, 0.5, 1.0 / 3.0] {
                    for (a_t, b_t, c_t) in [
                        (false, true, false),
                        (false, false, false),
                        (true, false, false),
                        (false, true, true),
                        (true, true, true),
                    ] {
                        let (av, bv) = (values(m * k, 1), values(k * n, 2));
                        let a = if a_t {
                            MatRef::row_major(&av, k, m).t()
                        } else {
                            MatRef::row_major(&av, m, k)
                        };
                        let b = if b_t {
                            MatRef::row_major(&bv, n, k).t()
                        } else {
                            MatRef::row_major(&bv, k, n)
                        };
                        let mut want = vec![f32::NAN; m * n];
                        let view = if c_t {
                            MatMut::row_major(&mut want, n, m).t()
                        } else {
                            MatMut::row_major(&mut want, m, n)
                        };
                        super::super::by_gemm(view, a, b, false, scale);
                        let mut got = vec![f32::NAN; m * n];
                        let mut view = if c_t {
                            MatMut::row_major(&mut got, n, m).t()
                        } else {
                            MatMut::row_major(&mut got, m, n)
                        };
                        if matmul(&mut view, &a, &b, scale) {
                            checked += 1;
                            let same = got
                                .iter()
                                .zip(&want)
                                .all(|(x, y)| x.to_bits() == y.to_bits());
                            assert!(
                                same,
                                "m={m} n={n} k={k} scale={scale} a_t={a_t} b_t={b_t} c_t={c_t}"
                            );
                        }
                    }
                }
            }
        }
        assert!(checked > 100, "only {checked} products took a shortcut");
    }

    /// `v` as an `m x n` matrix, row-major or (`transposed`) column-major.
    fn view(v: &mut [f32], m: usize, n: usize, transposed: bool) -> MatMut<'_> {
        if transposed {
            MatMut::row_major(v, n, m).t()
        } else {
            MatMut::row_major(v, m, n)
        }
    }

    #[test]
    fn add_product_gives_the_bits_of_matmul_then_axpy() {
        let mut fused_shapes = 0;
        for (m, n) in [(1, 1), (10, 196), (3, 7), (16, 16), (2, 40)] {
            for k in [1, 2, 3] {
                for c_t in [false, true] {
                    let (av, bv) = (values(m * k, 5), values(k * n, 6));
                    // The logistic model's backward product: `a` is `Δᵀ`.
                    let a = MatRef::row_major(&av, k, m).t();
                    let b = MatRef::row_major(&bv, k, n);
                    let start = values(m * n, 7);
                    let (alpha, scale) = (-0.3, 0.5);
                    let mut product = vec![f32::NAN; m * n];
                    let mut want = start.clone();
                    let mut got = start.clone();
                    if add_product(&mut view(&mut got, m, n, c_t), alpha, &a, &b, scale) {
                        fused_shapes += 1;
                        super::super::matmul(view(&mut product, m, n, c_t), a, b, false, scale);
                        // `product`, `want` and `got` share one storage order.
                        crate::kernels::axpy(alpha, &product, &mut want);
                        let bits = |v: &[f32]| v.iter().map(|f| f.to_bits()).collect::<Vec<_>>();
                        assert_eq!(bits(&got), bits(&want), "m={m} n={n} k={k} c_t={c_t}");
                    } else {
                        assert_eq!(got, start, "declined, so untouched");
                    }
                }
            }
        }
        assert!(fused_shapes >= 8, "only {fused_shapes} shapes fused");
    }

    #[test]
    fn the_portable_dot_is_the_fma_dot() {
        for k in [1, 5, 8, 13, 196] {
            let (x, y) = (values(k, 3), values(k, 4));
            assert_eq!(
                dots([&x], [&y])[0][0].to_bits(),
                dot_portable(&x, &y).to_bits(),
                "k={k}"
            );
        }
    }
}
