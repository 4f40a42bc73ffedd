//! Phase 1, step 16: anchors whose estimates lie closer than `Δ/2` share a
//! cluster; each cluster's centre is the mean of its anchors' estimates.

use fedcluster_core::params::dist;

use crate::common::graph::connected_components;

/// The `k` centres and which centre each anchor joined.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Grouping {
    /// `k x d` centres, back to back.
    pub centres: Vec<f32>,
    /// For each anchor, its centre (`None` for an anchor in a dropped group).
    pub member_of: Vec<Option<usize>>,
}

/// Groups the anchors' estimates (`d` values each) by single linkage at distance
/// `< threshold` and returns `k` centres: the means of the `k` largest groups
/// (ties to the group with the lowest anchor index). With fewer than `k` groups
/// the remaining centres are the estimates farthest from the centres chosen so
/// far, so Phase 2 always starts from `k` distinct models where it can.
pub fn group_anchors(estimates: &[f32], d: usize, threshold: f64, k: usize) -> Grouping {
    let h = estimates.len() / d.max(1);
    let row = |i: usize| &estimates[i * d..(i + 1) * d];
    let mut groups = connected_components(h, |i, j| dist(row(i), row(j)) < threshold);
    // Largest first; the stable sort keeps lowest-index-first among equals.
    groups.sort_by_key(|g| std::cmp::Reverse(g.len()));
    let mut centres = Vec::with_capacity(k * d);
    let mut member_of = vec![None; h];
    for (c, members) in groups.iter().take(k).enumerate() {
        let mut mean = vec![0.0f64; d];
        for &i in members {
            member_of[i] = Some(c);
            mean.iter_mut()
                .zip(row(i))
                .for_each(|(m, v)| *m += f64::from(*v));
        }
        centres.extend(mean.iter().map(|m| (m / members.len() as f64) as f32));
    }
    while centres.len() < k * d && h > 0 {
        let farthest = (0..h)
            .max_by(|&a, &b| {
                let gap = |i: usize| {
                    centres
                        .chunks_exact(d)
                        .map(|c| dist(c, row(i)))
                        .fold(f64::INFINITY, f64::min)
                };
                gap(a).total_cmp(&gap(b)).then(b.cmp(&a))
            })
            .expect("at least one anchor");
        centres.extend_from_slice(row(farthest));
    }
    Grouping { centres, member_of }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn close_anchors_share_a_centre() {
        // Anchors 0, 2, 3 near (0, 0); 1 and 4 near (10, 0); 5 alone at (0, 10).
        let est = [
            0.0, 0.0, 10.0, 0.0, 0.2, 0.0, 0.0, 0.4, 10.2, 0.0, 0.0, 10.0,
        ];
        let g = group_anchors(&est, 2, 1.0, 2);
        assert_eq!(
            g.member_of,
            vec![Some(0), Some(1), Some(0), Some(0), Some(1), None]
        );
        let want = [0.2 / 3.0, 0.4 / 3.0, 10.1, 0.0];
        for (c, w) in g.centres.iter().zip(want) {
            assert!((c - w).abs() < 1e-6, "{:?}", g.centres);
        }
    }

    #[test]
    fn too_few_groups_are_filled_with_the_farthest_estimates() {
        let est = [0.0, 0.0, 0.1, 0.0, 3.0, 4.0];
        let g = group_anchors(&est, 2, 10.0, 2);
        assert_eq!(g.member_of, vec![Some(0); 3]);
        assert_eq!(g.centres.len(), 4);
        assert_eq!(&g.centres[2..], &[3.0, 4.0]);
    }
}
