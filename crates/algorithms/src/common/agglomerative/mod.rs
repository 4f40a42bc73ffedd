//! Agglomerative (bottom-up) hierarchical clustering on a dissimilarity
//! matrix: every point starts alone and the two closest groups merge until the
//! dendrogram is cut, at a distance or at a number of groups. The linkages are
//! scipy's and scikit-learn's, updated by the Lance–Williams formulas; ties
//! break towards the lowest pair of indices, so the result is deterministic.
//! Used by FL+HC (on the clients' updates) and PACFL (on the principal angles
//! between the clients' data subspaces).

use serde::{Deserialize, Serialize};

use fedcluster_core::params::{dot, norm, sq_dist};

use super::checked::{FieldError, at_least_one, positive};

/// How the distance between two groups follows from the distances between
/// their points.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Linkage {
    /// The closest pair.
    Single,
    /// The farthest pair.
    Complete,
    /// The mean over all pairs (UPGMA; scikit-learn's `average`).
    Average,
    /// The mean of the two merged groups' distances (WPGMA; scipy's
    /// `weighted`, PACFL's public code's `average`).
    Weighted,
    /// Ward's minimum-variance criterion on Euclidean distances:
    /// `sqrt(2 |A| |B| / (|A| + |B|)) ‖c_A − c_B‖`, as scipy and scikit-learn
    /// report it.
    Ward,
}

/// Where the dendrogram is cut.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields, tag = "kind")]
pub enum Cut {
    /// Groups merge while their linkage distance is below `value`
    /// (scikit-learn's `distance_threshold`).
    Distance {
        /// The distance at or above which groups stay apart.
        value: f64,
    },
    /// Groups merge until `value` remain (scikit-learn's `n_clusters`).
    Clusters {
        /// The number of groups.
        value: usize,
    },
}

impl Cut {
    /// Checks the value; errors name `field.value`.
    pub fn validate(&self, field: &str) -> Result<(), FieldError> {
        let field = format!("{field}.value");
        match *self {
            Cut::Distance { value } => positive(&field, value),
            Cut::Clusters { value } => at_least_one(&field, value),
        }
    }
}

/// The distance between two points.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Metric {
    /// `‖a − b‖₂`.
    #[default]
    Euclidean,
    /// `‖a − b‖₁`.
    Manhattan,
    /// `1 − ⟨a, b⟩ / (‖a‖ ‖b‖)` (a zero vector is at distance 1 from all).
    Cosine,
}

/// The symmetric `n x n` row-major matrix of `metric` between `points`, in
/// `f64`.
pub fn pairwise(points: &[&[f32]], metric: Metric) -> Vec<f64> {
    let n = points.len();
    let norms: Vec<f64> = match metric {
        Metric::Cosine => points.iter().map(|p| norm(p)).collect(),
        _ => Vec::new(),
    };
    let mut dist = vec![0.0; n * n];
    for i in 0..n {
        for j in i + 1..n {
            let (a, b) = (points[i], points[j]);
            let d = match metric {
                Metric::Euclidean => sq_dist(a, b).sqrt(),
                Metric::Manhattan => a
                    .iter()
                    .zip(b)
                    .map(|(x, y)| (f64::from(*x) - f64::from(*y)).abs())
                    .sum(),
                Metric::Cosine => {
                    let scale = norms[i] * norms[j];
                    if scale > 0.0 {
                        1.0 - dot(a, b) / scale
                    } else {
                        1.0
                    }
                }
            };
            dist[i * n + j] = d;
            dist[j * n + i] = d;
        }
    }
    dist
}

/// Clusters points `0..n` from their symmetric `n x n` row-major
/// dissimilarities `dist` (finite; the diagonal is ignored), merging the two
/// closest groups under `linkage` until `cut`. Returns each point's group,
/// numbered in order of the groups' smallest members (point 0 is in group 0).
/// A cut at more groups than points leaves every point alone.
pub fn agglomerate(dist: &[f64], n: usize, linkage: Linkage, cut: Cut) -> Vec<usize> {
    assert_eq!(dist.len(), n * n, "a square dissimilarity matrix");
    let mut d = dist.to_vec();
    let mut size = vec![1usize; n];
    let mut alive = vec![true; n];
    // Each point's group is named by its representative (the smallest index).
    let mut owner: Vec<usize> = (0..n).collect();
    // nearest[i]: the closest alive j > i and its distance (lowest j on ties).
    let mut nearest: Vec<Option<(usize, f64)>> =
        (0..n).map(|i| closest_after(&d, n, &alive, i)).collect();
    let mut groups = n;
    loop {
        if let Cut::Clusters { value } = cut
            && groups <= value
        {
            break;
        }
        // The closest pair: lowest distance, then lowest row.
        let Some((a, (b, dab))) = (0..n)
            .filter(|&i| alive[i])
            .filter_map(|i| nearest[i].map(|nb| (i, nb)))
            .min_by(|x, y| x.1.1.total_cmp(&y.1.1).then(x.0.cmp(&y.0)))
        else {
            break;
        };
        if let Cut::Distance { value } = cut
            && dab >= value
        {
            break;
        }
        for k in (0..n).filter(|&k| alive[k] && k != a && k != b) {
            let (dka, dkb) = (d[k * n + a], d[k * n + b]);
            let merged = lance_williams(linkage, dka, dkb, dab, size[a], size[b], size[k]);
            d[k * n + a] = merged;
            d[a * n + k] = merged;
        }
        alive[b] = false;
        size[a] += size[b];
        for o in owner.iter_mut().filter(|o| **o == b) {
            *o = a;
        }
        groups -= 1;
        for i in (0..n).filter(|&i| alive[i]) {
            let stale = match nearest[i] {
                Some((j, _)) => i == a || j == a || j == b,
                None => i == a,
            };
            if stale {
                nearest[i] = closest_after(&d, n, &alive, i);
            } else if i < a {
                let dia = d[i * n + a];
                if nearest[i].is_none_or(|(j, dij)| dia < dij || (dia == dij && a < j)) {
                    nearest[i] = Some((a, dia));
                }
            }
        }
    }
    let mut label = vec![usize::MAX; n];
    let mut next = 0;
    (0..n)
        .map(|i| {
            let r = owner[i];
            if label[r] == usize::MAX {
                label[r] = next;
                next += 1;
            }
            label[r]
        })
        .collect()
}

/// The closest alive `j > i` to `i`, lowest `j` on ties.
fn closest_after(d: &[f64], n: usize, alive: &[bool], i: usize) -> Option<(usize, f64)> {
    (i + 1..n)
        .filter(|&j| alive[j])
        .map(|j| (j, d[i * n + j]))
        .min_by(|x, y| x.1.total_cmp(&y.1).then(x.0.cmp(&y.0)))
}

/// The distance from group `k` to the union of groups `a` and `b`.
fn lance_williams(
    linkage: Linkage,
    dka: f64,
    dkb: f64,
    dab: f64,
    na: usize,
    nb: usize,
    nk: usize,
) -> f64 {
    let (na, nb, nk) = (na as f64, nb as f64, nk as f64);
    match linkage {
        Linkage::Single => dka.min(dkb),
        Linkage::Complete => dka.max(dkb),
        Linkage::Average => (na * dka + nb * dkb) / (na + nb),
        Linkage::Weighted => 0.5 * (dka + dkb),
        Linkage::Ward => {
            let t = na + nb + nk;
            (((na + nk) * dka * dka + (nb + nk) * dkb * dkb - nk * dab * dab) / t)
                .max(0.0)
                .sqrt()
        }
    }
}

#[cfg(test)]
mod tests;
