//! The server's clustering steps, on distances it already holds: the threshold
//! `λ`, ONE_SHOT's threshold graph, RECLUSTER and MERGE (Algorithms 1, 2, 4).

use fedcluster_core::model::argmin_f64;

use super::config::Threshold;
use super::pivot::Cut;

/// `λ`: the configured value, or the configured quantile of the `m (m − 1) / 2`
/// distances between distinct clients in the symmetric `m x m` matrix `dist`.
pub fn resolve_threshold(threshold: Threshold, dist: &[f64], m: usize) -> f64 {
    match threshold {
        Threshold::Absolute { value } => value,
        Threshold::Quantile { value } => {
            let mut d: Vec<f64> = (0..m)
                .flat_map(|i| (i + 1..m).map(move |j| (i, j)))
                .map(|(i, j)| dist[i * m + j])
                .collect();
            if d.is_empty() {
                return 0.0;
            }
            d.sort_by(f64::total_cmp);
            d[((value * (d.len() - 1) as f64).round() as usize).min(d.len() - 1)]
        }
    }
}

/// ONE_SHOT (Algorithm 1): the connected components of the graph linking clients
/// at distance `<= λ`, keeping those of at least `t` clients. Clients outside
/// them are unassigned until the first RECLUSTER.
pub fn one_shot(dist: &[f64], m: usize, lambda: f64, t: usize) -> Vec<Vec<usize>> {
    one_shot_with(Cut::Components, dist, m, lambda, t)
}

/// [`one_shot`] with the graph cut by `cut` (components, or the pivot
/// algorithm's correlation clustering).
pub fn one_shot_with(
    mut cut: Cut<'_>,
    dist: &[f64],
    m: usize,
    lambda: f64,
    t: usize,
) -> Vec<Vec<usize>> {
    cut.groups(m, |i, j| dist[i * m + j] <= lambda)
        .into_iter()
        .filter(|c| c.len() >= t)
        .collect()
}

/// RECLUSTER (Algorithm 2): every client joins the cluster at the smallest
/// `distance(client, cluster)`; `None` when there is no cluster.
pub fn recluster(m: usize, k: usize, distance: impl Fn(usize, usize) -> f64) -> Vec<Option<usize>> {
    (0..m)
        .map(|i| {
            let d: Vec<f64> = (0..k).map(|c| distance(i, c)).collect();
            (k > 0).then(|| argmin_f64(&d))
        })
        .collect()
}

/// MERGE (Algorithm 4): the non-empty clusters (by their `members`) are linked
/// at `distance(c, c') <= λ`; each connected component becomes one cluster,
/// listed as the old clusters it merges, kept when it holds at least `t`
/// clients (the paper's "components of size >= t", counted in clients).
pub fn merge(
    members: &[Vec<usize>],
    lambda: f64,
    t: usize,
    distance: impl Fn(usize, usize) -> f64,
) -> Vec<Vec<usize>> {
    merge_with(Cut::Components, members, lambda, t, distance)
}

/// [`merge`] with the graph of clusters cut by `cut`.
pub fn merge_with(
    mut cut: Cut<'_>,
    members: &[Vec<usize>],
    lambda: f64,
    t: usize,
    distance: impl Fn(usize, usize) -> f64,
) -> Vec<Vec<usize>> {
    let live: Vec<usize> = (0..members.len())
        .filter(|&c| !members[c].is_empty())
        .collect();
    cut.groups(live.len(), |a, b| {
        let (c, d) = (live[a], live[b]);
        distance(c, d) <= lambda
    })
    .into_iter()
    .map(|group| group.into_iter().map(|a| live[a]).collect::<Vec<usize>>())
    .filter(|group| group.iter().map(|&c| members[c].len()).sum::<usize>() >= t)
    .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Points on a line: distances `|x_i - x_j|`.
    fn line(xs: &[f64]) -> Vec<f64> {
        xs.iter()
            .flat_map(|a| xs.iter().map(move |b| (a - b).abs()))
            .collect()
    }

    #[test]
    fn quantile_threshold_reads_the_pairwise_distances() {
        let d = line(&[0.0, 1.0, 3.0]); // pairs: 1, 3, 2
        assert_eq!(
            resolve_threshold(Threshold::Quantile { value: 0.5 }, &d, 3),
            2.0
        );
        assert_eq!(
            resolve_threshold(Threshold::Quantile { value: 0.01 }, &d, 3),
            1.0
        );
        assert_eq!(
            resolve_threshold(Threshold::Absolute { value: 7.0 }, &d, 3),
            7.0
        );
    }

    #[test]
    fn one_shot_keeps_components_of_at_least_t_clients() {
        let xs = [0.0, 0.1, 0.2, 5.0, 5.1, 9.0];
        let c = one_shot(&line(&xs), 6, 0.15, 2);
        assert_eq!(c, vec![vec![0, 1, 2], vec![3, 4]]);
    }

    #[test]
    fn recluster_and_merge() {
        let centres = [0.0f64, 0.2, 5.0];
        let xs = [0.05f64, 0.15, 4.9, 5.2, 0.3];
        let a = recluster(5, 3, |i, c| (xs[i] - centres[c]).abs());
        assert_eq!(a, vec![Some(0), Some(1), Some(2), Some(2), Some(1)]);
        let members = vec![vec![0], vec![1, 4], vec![2, 3], vec![]];
        let groups = merge(&members, 0.5, 2, |c, d| (centres[c] - centres[d]).abs());
        assert_eq!(groups, vec![vec![0, 1], vec![2]]);
        // A lone cluster of one client is dropped when t = 2.
        let groups = merge(&[vec![0], vec![1, 2]], 0.1, 2, |_, _| 1.0);
        assert_eq!(groups, vec![vec![1]]);
        assert_eq!(recluster(2, 0, |_, _| 0.0), vec![None, None]);
    }
}
