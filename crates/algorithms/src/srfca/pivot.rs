//! How a threshold graph is cut into clusters: its connected components (the
//! paper's Algorithms 1 and 4) or a correlation clustering by the pivot
//! algorithm (Ailon, Charikar, Newman 2008, "KwikCluster"), as the paper's
//! public code does (harshv834/sr-fca, `src/utils.py::correlation_clustering`).

use fedcluster_core::Rng;
use rand::Rng as _;

use crate::common::graph::connected_components;

/// A way to cut the graph on `0..n` with an edge wherever `linked(i, j)`.
pub enum Cut<'r> {
    /// Connected components.
    Components,
    /// The pivot algorithm, its pivots drawn from this stream.
    Pivot(&'r mut Rng),
}

impl Cut<'_> {
    /// The clusters, each in increasing order, ordered by their smallest member.
    pub fn groups(
        &mut self,
        n: usize,
        linked: impl FnMut(usize, usize) -> bool,
    ) -> Vec<Vec<usize>> {
        match self {
            Cut::Components => connected_components(n, linked),
            Cut::Pivot(rng) => pivot_clusters(n, linked, rng),
        }
    }
}

/// Correlation clustering of the signed complete graph on `0..n` (edge `+`
/// where `linked(i, j)`, `−` elsewhere) by the pivot algorithm: a pivot drawn
/// uniformly from the clients not yet clustered forms a cluster with those of
/// them it is linked to, until none is left. Unlike components, two groups
/// joined by one stray edge stay apart unless the pivot is an end of it.
/// `linked` is asked with `i < j`.
pub fn pivot_clusters(
    n: usize,
    mut linked: impl FnMut(usize, usize) -> bool,
    rng: &mut Rng,
) -> Vec<Vec<usize>> {
    let mut left: Vec<usize> = (0..n).collect();
    let mut clusters = Vec::new();
    while !left.is_empty() {
        let pivot = left.swap_remove(rng.random_range(0..left.len()));
        let mut cluster = vec![pivot];
        left.retain(|&j| {
            let edge = linked(pivot.min(j), pivot.max(j));
            if edge {
                cluster.push(j);
            }
            !edge
        });
        left.sort_unstable();
        cluster.sort_unstable();
        clusters.push(cluster);
    }
    clusters.sort_by_key(|c| c[0]);
    clusters
}

#[cfg(test)]
mod tests {
    use super::*;
    use fedcluster_core::{Purpose, stream};

    /// Two cliques {0..4} and {5..9} with one stray edge 4-5.
    fn two_cliques_and_a_bridge(i: usize, j: usize) -> bool {
        (i < 5) == (j < 5) || (i, j) == (4, 5)
    }

    #[test]
    fn components_merge_bridged_cliques_and_pivots_mostly_split_them() {
        let all: Vec<usize> = (0..10).collect();
        assert_eq!(
            Cut::Components.groups(10, two_cliques_and_a_bridge),
            vec![all]
        );
        // Only a pivot at 4 or 5 (drawn first) can cross the bridge: the two
        // cliques come back exactly unless that happens.
        let (mut exact, mut runs) = (0, 0);
        for seed in 0..50 {
            let mut rng = stream(seed, Purpose::Clustering, 0, 0);
            let c = Cut::Pivot(&mut rng).groups(10, two_cliques_and_a_bridge);
            let covered: usize = c.iter().map(Vec::len).sum();
            assert_eq!(covered, 10, "every client in one cluster: {c:?}");
            runs += 1;
            if c == vec![(0..5).collect::<Vec<_>>(), (5..10).collect()] {
                exact += 1;
            }
        }
        // 4 or 5 is the first pivot with probability 1/5: about 40 of 50.
        assert!(exact >= 30, "{exact} of {runs} runs found the two cliques");
    }

    #[test]
    fn pivots_are_deterministic_from_the_stream() {
        let draw = |seed| {
            let mut rng = stream(seed, Purpose::Clustering, 3, 0);
            pivot_clusters(10, |i, j| (i + j) % 3 == 0, &mut rng)
        };
        assert_eq!(draw(7), draw(7));
        // A cluster is its pivot and the pivot's neighbours: each holds a
        // member linked to all the others.
        for c in draw(7) {
            assert!(
                c.iter()
                    .any(|&p| c.iter().all(|&j| j == p || (p + j) % 3 == 0))
            );
        }
    }
}
