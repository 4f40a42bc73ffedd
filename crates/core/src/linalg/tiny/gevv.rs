//! `gemm`'s `gevv` shortcut for an inner dimension `k <= 2`: each output row
//! `l1 (s r1) + l0 (s r0)`, multiplies and adds never fused, so the same bits
//! on every path; written into `c`, or added to it times `alpha` (the product
//! then an `axpy`, without the product's matrix). With AVX-512 a row runs
//! 16 lanes at a time, its tail under a mask; elsewhere the compiler
//! vectorises the portable body.

use super::super::{MatMut, MatRef};

/// `gemm`'s `gevv` for `k <= 2` into `c` through `sink`; `false` (and `c`
/// untouched) for other shapes.
pub(super) fn gevv(
    c: &mut MatMut<'_>,
    a: &MatRef<'_>,
    b: &MatRef<'_>,
    scale: f32,
    sink: Sink,
) -> bool {
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
    job.run(row_portable);
    true
}

/// How a row of `gevv` lands in its output: overwriting it (a product), or
/// added to it times `alpha` (a product then an `axpy`).
#[derive(Clone, Copy)]
pub(super) enum Sink {
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

/// One output row of a [`Gevv`], its `a` values `xs` (`xs[1]` unused for
/// `k = 1`): `out <- g` or `out <- out + alpha g` (see [`row_portable`]).
#[derive(Clone, Copy)]
struct Row<'r> {
    y0: &'r [f32],
    y1: &'r [f32],
    xs: [f32; 2],
    scale: f32,
    transposed: bool,
    sink: Sink,
}

impl Gevv<'_, '_, '_> {
    #[inline(always)]
    fn run(self, mut row: impl FnMut(&mut [f32], Row<'_>)) {
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
            let spec = Row {
                y0,
                y1,
                xs,
                scale,
                transposed,
                sink,
            };
            row(out, spec);
        }
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn gevv_avx2(job: Gevv<'_, '_, '_>) {
    // A closure, not the function item: a closure inherits this function's
    // target features, so the inlined portable body is compiled for AVX2;
    // `row_portable` passed as an item is called through a shim compiled for
    // the baseline (SSE2): the small-clients round took 0.57 ms that way on
    // an AVX2 machine, 0.42 ms this way.
    #[allow(clippy::redundant_closure)]
    job.run(|out, row| row_portable(out, row));
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
fn gevv_avx512(job: Gevv<'_, '_, '_>) {
    job.run(|out, row| row_avx512(out, row));
}

/// One row: `g_j = y1_j (s x1) + y0_j (s x0)` (`transposed`) or
/// `x1 (s y1_j) + x0 (s y0_j)`, without the `y1` term for `k = 1`; `out_j = g_j`,
/// or `out_j += alpha g_j`.
#[inline(always)]
fn row_portable(out: &mut [f32], row: Row<'_>) {
    match row.sink {
        Sink::Store => row_body(out, row, |o, g| *o = g),
        Sink::AddScaled(alpha) => row_body(out, row, |o, g| *o += alpha * g),
    }
}

#[inline(always)]
fn row_body(out: &mut [f32], row: Row<'_>, put: impl Fn(&mut f32, f32)) {
    let Row {
        y0,
        y1,
        xs: [x0, x1],
        scale,
        transposed,
        ..
    } = row;
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

/// [`row_portable`] 16 lanes at a time: the same products and sums in the
/// same order (IEEE products and sums commute). The last, partial block is
/// the row's last 16 entries, computed from `out` before the blocks in front
/// overwrite any of it and stored after them: the entries both cover get the
/// same bits twice, and no masked store stalls the next row's loads. Rows
/// shorter than 16 are masked.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
fn row_avx512(out: &mut [f32], row: Row<'_>) {
    use std::arch::x86_64::*;
    let n = out.len();
    assert!(
        row.y0.len() >= n && (row.y1.is_empty() || row.y1.len() >= n),
        "gevv row lengths"
    );
    let lanes = Lanes::new(row);
    if n < 16 {
        let mask: __mmask16 = (1 << n) - 1;
        // SAFETY: the mask keeps every lane read or written below `n`;
        // masked lanes are neither read nor written.
        unsafe {
            let value = lanes.value(out.as_ptr(), 0, mask);
            _mm512_mask_storeu_ps(out.as_mut_ptr(), mask, value);
        }
        return;
    }
    let last = n - 16;
    // SAFETY: every block read or written, `[j, j + 16)`, lies below `n`.
    unsafe {
        let tail = lanes.value(out.as_ptr(), last, u16::MAX);
        let mut j = 0;
        while j < last {
            let value = lanes.value(out.as_ptr(), j, u16::MAX);
            _mm512_storeu_ps(out.as_mut_ptr().add(j), value);
            j += 16;
        }
        _mm512_storeu_ps(out.as_mut_ptr().add(last), tail);
    }
}

/// A [`Row`] with its scalars broadcast to 16 lanes.
#[cfg(target_arch = "x86_64")]
struct Lanes<'r> {
    y0: &'r [f32],
    y1: &'r [f32],
    s0: std::arch::x86_64::__m512,
    s1: std::arch::x86_64::__m512,
    x0: std::arch::x86_64::__m512,
    x1: std::arch::x86_64::__m512,
    s: std::arch::x86_64::__m512,
    transposed: bool,
    alpha: Option<std::arch::x86_64::__m512>,
}

#[cfg(target_arch = "x86_64")]
impl<'r> Lanes<'r> {
    #[target_feature(enable = "avx512f")]
    #[inline]
    fn new(row: Row<'r>) -> Self {
        use std::arch::x86_64::_mm512_set1_ps as all;
        let [x0, x1] = row.xs;
        Lanes {
            y0: row.y0,
            y1: row.y1,
            s0: all(row.scale * x0),
            s1: all(row.scale * x1),
            x0: all(x0),
            x1: all(x1),
            s: all(row.scale),
            transposed: row.transposed,
            alpha: match row.sink {
                Sink::Store => None,
                Sink::AddScaled(alpha) => Some(all(alpha)),
            },
        }
    }

    /// The new values of the 16 entries from `j` under `mask` (zero where off).
    ///
    /// # Safety
    /// Every entry under `mask` from `j` lies inside `y0`, `y1` (unless
    /// empty) and the row `out` points to.
    #[target_feature(enable = "avx512f")]
    #[inline]
    unsafe fn value(
        &self,
        out: *const f32,
        j: usize,
        mask: std::arch::x86_64::__mmask16,
    ) -> std::arch::x86_64::__m512 {
        use std::arch::x86_64::*;
        // SAFETY: the caller's contract.
        let load = |v: *const f32| unsafe { _mm512_maskz_loadu_ps(mask, v.add(j)) };
        let a = load(self.y0.as_ptr());
        let g = match (self.y1.is_empty(), self.transposed) {
            (true, true) => _mm512_mul_ps(a, self.s0),
            (true, false) => _mm512_mul_ps(self.x0, _mm512_mul_ps(self.s, a)),
            (false, true) => {
                let b = load(self.y1.as_ptr());
                _mm512_add_ps(_mm512_mul_ps(b, self.s1), _mm512_mul_ps(a, self.s0))
            }
            (false, false) => {
                let b = load(self.y1.as_ptr());
                let x1b = _mm512_mul_ps(self.x1, _mm512_mul_ps(self.s, b));
                _mm512_add_ps(x1b, _mm512_mul_ps(self.x0, _mm512_mul_ps(self.s, a)))
            }
        };
        match self.alpha {
            None => g,
            Some(alpha) => _mm512_add_ps(load(out), _mm512_mul_ps(alpha, g)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_row_body_gives_the_portable_bits() {
        let values = |len: usize, salt: f32| -> Vec<f32> {
            (0..len)
                .map(|i| ((i as f32 + salt) * 0.377).sin())
                .collect()
        };
        let mut compared = 0;
        for n in [1, 15, 16, 17, 31, 32, 196] {
            let (y0, y1) = (values(n, 1.0), values(n, 2.0));
            for two in [false, true] {
                for transposed in [false, true] {
                    for sink in [Sink::Store, Sink::AddScaled(-0.3)] {
                        let row = Row {
                            y0: &y0,
                            y1: if two { &y1 } else { &[] },
                            xs: [0.7, -1.3],
                            scale: 0.5,
                            transposed,
                            sink,
                        };
                        let mut want = values(n, 3.0);
                        row_portable(&mut want, row);
                        #[cfg(target_arch = "x86_64")]
                        if std::is_x86_feature_detected!("avx512f") {
                            let mut got = values(n, 3.0);
                            // SAFETY: the CPU has the feature.
                            unsafe { row_avx512(&mut got, row) };
                            let bits =
                                |v: &[f32]| v.iter().map(|f| f.to_bits()).collect::<Vec<_>>();
                            assert_eq!(bits(&got), bits(&want), "n={n} two={two} t={transposed}");
                            compared += 1;
                        }
                    }
                }
            }
        }
        #[cfg(target_arch = "x86_64")]
        if std::is_x86_feature_detected!("avx512f") {
            assert_eq!(compared, 56);
        }
        let _ = compared;
    }
}
