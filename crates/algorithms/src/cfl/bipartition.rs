//! The bi-partition of a cluster by the cosine similarity of its clients'
//! updates: complete-linkage agglomerative clustering down to two groups, which
//! maximises the smallest within-group similarity the way CFL's Algorithm 1
//! ("optimal bipartition") does.

/// Splits clients `0..n` in two by complete linkage on the similarity matrix
/// `sim` (`n x n`, row-major): repeatedly join the two groups whose least
/// similar pair is the most similar, until two groups remain. Each group is
/// listed in increasing order, the group of client 0 first. Needs `n >= 2`.
pub fn optimal_bipartition(sim: &[f64], n: usize) -> (Vec<usize>, Vec<usize>) {
    assert!(n >= 2, "a bipartition needs two clients");
    let mut groups: Vec<Vec<usize>> = (0..n).map(|i| vec![i]).collect();
    // link[a][b]: the smallest similarity between groups a and b.
    let mut link: Vec<Vec<f64>> = (0..n)
        .map(|i| (0..n).map(|j| sim[i * n + j]).collect())
        .collect();
    let mut alive: Vec<bool> = vec![true; n];
    for _ in 0..n - 2 {
        let mut best: Option<(usize, usize, f64)> = None;
        for a in (0..n).filter(|&a| alive[a]) {
            for b in (a + 1..n).filter(|&b| alive[b]) {
                if best.is_none_or(|(_, _, s)| link[a][b] > s) {
                    best = Some((a, b, link[a][b]));
                }
            }
        }
        let (a, b, _) = best.expect("at least two groups alive");
        let moved = std::mem::take(&mut groups[b]);
        groups[a].extend(moved);
        alive[b] = false;
        for c in (0..n).filter(|&c| alive[c] && c != a) {
            let l = link[a][c].min(link[b][c]);
            link[a][c] = l;
            link[c][a] = l;
        }
    }
    let mut two: Vec<Vec<usize>> = groups
        .into_iter()
        .zip(alive)
        .filter(|(_, a)| *a)
        .map(|(g, _)| g)
        .collect();
    for g in &mut two {
        g.sort_unstable();
    }
    two.sort();
    let second = two.pop().expect("two groups");
    let first = two.pop().expect("two groups");
    (first, second)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn opposite_directions_are_split_apart() {
        // Clients 0, 2, 3 point one way, 1 and 4 the other.
        let dirs = [1.0f64, -1.0, 0.9, 0.8, -0.7];
        let n = dirs.len();
        let sim: Vec<f64> = (0..n)
            .flat_map(|i| (0..n).map(move |j| if dirs[i] * dirs[j] > 0.0 { 0.9 } else { -0.9 }))
            .collect();
        assert_eq!(optimal_bipartition(&sim, n), (vec![0, 2, 3], vec![1, 4]));
        assert_eq!(
            optimal_bipartition(&[1.0, 0.2, 0.2, 1.0], 2),
            (vec![0], vec![1])
        );
    }
}
