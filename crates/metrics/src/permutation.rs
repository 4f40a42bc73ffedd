//! Exact minimum-cost assignment on a square matrix of `f64` costs.
//!
//! The Hungarian method in its shortest-augmenting-path form with row and column
//! potentials (Kuhn 1955, Munkres 1957; the O(k³) formulation of Jonker and
//! Volgenant 1987 without their initialisation heuristics). Rows are added one at
//! a time; each addition runs a Dijkstra-like search over reduced costs and
//! augments along the shortest path, so the whole solve is O(k³) time and O(k)
//! extra memory. No crate in the workspace solves float assignment problems, so
//! this compact implementation is checked against brute force in the tests.

use std::borrow::Cow;

use crate::error::{MetricsError, Result};

/// An optimal assignment: row `i` goes to column `perm[i]`.
#[derive(Clone, Debug, PartialEq)]
pub struct Assignment {
    /// Column of each row; a permutation of `0..k`.
    pub perm: Vec<usize>,
    /// Total cost `Σ_i cost[i][perm[i]]`, summed in row order from the input.
    pub cost: f64,
}

/// Solves `min_π Σ_i cost[i][π(i)]` exactly for a `k × k` row-major matrix.
///
/// `k = 0` gives the empty permutation with cost 0. Errors if `cost.len()` is not
/// `k * k` or any entry is NaN or infinite. Ties between optimal permutations
/// are broken deterministically (the same input always gives the same answer).
pub fn min_cost_assignment(cost: &[f64], k: usize) -> Result<Assignment> {
    let shape_err = MetricsError::Shape {
        what: "assignment cost matrix",
        expected: k.saturating_mul(k),
        got: cost.len(),
    };
    if k.checked_mul(k) != Some(cost.len()) {
        return Err(shape_err);
    }
    if let Some(at) = cost.iter().position(|c| !c.is_finite()) {
        return Err(MetricsError::NonFinite {
            what: "assignment cost matrix",
            at,
        });
    }
    let perm = hungarian(&rescaled(cost), k);
    let total = perm.iter().enumerate().map(|(i, &j)| cost[i * k + j]).sum();
    Ok(Assignment { perm, cost: total })
}

/// The costs scaled by a power of two (exact) when they are so large that the
/// potentials could overflow; the optimal permutation does not change.
fn rescaled(cost: &[f64]) -> Cow<'_, [f64]> {
    let max = cost.iter().fold(0.0f64, |m, c| m.max(c.abs()));
    if max <= 1e100 {
        return Cow::Borrowed(cost);
    }
    let scale = 2f64.powi(-(max.log2().floor() as i32));
    Cow::Owned(cost.iter().map(|c| c * scale).collect())
}

/// Hungarian method on a finite `k × k` matrix; returns the column of each row.
fn hungarian(c: &[f64], k: usize) -> Vec<usize> {
    // Index 0 of the column arrays is a virtual column from which each new row's
    // search starts; rows and columns are numbered from 1.
    let mut u = vec![0.0f64; k + 1]; // row potentials
    let mut v = vec![0.0f64; k + 1]; // column potentials
    let mut owner = vec![0usize; k + 1]; // row matched to each column, 0 = free
    let mut way = vec![0usize; k + 1]; // previous column on the shortest path
    let mut minv = vec![0.0f64; k + 1];
    let mut used = vec![false; k + 1];
    for row in 1..=k {
        owner[0] = row;
        let mut j0 = 0;
        minv.fill(f64::INFINITY);
        used.fill(false);
        loop {
            used[j0] = true;
            let i0 = owner[j0];
            let costs = &c[(i0 - 1) * k..i0 * k];
            let mut delta = f64::INFINITY;
            let mut j1 = 0;
            for j in 1..=k {
                if used[j] {
                    continue;
                }
                let reduced = costs[j - 1] - u[i0] - v[j];
                if reduced < minv[j] {
                    minv[j] = reduced;
                    way[j] = j0;
                }
                // `j1 == 0` guarantees progress even if rounding made every
                // candidate compare false.
                if j1 == 0 || minv[j] < delta {
                    delta = minv[j];
                    j1 = j;
                }
            }
            for j in 0..=k {
                if used[j] {
                    u[owner[j]] += delta;
                    v[j] -= delta;
                } else {
                    minv[j] -= delta;
                }
            }
            j0 = j1;
            if owner[j0] == 0 {
                break;
            }
        }
        // Augment: shift the matching along the path back to the virtual column.
        while j0 != 0 {
            let prev = way[j0];
            owner[j0] = owner[prev];
            j0 = prev;
        }
    }
    let mut perm = vec![0usize; k];
    for (j, &i) in owner.iter().enumerate().skip(1) {
        perm[i - 1] = j - 1;
    }
    perm
}

#[cfg(test)]
mod tests {
    use super::*;

    /// SplitMix64, enough for test matrices without a rand dependency.
    struct Gen(u64);

    impl Gen {
        fn next(&mut self) -> u64 {
            self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = self.0;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            z ^ (z >> 31)
        }

        fn unit(&mut self) -> f64 {
            (self.next() >> 11) as f64 / (1u64 << 53) as f64
        }
    }

    fn all_perms(k: usize) -> Vec<Vec<usize>> {
        if k == 0 {
            return vec![vec![]];
        }
        let mut out = Vec::new();
        for p in all_perms(k - 1) {
            for pos in 0..k {
                let mut q = p.clone();
                q.insert(pos, k - 1);
                out.push(q);
            }
        }
        out
    }

    fn brute_force(cost: &[f64], k: usize) -> f64 {
        all_perms(k)
            .iter()
            .map(|p| p.iter().enumerate().map(|(i, &j)| cost[i * k + j]).sum())
            .fold(f64::INFINITY, f64::min)
    }

    fn check(cost: &[f64], k: usize) {
        let a = min_cost_assignment(cost, k).unwrap();
        let mut seen = vec![false; k];
        for &j in &a.perm {
            assert!(!seen[j], "not a permutation: {:?}", a.perm);
            seen[j] = true;
        }
        let recomputed: f64 = a
            .perm
            .iter()
            .enumerate()
            .map(|(i, &j)| cost[i * k + j])
            .sum();
        assert_eq!(a.cost, recomputed);
        let best = brute_force(cost, k);
        let tol = 1e-9 * (1.0 + best.abs());
        assert!((a.cost - best).abs() <= tol, "k={k}: {} vs {best}", a.cost);
    }

    #[test]
    fn matches_brute_force_on_random_matrices() {
        let mut g = Gen(7);
        for k in 1..=7 {
            for _ in 0..40 {
                let cost: Vec<f64> = (0..k * k).map(|_| 20.0 * g.unit() - 5.0).collect();
                check(&cost, k);
            }
        }
    }

    #[test]
    fn matches_brute_force_with_many_ties() {
        let mut g = Gen(11);
        for k in 1..=7 {
            for _ in 0..40 {
                let cost: Vec<f64> = (0..k * k).map(|_| (g.next() % 3) as f64 - 1.0).collect();
                check(&cost, k);
            }
        }
        check(&[0.0; 49], 7);
    }

    #[test]
    fn matches_brute_force_on_huge_and_tiny_scales() {
        let mut g = Gen(13);
        for scale in [1e300, 1e-300, 1e120] {
            for k in 2..=5 {
                let cost: Vec<f64> = (0..k * k).map(|_| scale * (g.unit() - 0.5)).collect();
                let a = min_cost_assignment(&cost, k).unwrap();
                let best = brute_force(&cost, k);
                assert!((a.cost - best).abs() <= 1e-9 * best.abs(), "{scale}");
            }
        }
    }

    #[test]
    fn empty_and_single() {
        let a = min_cost_assignment(&[], 0).unwrap();
        assert_eq!(a.perm, Vec::<usize>::new());
        assert_eq!(a.cost, 0.0);
        let a = min_cost_assignment(&[-2.5], 1).unwrap();
        assert_eq!(a.perm, vec![0]);
        assert_eq!(a.cost, -2.5);
    }

    #[test]
    fn finds_a_planted_permutation_at_large_k() {
        let k = 300;
        let mut g = Gen(3);
        // A random planted permutation (Fisher-Yates).
        let mut planted: Vec<usize> = (0..k).collect();
        for i in (1..k).rev() {
            planted.swap(i, (g.next() % (i as u64 + 1)) as usize);
        }
        let mut cost: Vec<f64> = (0..k * k).map(|_| 0.1 + g.unit()).collect();
        for (i, &j) in planted.iter().enumerate() {
            cost[i * k + j] = 0.0;
        }
        let a = min_cost_assignment(&cost, k).unwrap();
        assert_eq!(a.perm, planted);
        assert_eq!(a.cost, 0.0);
    }

    #[test]
    fn rejects_bad_input() {
        assert_eq!(
            min_cost_assignment(&[1.0, 2.0, 3.0], 2),
            Err(MetricsError::Shape {
                what: "assignment cost matrix",
                expected: 4,
                got: 3
            })
        );
        assert_eq!(
            min_cost_assignment(&[1.0, f64::NAN, 3.0, 4.0], 2),
            Err(MetricsError::NonFinite {
                what: "assignment cost matrix",
                at: 1
            })
        );
        assert!(min_cost_assignment(&[f64::INFINITY], 1).is_err());
        assert!(min_cost_assignment(&[], usize::MAX).is_err());
    }
}
