//! The small dense linear algebra of federated moment descent, on `nalgebra`:
//! the top-k left singular subspace of a `d x d` moment matrix (direct SVD), the
//! QR step of the federated orthogonal iteration, and the anchors' power
//! iteration on the `k x k` matrix `A Aᵀ`.
//!
//! Matrices cross the client/server seam as flat `f32` slices, row-major
//! (`d x k` bases: row `r` holds coordinate `r` of the `k` basis vectors); the
//! arithmetic here is in `f64`.

use nalgebra::DMatrix;
use rand_distr::{Distribution, StandardNormal};

use fedcluster_core::Rng;

/// A row-major `rows x cols` slice as a matrix.
fn matrix(rows: usize, cols: usize, values: &[f64]) -> DMatrix<f64> {
    DMatrix::from_row_slice(rows, cols, values)
}

/// The matrix as a row-major `f32` vector.
fn row_major(m: &DMatrix<f64>) -> Vec<f32> {
    let mut out = Vec::with_capacity(m.nrows() * m.ncols());
    for r in 0..m.nrows() {
        out.extend(m.row(r).iter().map(|v| *v as f32));
    }
    out
}

/// The top-`k` left singular vectors of the `d x d` row-major matrix `y`, as a
/// row-major `d x k` basis, by a direct SVD. Ties and signs follow nalgebra's
/// SVD; only the spanned subspace matters to the caller.
pub fn top_left_singular(y: &[f64], d: usize, k: usize) -> Vec<f32> {
    let svd = matrix(d, d, y).svd(true, false);
    let u = svd.u.expect("SVD asked for U");
    let mut order: Vec<usize> = (0..svd.singular_values.len()).collect();
    order.sort_by(|&a, &b| svd.singular_values[b].total_cmp(&svd.singular_values[a]));
    let cols: Vec<_> = order.iter().take(k).map(|&c| u.column(c)).collect();
    row_major(&DMatrix::from_columns(&cols))
}

/// The `Q` factor of the row-major `d x k` matrix `m` (thin QR, `k <= d`), as a
/// row-major `d x k` orthonormal basis.
pub fn orthonormalize(m: &[f64], d: usize, k: usize) -> Vec<f32> {
    row_major(&matrix(d, k, m).qr().q())
}

/// A random `d x k` orthonormal matrix (QR of a Gaussian matrix), row-major:
/// the orthogonal iteration's `Q_0`.
pub fn random_orthonormal(d: usize, k: usize, rng: &mut Rng) -> Vec<f32> {
    let g: Vec<f64> = (0..d * k).map(|_| StandardNormal.sample(rng)).collect();
    orthonormalize(&g, d, k)
}

/// The leading singular direction of a small `k x k` row-major matrix `a` by
/// `steps` power-iteration steps on `A Aᵀ` from its largest column (which lies
/// in its range, so the start is never orthogonal to the answer), and
/// `σ̂² = β̂ᵀ A β̂` (Phase 1, step 11). The sign of `β̂` is left as the iteration
/// gives it; the caller orients it. A zero matrix gives `β̂ = e_1` and `σ̂² = 0`.
pub fn leading_direction(a: &[f64], k: usize, steps: usize) -> (Vec<f64>, f64) {
    let a = matrix(k, k, a);
    let aat = &a * a.transpose();
    let start = (0..k)
        .max_by(|&i, &j| aat.column(i).norm().total_cmp(&aat.column(j).norm()))
        .unwrap_or(0);
    let mut b = aat.column(start).clone_owned();
    if b.norm() > 0.0 {
        b /= b.norm();
    }
    for _ in 0..steps {
        let next = &aat * &b;
        let norm = next.norm();
        if norm == 0.0 || !norm.is_finite() {
            break;
        }
        b = next / norm;
    }
    if (&aat * &b).norm() == 0.0 {
        b = nalgebra::DVector::zeros(k);
        b[0] = 1.0;
    }
    let sigma2 = (b.transpose() * &a * &b)[(0, 0)];
    (b.iter().copied().collect(), sigma2)
}

/// Cosines of the principal angles between the column spans of two row-major
/// `d x k` orthonormal bases: the singular values of `P₁ᵀ P₂`, largest first.
pub fn principal_cosines(p1: &[f32], p2: &[f32], d: usize, k: usize) -> Vec<f64> {
    let to64 = |p: &[f32]| matrix(d, k, &p.iter().map(|v| f64::from(*v)).collect::<Vec<_>>());
    let m = to64(p1).transpose() * to64(p2);
    let mut s: Vec<f64> = m
        .svd(false, false)
        .singular_values
        .iter()
        .copied()
        .collect();
    s.sort_by(|a, b| b.total_cmp(a));
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use fedcluster_core::{Purpose, stream};

    #[test]
    fn svd_finds_the_planted_subspace() {
        // Y = U diag(5, 3) Vᵀ + tiny noise in a 6-dimensional space.
        let d = 6;
        let mut rng = stream(3, Purpose::Server, 0, 0);
        let u = random_orthonormal(d, 2, &mut rng);
        let v = random_orthonormal(d, 2, &mut rng);
        let mut y = vec![0.0; d * d];
        for r in 0..d {
            for c in 0..d {
                y[r * d + c] = 5.0 * f64::from(u[r * 2] * v[c * 2])
                    + 3.0 * f64::from(u[r * 2 + 1] * v[c * 2 + 1]);
            }
        }
        let found = top_left_singular(&y, d, 2);
        let cos = principal_cosines(&found, &u, d, 2);
        assert!(cos.iter().all(|c| (c - 1.0).abs() < 1e-5), "{cos:?}");
    }

    #[test]
    fn orthonormalize_gives_orthonormal_columns() {
        let mut rng = stream(4, Purpose::Server, 0, 0);
        let q = random_orthonormal(7, 3, &mut rng);
        for a in 0..3 {
            for b in 0..3 {
                let dot: f32 = (0..7).map(|r| q[r * 3 + a] * q[r * 3 + b]).sum();
                let want = if a == b { 1.0 } else { 0.0 };
                assert!((dot - want).abs() < 1e-5, "({a},{b}): {dot}");
            }
        }
    }

    #[test]
    fn power_iteration_recovers_a_rank_one_moment() {
        // A = s s^T with s = (3, -4): β̂ = ±s/5 and σ̂² = 25.
        let a = [9.0, -12.0, -12.0, 16.0];
        let (b, sigma2) = leading_direction(&a, 2, 30);
        assert!((sigma2 - 25.0).abs() < 1e-9, "{sigma2}");
        assert!((b[0].abs() - 0.6).abs() < 1e-9 && (b[1].abs() - 0.8).abs() < 1e-9);
        assert!(b[0] * b[1] < 0.0);
        let (z, s0) = leading_direction(&[0.0; 4], 2, 10);
        assert_eq!((z, s0), (vec![1.0, 0.0], 0.0));
    }
}
