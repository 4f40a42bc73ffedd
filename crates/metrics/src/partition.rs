//! How closely a found clustering agrees with the true one as a partition of
//! the clients, whatever the labels are called and however many clusters
//! each has: the adjusted Rand index ([`crate::clustering::adjusted_rand_index`])
//! and the normalised mutual information ([`normalized_mutual_info`]), with
//! unassigned clients each in a cluster of its own ([`with_singletons`]).
//!
//! Both are computed in a fixed order (no hash-map iteration), so the same
//! labels give the same bits on every run.

use std::collections::BTreeMap;

use crate::clustering::adjusted_rand_index;

/// The agreement of a found clustering with the truth.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Agreement {
    /// Adjusted Rand index (Hubert and Arabie 1985): 1 for the same
    /// partition, about 0 for an independent one, negative below chance.
    pub ari: f64,
    /// Normalised mutual information, arithmetic-mean normalisation
    /// (scikit-learn's default): 1 for the same partition, 0 for independent.
    pub nmi: f64,
}

/// [`Agreement`] of `assignment` (each client's found cluster, `None` where
/// it has none) with the true `labels`; unassigned clients count as clusters
/// of one ([`with_singletons`]). `None` when there are no clients or the
/// lengths differ.
pub fn agreement(assignment: &[Option<usize>], labels: &[usize]) -> Option<Agreement> {
    if labels.is_empty() || assignment.len() != labels.len() {
        return None;
    }
    let found = with_singletons(assignment);
    Some(Agreement {
        ari: adjusted_rand_index(&found, labels),
        nmi: normalized_mutual_info(&found, labels),
    })
}

/// The found clusters as labels `0..`, in order of first appearance, with
/// each unassigned (`None`) client given a label of its own: a client without
/// a cluster is with no one (it never counts as agreeing with the truth that
/// it belongs with someone).
pub fn with_singletons(assignment: &[Option<usize>]) -> Vec<usize> {
    let mut dense: BTreeMap<usize, usize> = BTreeMap::new();
    for c in assignment.iter().flatten() {
        let next = dense.len();
        dense.entry(*c).or_insert(next);
    }
    let mut alone = dense.len();
    assignment
        .iter()
        .map(|a| match a {
            Some(c) => dense[c],
            None => {
                alone += 1;
                alone - 1
            }
        })
        .collect()
}

/// Normalised mutual information of two partitions of the same items,
/// `NMI = I(a; b) / ((H(a) + H(b)) / 2)` with natural logarithms (the
/// arithmetic-mean normalisation, scikit-learn's
/// `normalized_mutual_info_score` default). As scikit-learn: 1 when both put
/// every item in one cluster (or there are no items), 0 when the mutual
/// information is 0 (clipped at 0 against rounding). Label values are
/// arbitrary. NaN when the slices differ in length.
pub fn normalized_mutual_info(a: &[usize], b: &[usize]) -> f64 {
    if a.len() != b.len() {
        return f64::NAN;
    }
    let mut joint: BTreeMap<(usize, usize), u64> = BTreeMap::new();
    let mut rows: BTreeMap<usize, u64> = BTreeMap::new();
    let mut cols: BTreeMap<usize, u64> = BTreeMap::new();
    for (&x, &y) in a.iter().zip(b) {
        *joint.entry((x, y)).or_default() += 1;
        *rows.entry(x).or_default() += 1;
        *cols.entry(y).or_default() += 1;
    }
    if rows.len() <= 1 && cols.len() <= 1 {
        return 1.0;
    }
    let count = a.len() as u128;
    let n = a.len() as f64;
    // Each cell's ratio `n·n_xy / (n_x·n_y)` from exact integer products, so
    // that a cell as chance predicts it adds exactly 0 (one cluster on either
    // side gives I = 0, not a rounding residue).
    let mi: f64 = joint
        .iter()
        .map(|(&(x, y), &nxy)| {
            let ratio = (count * u128::from(nxy)) as f64
                / (u128::from(rows[&x]) * u128::from(cols[&y])) as f64;
            nxy as f64 / n * ratio.ln()
        })
        .sum::<f64>()
        .max(0.0);
    if mi == 0.0 {
        return 0.0;
    }
    let entropy = |counts: &BTreeMap<usize, u64>| -> f64 {
        counts
            .values()
            .map(|&c| {
                let p = c as f64 / n;
                -p * p.ln()
            })
            .sum()
    };
    mi / ((entropy(&rows) + entropy(&cols)) / 2.0)
}

#[cfg(test)]
mod tests;
