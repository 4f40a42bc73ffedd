//! The one place that calls the GEMM kernel (the `gemm` crate, runtime-dispatched
//! AVX2/FMA micro-kernels). Matrices are strided views over flat `f32` slices;
//! shapes and bounds are checked here so callers stay in safe code.
//!
//! The kernel always runs single-threaded: fedcluster parallelises over clients,
//! and a single-threaded kernel gives the same bits whatever the thread count.

mod tiny;

/// A read-only strided matrix view.
#[derive(Clone, Copy, Debug)]
pub struct MatRef<'a> {
    data: &'a [f32],
    rows: usize,
    cols: usize,
    row_stride: usize,
    col_stride: usize,
}

/// A mutable strided matrix view.
#[derive(Debug)]
pub struct MatMut<'a> {
    data: &'a mut [f32],
    rows: usize,
    cols: usize,
    row_stride: usize,
    col_stride: usize,
}

fn fits(len: usize, rows: usize, cols: usize, rs: usize, cs: usize) -> bool {
    rows == 0 || cols == 0 || (rows - 1) * rs + (cols - 1) * cs < len
}

impl<'a> MatRef<'a> {
    /// A `rows x cols` row-major view of `data`. Panics if `data` is too short:
    /// shapes are program invariants, not user input.
    pub fn row_major(data: &'a [f32], rows: usize, cols: usize) -> Self {
        assert!(
            fits(data.len(), rows, cols, cols, 1),
            "row-major view {rows}x{cols} over {} values",
            data.len()
        );
        Self {
            data,
            rows,
            cols,
            row_stride: cols,
            col_stride: 1,
        }
    }

    /// A `rows x cols` row-major view of `data` whose rows start
    /// `row_stride >= cols` values apart (a padded layout). Panics if `data`
    /// is too short or the stride too small.
    pub fn row_major_strided(data: &'a [f32], rows: usize, cols: usize, row_stride: usize) -> Self {
        assert!(
            row_stride >= cols && fits(data.len(), rows, cols, row_stride, 1),
            "row-major view {rows}x{cols}, row stride {row_stride}, over {} values",
            data.len()
        );
        Self {
            data,
            rows,
            cols,
            row_stride,
            col_stride: 1,
        }
    }

    /// The transposed view (no copy).
    pub fn t(self) -> Self {
        Self {
            data: self.data,
            rows: self.cols,
            cols: self.rows,
            row_stride: self.col_stride,
            col_stride: self.row_stride,
        }
    }

    /// Number of rows.
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// Number of columns.
    pub fn cols(&self) -> usize {
        self.cols
    }
}

impl<'a> MatMut<'a> {
    /// A `rows x cols` row-major mutable view of `data`.
    pub fn row_major(data: &'a mut [f32], rows: usize, cols: usize) -> Self {
        assert!(
            fits(data.len(), rows, cols, cols, 1),
            "row-major view {rows}x{cols} over {} values",
            data.len()
        );
        Self {
            data,
            rows,
            cols,
            row_stride: cols,
            col_stride: 1,
        }
    }

    /// The transposed view (no copy).
    pub fn t(self) -> Self {
        Self {
            data: self.data,
            rows: self.cols,
            cols: self.rows,
            row_stride: self.col_stride,
            col_stride: self.row_stride,
        }
    }
}

/// `c <- (accumulate ? c : 0) + scale * a * b`.
///
/// Panics on mismatched shapes (a programming error, never user input).
pub fn matmul(mut c: MatMut<'_>, a: MatRef<'_>, b: MatRef<'_>, accumulate: bool, scale: f32) {
    assert_eq!(a.cols, b.rows, "matmul inner dimensions");
    assert_eq!((c.rows, c.cols), (a.rows, b.cols), "matmul output shape");
    let (m, n, k) = (c.rows, c.cols, a.cols);
    if m == 0 || n == 0 {
        return;
    }
    if k == 0 {
        if !accumulate {
            for i in 0..m {
                for j in 0..n {
                    c.data[i * c.row_stride + j * c.col_stride] = 0.0;
                }
            }
        }
        return;
    }
    if !accumulate && tiny::matmul(&mut c, &a, &b, scale) {
        return;
    }
    by_gemm(c, a, b, accumulate, scale);
}

/// `y <- y + alpha * (scale * a * b)` with the bits of [`matmul`] into a
/// scratch matrix followed by [`crate::params::axpy`], without the scratch,
/// for the products `matmul` computes by `gemm`'s `gevv` (an inner dimension
/// of 1 or 2: a gradient step of a one- or two-sample client); `false`, and
/// `y` untouched, for any other product: the caller takes the two steps.
/// A linear layer's step (`y` the weights and `b` the samples row-major, `a`
/// the transposed residuals) runs as the pass of [`step_then_forward`]
/// without its products, 8 lanes wide, where that pass runs.
pub fn add_product(
    mut y: MatMut<'_>,
    alpha: f32,
    a: MatRef<'_>,
    b: MatRef<'_>,
    scale: f32,
) -> bool {
    assert_eq!(a.cols, b.rows, "add_product inner dimensions");
    assert_eq!(
        (y.rows, y.cols),
        (a.rows, b.cols),
        "add_product output shape"
    );
    y.rows > 0 && y.cols > 0 && tiny::add_product(&mut y, alpha, &a, &b, scale)
}

/// A gradient step of a linear layer's weights and the next forward
/// product, for a one- or two-sample batch, in one pass over the weights:
/// `w <- w + alpha * (scale * Δᵀ x)` with the bits of [`add_product`], then
/// `z <- x wᵀ` from the updated `w` with the bits of [`matmul`]
/// (`accumulate = false`, scale 1). `w` is `rows x dim`, `x` is `n x dim`
/// and `z` is `n x rows` (all row-major), `z` holding `Δ` on entry. `false`,
/// and nothing touched, where the two calls would not both take their
/// shortcuts (more than two samples, no FMA, ...): the caller makes them.
/// The pass is 8 lanes wide and runs with AVX-512 too, where it measured
/// faster than the two products' 16-lane kernels (the small-clients round
/// 0.28 -> 0.24 ms on an Intel Xeon, 0.34 -> 0.28 ms on AMD's Zen 4).
pub fn step_then_forward(
    w: &mut [f32],
    dim: usize,
    alpha: f32,
    x: &[f32],
    scale: f32,
    z: &mut [f32],
) -> bool {
    assert!(
        dim > 0 && w.len().is_multiple_of(dim) && x.len().is_multiple_of(dim),
        "step_then_forward: {} weights and {} inputs are not rows of {dim}",
        w.len(),
        x.len()
    );
    assert_eq!(
        z.len(),
        (x.len() / dim) * (w.len() / dim),
        "step_then_forward: residuals shape"
    );
    tiny::step_then_forward(w, dim, alpha, x, scale, z)
}

/// [`matmul`] by the `gemm` crate, for non-empty products (`k >= 1`).
fn by_gemm(c: MatMut<'_>, a: MatRef<'_>, b: MatRef<'_>, accumulate: bool, scale: f32) {
    let (m, n, k) = (c.rows, c.cols, a.cols);
    // SAFETY: `fits` was checked for every view at construction (and transposition
    // keeps it), so every index the kernel touches lies inside its slice; `c` is
    // borrowed mutably, so it cannot alias `a` or `b`.
    unsafe {
        gemm::gemm(
            m,
            n,
            k,
            c.data.as_mut_ptr(),
            c.col_stride as isize,
            c.row_stride as isize,
            accumulate,
            a.data.as_ptr(),
            a.col_stride as isize,
            a.row_stride as isize,
            b.data.as_ptr(),
            b.col_stride as isize,
            b.row_stride as isize,
            1.0,
            scale,
            false,
            false,
            false,
            gemm::Parallelism::None,
        );
    }
}

/// Floating-point operations of one `m x k` by `k x n` product (multiply and add
/// counted separately), for throughput reports.
pub fn matmul_flops(m: usize, k: usize, n: usize) -> u64 {
    2 * (m as u64) * (k as u64) * (n as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn naive(a: &[f32], b: &[f32], m: usize, k: usize, n: usize) -> Vec<f32> {
        let mut c = vec![0.0; m * n];
        for i in 0..m {
            for j in 0..n {
                c[i * n + j] = (0..k).map(|p| a[i * k + p] * b[p * n + j]).sum();
            }
        }
        c
    }

    #[test]
    fn matmul_matches_naive_with_transposes() {
        let (m, k, n) = (5, 7, 3);
        let a: Vec<f32> = (0..m * k).map(|i| (i as f32 * 0.37).sin()).collect();
        let b: Vec<f32> = (0..k * n).map(|i| (i as f32 * 0.11).cos()).collect();
        let want = naive(&a, &b, m, k, n);
        let mut c = vec![1.0; m * n];
        matmul(
            MatMut::row_major(&mut c, m, n),
            MatRef::row_major(&a, m, k),
            MatRef::row_major(&b, k, n),
            false,
            1.0,
        );
        for (x, y) in c.iter().zip(&want) {
            assert!((x - y).abs() < 1e-5);
        }
        // b stored transposed (n x k), used through a transposed view; accumulate.
        let mut bt = vec![0.0; n * k];
        for p in 0..k {
            for j in 0..n {
                bt[j * k + p] = b[p * n + j];
            }
        }
        matmul(
            MatMut::row_major(&mut c, m, n),
            MatRef::row_major(&a, m, k),
            MatRef::row_major(&bt, n, k).t(),
            true,
            -2.0,
        );
        for (x, y) in c.iter().zip(&want) {
            assert!((x + y).abs() < 1e-5, "{x} vs {}", -y);
        }
    }

    #[test]
    fn a_padded_view_reads_only_its_rows_values() {
        let (m, k, n, stride) = (4, 3, 2, 5);
        let a: Vec<f32> = (0..m * k).map(|i| (i as f32 * 0.37).sin()).collect();
        let b: Vec<f32> = (0..k * n).map(|i| (i as f32 * 0.11).cos()).collect();
        // The same values rows `stride` apart, NaN in the padding.
        let mut padded = vec![f32::NAN; (m - 1) * stride + k];
        for (i, row) in a.chunks_exact(k).enumerate() {
            padded[i * stride..i * stride + k].copy_from_slice(row);
        }
        let (mut dense, mut strided) = (vec![0.0; m * n], vec![0.0; m * n]);
        let b = MatRef::row_major(&b, k, n);
        matmul(
            MatMut::row_major(&mut dense, m, n),
            MatRef::row_major(&a, m, k),
            b,
            false,
            1.0,
        );
        let view = MatRef::row_major_strided(&padded, m, k, stride);
        matmul(MatMut::row_major(&mut strided, m, n), view, b, false, 1.0);
        assert_eq!(dense, strided);
        assert!(std::panic::catch_unwind(|| MatRef::row_major_strided(&padded, m, k, 2)).is_err());
    }
}
