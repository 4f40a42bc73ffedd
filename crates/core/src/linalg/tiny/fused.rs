//! A one- or two-sample client's gradient step of a linear layer's weights
//! fused with the next step's forward product, in one pass over the weights:
//! each weight row is updated as `gevv` then `axpy` update it (see
//! [`super::gevv`]) and, while its blocks are still in registers, dotted
//! with the samples as the horizontal path forms `x wᵀ` (see
//! [`super::horizontal`]): 8 FMA lanes, the tail zero-padded, the lanes
//! summed in `gemm`'s order. The same bits as the two products, without
//! reading the weights a second time. [`step`] is the pass without the
//! products (a client's last step). A row's last `dim % 8` entries are
//! stored by plain stores, not a masked one (on AMD's Zen 4 a two-image
//! client's step took 258 ns with a masked store, 236 ns without).

#[cfg(target_arch = "x86_64")]
use super::horizontal::{LANES, TAIL_MASKS, sum_lanes};

/// The step: `w` (`rows x dim`, row-major) `+= alpha (scale Δᵀ x)`, then
/// `z <- x wᵀ`; `x` holds the samples (`n = 1` or `2` rows of `dim`), and
/// `z` (`n x rows`, row-major) holds `Δ` on entry and the products on return.
/// Weight rows go four at a time (then two, then one): a dot product's
/// lanes are one chain of dependent FMAs, so a lone row would wait on their
/// latency.
///
/// # Safety
/// The CPU has AVX2 and FMA; `w` holds `rows · dim` values, every row of `x`
/// `dim`, and `z` `n · rows`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
pub(super) unsafe fn step_then_forward(
    w: &mut [f32],
    dim: usize,
    alpha: f32,
    x: [&[f32]; 2],
    n: usize,
    scale: f32,
    z: &mut [f32],
) {
    let rows = z.len() / n;
    // SAFETY: the caller's contract.
    unsafe { pass(w, dim, alpha, x, scale, &mut Forward { z, rows, n }) }
}

/// The step of [`step_then_forward`] alone, no products formed: `delta`
/// (`n x rows`) holds `Δ`. The same bits as `gevv` then `axpy`, 8 lanes
/// wide, the samples loaded once for four weight rows.
///
/// # Safety
/// As [`step_then_forward`]'s, `delta` in place of `z`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
pub(super) unsafe fn step(
    w: &mut [f32],
    dim: usize,
    alpha: f32,
    x: [&[f32]; 2],
    n: usize,
    scale: f32,
    delta: &[f32],
) {
    let rows = delta.len() / n;
    // SAFETY: the caller's contract.
    unsafe { pass(w, dim, alpha, x, scale, &mut Update { delta, rows, n }) }
}

/// One pass over the weight rows, in groups (see [`step_then_forward`]).
///
/// # Safety
/// As [`step_then_forward`]'s.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn pass<Z: Residuals>(
    w: &mut [f32],
    dim: usize,
    alpha: f32,
    x: [&[f32]; 2],
    scale: f32,
    z: &mut Z,
) {
    let (n, rows) = (z.samples(), z.rows());
    let samples = Samples {
        y0: &x[0][..dim],
        y1: &x[n - 1][..dim],
        two: n == 2,
        alpha,
        scale,
    };
    let mut i = 0;
    while i < rows {
        // SAFETY: the caller's contract; each group's rows lie inside `w`.
        i += unsafe {
            match rows - i {
                GROUP.. => samples.group::<GROUP, Z>(w, z, i),
                2 | 3 => samples.group::<2, Z>(w, z, i),
                _ => samples.group::<1, Z>(w, z, i),
            }
        };
    }
}

/// Where a pass reads the residuals `Δ` (`n x rows`, row-major) and puts
/// each row's products with the samples, if it forms them.
#[cfg(target_arch = "x86_64")]
trait Residuals {
    /// Whether the pass forms the products `x wᵀ`.
    const FORWARD: bool;
    /// `Δ`, its rows (one per weight row) and samples.
    fn delta(&self) -> (&[f32], usize, usize);
    fn put(&mut self, row: usize, products: [f32; 2]);

    fn samples(&self) -> usize {
        self.delta().2
    }
    fn rows(&self) -> usize {
        self.delta().1
    }
    fn residual(&self, sample: usize, row: usize) -> f32 {
        let (delta, rows, _) = self.delta();
        delta[sample * rows + row]
    }
}

/// `Δ` in `z`, overwritten by the products row by row once read.
#[cfg(target_arch = "x86_64")]
struct Forward<'z> {
    z: &'z mut [f32],
    rows: usize,
    n: usize,
}

#[cfg(target_arch = "x86_64")]
impl Residuals for Forward<'_> {
    const FORWARD: bool = true;
    fn delta(&self) -> (&[f32], usize, usize) {
        (self.z, self.rows, self.n)
    }
    fn put(&mut self, row: usize, [p0, p1]: [f32; 2]) {
        self.z[row] = p0;
        if self.n == 2 {
            self.z[self.rows + row] = p1;
        }
    }
}

/// `Δ` read only; no products.
#[cfg(target_arch = "x86_64")]
struct Update<'d> {
    delta: &'d [f32],
    rows: usize,
    n: usize,
}

#[cfg(target_arch = "x86_64")]
impl Residuals for Update<'_> {
    const FORWARD: bool = false;
    fn delta(&self) -> (&[f32], usize, usize) {
        (self.delta, self.rows, self.n)
    }
    fn put(&mut self, _: usize, _: [f32; 2]) {}
}

/// Weight rows updated and dotted together.
#[cfg(target_arch = "x86_64")]
const GROUP: usize = 4;

/// The samples of a step, its step size and the residuals' scale.
#[cfg(target_arch = "x86_64")]
struct Samples<'x> {
    y0: &'x [f32],
    /// The second sample; the first again for one sample (then unused).
    y1: &'x [f32],
    two: bool,
    alpha: f32,
    scale: f32,
}

#[cfg(target_arch = "x86_64")]
impl Samples<'_> {
    /// The step for the `R` weight rows from row `i` of `w`: their scaled
    /// residuals read from `z`, then their products put there (if formed).
    /// Returns `R`.
    ///
    /// # Safety
    /// As [`step_then_forward`]'s, and rows `i..i + R` exist.
    #[target_feature(enable = "avx2,fma")]
    unsafe fn group<const R: usize, Z: Residuals>(
        &self,
        w: &mut [f32],
        z: &mut Z,
        i: usize,
    ) -> usize {
        let dim = self.y0.len();
        let residual = |sample: usize, r: usize| self.scale * z.residual(sample, i + r);
        let s0 = std::array::from_fn(|r| residual(0, r));
        let s1 = std::array::from_fn(|r| if self.two { residual(1, r) } else { 0.0 });
        // SAFETY: the caller's contract.
        let products = unsafe { self.rows::<R, Z>(&mut w[i * dim..(i + R) * dim], s0, s1) };
        if Z::FORWARD {
            for (r, p) in products.into_iter().enumerate() {
                z.put(i + r, p);
            }
        }
        R
    }

    /// Updates the `R` rows of `w` (`R x dim`) with the scaled residuals
    /// `s0` and `s1` (`gevv`'s `g = y1 s1 + y0 s0`, `w += alpha g`) and
    /// returns each updated row's dot products with the two samples (zeros
    /// where `Z` forms none).
    ///
    /// # Safety
    /// The CPU has AVX2 and FMA; `w` holds `R` rows of `self.y0.len()`.
    #[target_feature(enable = "avx2,fma")]
    unsafe fn rows<const R: usize, Z: Residuals>(
        &self,
        w: &mut [f32],
        s0: [f32; R],
        s1: [f32; R],
    ) -> [[f32; 2]; R] {
        use std::arch::x86_64::*;
        let dim = self.y0.len();
        let full = dim - dim % LANES;
        let all = |v: [f32; R]| v.map(|s| _mm256_set1_ps(s));
        let (s0_v, s1_v, alpha_v) = (all(s0), all(s1), _mm256_set1_ps(self.alpha));
        // `gevv`'s row of the gradient for weight row `r`, unfused.
        let gradient = |a: __m256, b: __m256, r: usize| {
            if self.two {
                _mm256_add_ps(_mm256_mul_ps(b, s1_v[r]), _mm256_mul_ps(a, s0_v[r]))
            } else {
                _mm256_mul_ps(a, s0_v[r])
            }
        };
        let mut acc = [[_mm256_setzero_ps(); 2]; R];
        let mut p = 0;
        while p < full {
            // SAFETY: `p + 8 <= dim`, within every row and sample.
            unsafe {
                let a = _mm256_loadu_ps(self.y0.as_ptr().add(p));
                let b = _mm256_loadu_ps(self.y1.as_ptr().add(p));
                for (r, acc) in acc.iter_mut().enumerate() {
                    let g = gradient(a, b, r);
                    let at = w.as_mut_ptr().add(r * dim + p);
                    let updated = _mm256_add_ps(_mm256_loadu_ps(at), _mm256_mul_ps(alpha_v, g));
                    _mm256_storeu_ps(at, updated);
                    if Z::FORWARD {
                        acc[0] = _mm256_fmadd_ps(a, updated, acc[0]);
                        acc[1] = _mm256_fmadd_ps(b, updated, acc[1]);
                    }
                }
            }
            p += LANES;
        }
        if full < dim {
            // The tail's lanes, zeros above it as in the horizontal path's
            // masked loads; updated entries above the tail are masked to zero
            // too (and never stored).
            // SAFETY: the mask table has a row per tail length 0..8, and the
            // masked loads and stores touch only the `dim - full` values of
            // each slice from `full`.
            unsafe {
                let mask = _mm256_loadu_si256(TAIL_MASKS[dim - full].as_ptr().cast());
                let a = _mm256_maskload_ps(self.y0.as_ptr().add(full), mask);
                let b = _mm256_maskload_ps(self.y1.as_ptr().add(full), mask);
                for (r, acc) in acc.iter_mut().enumerate() {
                    let at = w.as_mut_ptr().add(r * dim + full);
                    let g = gradient(a, b, r);
                    let sum =
                        _mm256_add_ps(_mm256_maskload_ps(at, mask), _mm256_mul_ps(alpha_v, g));
                    let updated = _mm256_and_ps(sum, _mm256_castsi256_ps(mask));
                    crate::kernels::tail::store_first8(at, dim - full, updated);
                    if Z::FORWARD {
                        acc[0] = _mm256_fmadd_ps(a, updated, acc[0]);
                        acc[1] = _mm256_fmadd_ps(b, updated, acc[1]);
                    }
                }
            }
        }
        if Z::FORWARD {
            acc.map(|[a0, a1]| [sum_lanes(a0), sum_lanes(a1)])
        } else {
            [[0.0; 2]; R]
        }
    }
}
