//! Connected components of a threshold graph (union-find with path halving):
//! the grouping step of the two-phase method (anchors at distance < Δ/2) and of
//! SR-FCA's ONE_SHOT and MERGE (models at distance <= λ).

/// The connected components of the graph on `0..n` with an edge `(i, j)`
/// wherever `linked(i, j)` (asked once per pair `i < j`), each listed in
/// increasing order, components ordered by their smallest member.
pub fn connected_components(
    n: usize,
    mut linked: impl FnMut(usize, usize) -> bool,
) -> Vec<Vec<usize>> {
    let mut parent: Vec<usize> = (0..n).collect();
    fn root(parent: &mut [usize], mut i: usize) -> usize {
        while parent[i] != i {
            parent[i] = parent[parent[i]];
            i = parent[i];
        }
        i
    }
    for i in 0..n {
        for j in i + 1..n {
            if linked(i, j) {
                let (a, b) = (root(&mut parent, i), root(&mut parent, j));
                parent[a.max(b)] = a.min(b);
            }
        }
    }
    let mut components: Vec<Vec<usize>> = Vec::new();
    let mut slot = vec![usize::MAX; n];
    for i in 0..n {
        let r = root(&mut parent, i);
        if slot[r] == usize::MAX {
            slot[r] = components.len();
            components.push(Vec::new());
        }
        components[slot[r]].push(i);
    }
    components
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chains_join_and_isolated_nodes_stay_alone() {
        // 0-2, 2-4 (a chain), 1-3; 5 alone.
        let edges = [(0, 2), (2, 4), (1, 3)];
        let c = connected_components(6, |i, j| edges.contains(&(i, j)));
        assert_eq!(c, vec![vec![0, 2, 4], vec![1, 3], vec![5]]);
        assert!(connected_components(0, |_, _| true).is_empty());
    }
}
