//! PACFL's linear algebra, on `nalgebra` in `f64`: a client's data subspace
//! (the top left singular vectors of its `d x n` data matrix, whole or per
//! class) and the angle between two clients' subspaces.
//!
//! Bases cross the seam as `f32` columns of `d` values, back to back, each of
//! unit length.

use nalgebra::{DMatrix, SymmetricEigen};

use fedcluster_core::{Batch, Targets};

/// Singular values below this fraction of the largest are taken as zero (a
/// rank below `p`).
const RANK_TOL: f64 = 1e-9;

/// The top `p` left singular vectors of `Dᵀ`, where the `n` rows of `x` (`d`
/// values each, row-major) are the data points: at most `min(p, n, d)`
/// columns, fewer when the data has lower rank. Computed from the smaller of
/// the Gram matrices `XᵀX` (`d x d`) and `XXᵀ` (`n x n`).
pub fn data_basis(x: &[f32], d: usize, p: usize) -> Vec<f32> {
    let n = x.len().checked_div(d).unwrap_or(0);
    if n == 0 || p == 0 {
        return Vec::new();
    }
    let m = DMatrix::from_row_iterator(n, d, x.iter().map(|v| f64::from(*v)));
    let small_side = d <= n;
    let gram = if small_side {
        m.transpose() * &m
    } else {
        &m * m.transpose()
    };
    let eig = SymmetricEigen::new(gram);
    let mut order: Vec<usize> = (0..eig.eigenvalues.len()).collect();
    order.sort_by(|&a, &b| {
        eig.eigenvalues[b]
            .total_cmp(&eig.eigenvalues[a])
            .then(a.cmp(&b))
    });
    let top = eig.eigenvalues[order[0]].max(0.0);
    let mut out = Vec::with_capacity(p.min(n).min(d) * d);
    for &c in order.iter().take(p) {
        if eig.eigenvalues[c] <= RANK_TOL * top || top == 0.0 {
            break;
        }
        let v = eig.eigenvectors.column(c);
        // In the d-space, v is the singular vector; in the n-space, Xᵀv is.
        let u = if small_side {
            v.clone_owned()
        } else {
            m.transpose() * v
        };
        let norm = u.norm();
        out.extend(u.iter().map(|e| (e / norm) as f32));
    }
    out
}

/// [`data_basis`] of each class's points (classes in increasing order),
/// columns side by side: the PACFL code's bases for label skew. `None` when
/// the targets are not classes.
pub fn class_bases(data: &Batch<'_>, p: usize) -> Option<Vec<f32>> {
    let Targets::Class(y) = data.y else {
        return None;
    };
    let d = data.dim;
    let mut classes: Vec<u32> = y.to_vec();
    classes.sort_unstable();
    classes.dedup();
    let mut out = Vec::new();
    for class in classes {
        let rows: Vec<f32> = y
            .iter()
            .enumerate()
            .filter(|(_, c)| **c == class)
            .flat_map(|(r, _)| data.x[r * d..(r + 1) * d].iter().copied())
            .collect();
        out.extend(data_basis(&rows, d, p));
    }
    Some(out)
}

/// A basis as a `d x c` matrix in `f64`.
fn matrix(columns: &[f32], d: usize) -> DMatrix<f64> {
    DMatrix::from_iterator(d, columns.len() / d, columns.iter().map(|v| f64::from(*v)))
}

/// An orthonormal basis of the span of `columns` (`d` values each): the left
/// singular vectors of their matrix with non-zero singular values.
pub fn orthonormal(columns: &[f32], d: usize) -> DMatrix<f64> {
    let a = matrix(columns, d);
    if a.ncols() == 0 {
        return a;
    }
    let svd = a.svd(true, false);
    let u = svd.u.expect("SVD asked for U");
    let top = svd.singular_values.iter().copied().fold(0.0, f64::max);
    let kept: Vec<_> = (0..svd.singular_values.len())
        .filter(|&c| top > 0.0 && svd.singular_values[c] > RANK_TOL.sqrt() * top)
        .map(|c| u.column(c))
        .collect();
    if kept.is_empty() {
        return DMatrix::zeros(d, 0);
    }
    DMatrix::from_columns(&kept)
}

/// The smallest principal angle between two subspaces given by orthonormal
/// bases, in degrees: `acos(σ_max(Q_aᵀ Q_b))`; 90 when either is empty.
pub fn smallest_angle(qa: &DMatrix<f64>, qb: &DMatrix<f64>) -> f64 {
    if qa.ncols() == 0 || qb.ncols() == 0 {
        return 90.0;
    }
    let m = qa.transpose() * qb;
    let top = m.singular_values().iter().copied().fold(0.0, f64::max);
    top.min(1.0).acos().to_degrees()
}

/// The smallest angle between a column of `a` and a column of `b` (unit
/// vectors, `d` values each), in degrees, sign-free: `acos(max |⟨a_i, b_j⟩|)`;
/// 90 when either is empty. The PACFL code's `calculating_adjacency`.
pub fn min_pairwise_angle(a: &[f32], b: &[f32], d: usize) -> f64 {
    let mut top = 0.0f64;
    for ca in a.chunks_exact(d) {
        for cb in b.chunks_exact(d) {
            top = top.max(fedcluster_core::params::dot(ca, cb).abs());
        }
    }
    if a.is_empty() || b.is_empty() {
        return 90.0;
    }
    top.min(1.0).acos().to_degrees()
}
