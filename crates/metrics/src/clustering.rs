//! Clustering-quality metrics that compare learned models and client assignments
//! with the ground truth, up to a relabelling of the learned clusters.
//!
//! - [`param_error`]: the IFCA paper's `dist = (1/k) Σ_j ‖θ_{π(j)} − θ*_j‖`
//!   minimised over permutations `π` (Ghosh et al., Section VI-A).
//! - [`per_client_param_error`]: mean distance between each client's model and
//!   its cluster's true parameters (for baselines without a cluster labelling).
//! - [`misclustering`]: fraction of clients misassigned under the best
//!   one-to-one relabelling of the learned models.
//! - [`adjusted_rand_index`]: Hubert and Arabie's chance-corrected Rand index.
//!
//! Functions return `None` rather than panicking on inputs that do not fit
//! together. A model with a NaN or infinite entry has infinite distance to every
//! true vector, so the parameter errors become `+∞` instead of NaN.

use std::collections::HashMap;

use fedcluster_core::params::dist;

use crate::permutation::min_cost_assignment;

/// Distance with NaN mapped to `+∞` (a diverged model is infinitely wrong).
fn finite_or_inf(d: f64) -> f64 {
    if d.is_nan() { f64::INFINITY } else { d }
}

/// The IFCA paper's parameter error: `min_π (1/k) Σ_j ‖θ_{π(j)} − θ*_j‖₂` over
/// the permutations `π` of the `k` models, computed exactly with the assignment
/// solver and accumulated in `f64`.
///
/// `None` when `k = 0`, when the number of models is not `k`, or when the vectors
/// do not all have the same length. `+∞` when a model is not finite.
pub fn param_error(models: &[&[f32]], truth: &[Vec<f32>]) -> Option<f64> {
    let k = truth.len();
    if k == 0 || models.len() != k {
        return None;
    }
    let dim = truth[0].len();
    if truth.iter().any(|t| t.len() != dim) || models.iter().any(|m| m.len() != dim) {
        return None;
    }
    // Row j: true cluster j; column i: model i.
    let mut cost = Vec::with_capacity(k * k);
    for t in truth {
        for m in models {
            cost.push(finite_or_inf(dist(m, t)));
        }
    }
    if cost.iter().any(|c| c.is_infinite()) {
        // Every permutation uses every model, so the minimum is infinite too.
        return Some(f64::INFINITY);
    }
    let best = min_cost_assignment(&cost, k).ok()?;
    Some(best.cost / k as f64)
}

/// Mean over clients of `‖θ_{assignment[i]} − θ*_{labels[i]}‖₂`: how far the model
/// each client uses is from its true cluster's parameters, with no relabelling
/// (for a global model or per-client local models).
///
/// `None` when there are no clients, `assignment` and `labels` differ in length,
/// any assignment is `None` or out of range, any label is out of range, or the
/// vectors do not all have the same length. `+∞` when a used model is not finite.
pub fn per_client_param_error(
    models: &[&[f32]],
    assignment: &[Option<usize>],
    labels: &[usize],
    truth: &[Vec<f32>],
) -> Option<f64> {
    if labels.is_empty() || assignment.len() != labels.len() {
        return None;
    }
    let mut total = 0.0f64;
    for (a, &l) in assignment.iter().zip(labels) {
        let model = models.get((*a)?)?;
        let target = truth.get(l)?;
        if model.len() != target.len() {
            return None;
        }
        total += finite_or_inf(dist(model, target));
    }
    Some(total / labels.len() as f64)
}

/// SR-FCA's misclustering (Definition 3.1), for algorithms that find their own
/// number of clusters: each found cluster is labelled by the true cluster of the
/// strict majority (> 1/2) of its clients; a client is misclustered when it is
/// unassigned, in a cluster without such a majority, or of another true cluster
/// than its cluster's label. Several found clusters may share a label (a split
/// cluster is not penalised). `None` when there are no clients or the lengths
/// differ.
pub fn majority_misclustering(assignment: &[Option<usize>], labels: &[usize]) -> Option<f64> {
    let n = labels.len();
    if n == 0 || assignment.len() != n {
        return None;
    }
    let mut counts: HashMap<usize, HashMap<usize, usize>> = HashMap::new();
    for (a, &l) in assignment.iter().zip(labels) {
        if let Some(c) = a {
            *counts.entry(*c).or_default().entry(l).or_default() += 1;
        }
    }
    let correct: usize = counts
        .values()
        .filter_map(|by_label| {
            let size: usize = by_label.values().sum();
            by_label.values().copied().find(|&k| 2 * k > size)
        })
        .sum();
    Some((n - correct) as f64 / n as f64)
}

/// Fraction of clients whose model differs from their true cluster under the
/// best one-to-one relabelling of model indices to cluster indices.
///
/// The relabelling maximises the number of agreeing clients (an assignment
/// problem on the models × clusters confusion matrix, padded to square when
/// `num_models != clusters`); clients of models left unmatched, and unassigned
/// (`None`) clients, count as misclustered. `None` when there are no clients,
/// lengths differ, or a model index or label is out of range.
pub fn misclustering(
    assignment: &[Option<usize>],
    num_models: usize,
    labels: &[usize],
    clusters: usize,
) -> Option<f64> {
    let n = labels.len();
    if n == 0 || assignment.len() != n {
        return None;
    }
    if labels.iter().any(|l| *l >= clusters)
        || assignment.iter().flatten().any(|m| *m >= num_models)
    {
        return None;
    }
    // Only models and clusters that occur can gain agreements; renumber them
    // densely so that the matrix is at most clients × clients, whatever
    // `num_models` and `clusters` are. Padding rows and columns are zero.
    let mut model_ids: HashMap<usize, usize> = HashMap::new();
    let mut cluster_ids: HashMap<usize, usize> = HashMap::new();
    let mut pairs = Vec::with_capacity(n);
    for (a, &l) in assignment.iter().zip(labels) {
        let next = cluster_ids.len();
        let c = *cluster_ids.entry(l).or_insert(next);
        if let Some(m) = a {
            let next = model_ids.len();
            pairs.push((*model_ids.entry(*m).or_insert(next), c));
        }
    }
    let size = model_ids.len().max(cluster_ids.len());
    let mut cost = vec![0.0f64; size * size];
    for (m, c) in pairs {
        cost[m * size + c] -= 1.0;
    }
    let best = min_cost_assignment(&cost, size).ok()?;
    let agreeing = -best.cost;
    Some((n as f64 - agreeing) / n as f64)
}

/// Adjusted Rand index of two partitions of the same items (Hubert and Arabie
/// 1985): the Rand index corrected for chance, 1 for identical partitions (up to
/// renaming), about 0 for independent ones, negative below chance. Label values
/// are arbitrary.
///
/// Computed from the pair-confusion counts in exact integer arithmetic:
/// `ARI = 2(tn·tp − fn·fp) / ((tp+fn)(fn+tn) + (tp+fp)(fp+tn))`, with 1 when
/// `fn = fp = 0` (identical partitions, including fewer than two items). NaN
/// when the slices differ in length.
pub fn adjusted_rand_index(a: &[usize], b: &[usize]) -> f64 {
    if a.len() != b.len() {
        return f64::NAN;
    }
    let mut joint: HashMap<(usize, usize), u64> = HashMap::new();
    let mut rows: HashMap<usize, u64> = HashMap::new();
    let mut cols: HashMap<usize, u64> = HashMap::new();
    for (&x, &y) in a.iter().zip(b) {
        *joint.entry((x, y)).or_default() += 1;
        *rows.entry(x).or_default() += 1;
        *cols.entry(y).or_default() += 1;
    }
    let pairs = |c: &u64| i128::from(*c) * (i128::from(*c) - 1) / 2;
    let total = pairs(&(a.len() as u64));
    let both: i128 = joint.values().map(pairs).sum();
    let in_a: i128 = rows.values().map(pairs).sum();
    let in_b: i128 = cols.values().map(pairs).sum();
    let tp = both;
    let fn_ = in_a - both; // together in `a`, apart in `b`
    let fp = in_b - both; // apart in `a`, together in `b`
    let tn = total - in_a - in_b + both;
    if fn_ == 0 && fp == 0 {
        return 1.0;
    }
    let exact = || {
        let num = tn.checked_mul(tp)?.checked_sub(fn_.checked_mul(fp)?)?;
        let den = (tp + fn_)
            .checked_mul(fn_ + tn)?
            .checked_add((tp + fp).checked_mul(fp + tn)?)?;
        Some(2.0 * num as f64 / den as f64)
    };
    exact().unwrap_or_else(|| {
        let [tp, fn_, fp, tn] = [tp, fn_, fp, tn].map(|v| v as f64);
        2.0 * (tn * tp - fn_ * fp) / ((tp + fn_) * (fn_ + tn) + (tp + fp) * (fp + tn))
    })
}

#[cfg(test)]
mod tests;
