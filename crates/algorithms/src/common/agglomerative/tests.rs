//! Agglomerative clustering against hand-computed dendrograms and against a
//! plain search over every pair at every merge.

use rand::Rng as _;

use fedcluster_core::{Purpose, stream};

use super::*;

/// Points on a line and their distances.
fn line(xs: &[f64]) -> Vec<f64> {
    let n = xs.len();
    (0..n * n)
        .map(|ij| (xs[ij / n] - xs[ij % n]).abs())
        .collect()
}

fn at(value: f64) -> Cut {
    Cut::Distance { value }
}

#[test]
fn single_and_complete_linkage_cut_where_hand_computed() {
    // Gaps 1, 2, 4, 8: single linkage chains 0, 1, 3 below 2.5; complete
    // linkage sees {0, 1} and 3 at 3.
    let d = line(&[0.0, 1.0, 3.0, 7.0, 15.0]);
    assert_eq!(
        agglomerate(&d, 5, Linkage::Single, at(2.5)),
        [0, 0, 0, 1, 2]
    );
    assert_eq!(
        agglomerate(&d, 5, Linkage::Complete, at(2.5)),
        [0, 0, 1, 2, 3]
    );
    assert_eq!(
        agglomerate(&d, 5, Linkage::Complete, at(3.5)),
        [0, 0, 0, 1, 2]
    );
    let two = Cut::Clusters { value: 2 };
    assert_eq!(agglomerate(&d, 5, Linkage::Single, two), [0, 0, 0, 0, 1]);
    // A cut at or above the distance keeps the pair apart (scikit-learn's rule).
    assert_eq!(
        agglomerate(&d, 5, Linkage::Single, at(1.0)),
        [0, 1, 2, 3, 4]
    );
}

#[test]
fn average_and_weighted_linkage_differ_by_group_sizes() {
    // {0, 1, 2} then 10: UPGMA (10 + 9 + 8) / 3 = 9, WPGMA (9.5 + 8) / 2 = 8.75.
    let d = line(&[0.0, 1.0, 2.0, 10.0]);
    assert_eq!(agglomerate(&d, 4, Linkage::Average, at(8.9)), [0, 0, 0, 1]);
    assert_eq!(agglomerate(&d, 4, Linkage::Weighted, at(8.9)), [0, 0, 0, 0]);
    assert_eq!(agglomerate(&d, 4, Linkage::Average, at(9.01)), [0, 0, 0, 0]);
}

#[test]
fn ward_distance_is_the_scaled_distance_of_the_centroids() {
    // {0, 1} against {3}: sqrt(2 · 2 · 1 / 3) · |0.5 − 3| = 2.8868.
    let d = line(&[0.0, 1.0, 3.0]);
    assert_eq!(agglomerate(&d, 3, Linkage::Ward, at(2.88)), [0, 0, 1]);
    assert_eq!(agglomerate(&d, 3, Linkage::Ward, at(2.89)), [0, 0, 0]);
}

#[test]
fn groups_are_numbered_by_their_smallest_member() {
    let d = line(&[5.0, 0.0, 5.1, 0.1, 20.0]);
    let labels = agglomerate(&d, 5, Linkage::Average, Cut::Clusters { value: 3 });
    assert_eq!(labels, [0, 1, 0, 1, 2]);
    assert_eq!(
        agglomerate(&d, 5, Linkage::Ward, Cut::Clusters { value: 9 }),
        [0, 1, 2, 3, 4]
    );
    assert!(agglomerate(&[], 0, Linkage::Single, at(1.0)).is_empty());
}

#[test]
fn pairwise_metrics_match_their_definitions() {
    let (a, b, z) = ([3.0f32, 0.0], [0.0f32, 4.0], [0.0f32, 0.0]);
    let pts: Vec<&[f32]> = vec![&a, &b, &z];
    assert_eq!(pairwise(&pts, Metric::Euclidean)[1], 5.0);
    assert_eq!(pairwise(&pts, Metric::Manhattan)[1], 7.0);
    let cos = pairwise(&pts, Metric::Cosine);
    assert_eq!((cos[1], cos[2], cos[0]), (1.0, 1.0, 0.0));
    assert_eq!(cos[3], cos[1], "symmetric");
}

/// The textbook algorithm: at every merge, search all pairs of groups.
fn plain(dist: &[f64], n: usize, linkage: Linkage, cut: Cut) -> Vec<usize> {
    let mut d = dist.to_vec();
    let mut members: Vec<Vec<usize>> = (0..n).map(|i| vec![i]).collect();
    loop {
        let alive: Vec<usize> = (0..n).filter(|&i| !members[i].is_empty()).collect();
        if matches!(cut, Cut::Clusters { value } if alive.len() <= value) {
            break;
        }
        let mut best: Option<(usize, usize, f64)> = None;
        for (x, &a) in alive.iter().enumerate() {
            for &b in &alive[x + 1..] {
                if best.is_none_or(|(_, _, v)| d[a * n + b] < v) {
                    best = Some((a, b, d[a * n + b]));
                }
            }
        }
        let Some((a, b, dab)) = best else { break };
        if matches!(cut, Cut::Distance { value } if dab >= value) {
            break;
        }
        for &k in alive.iter().filter(|&&k| k != a && k != b) {
            let (na, nb, nk) = (members[a].len(), members[b].len(), members[k].len());
            let v = lance_williams(linkage, d[k * n + a], d[k * n + b], dab, na, nb, nk);
            d[k * n + a] = v;
            d[a * n + k] = v;
        }
        let moved = std::mem::take(&mut members[b]);
        members[a].extend(moved);
    }
    let mut labels = vec![0; n];
    let mut groups: Vec<&Vec<usize>> = members.iter().filter(|g| !g.is_empty()).collect();
    groups.sort_by_key(|g| *g.iter().min().unwrap());
    for (label, g) in groups.iter().enumerate() {
        for &i in *g {
            labels[i] = label;
        }
    }
    labels
}

#[test]
fn the_nearest_neighbour_cache_merges_as_a_search_over_all_pairs() {
    let mut rng = stream(5, Purpose::Clustering, 0, 0);
    for trial in 0..12 {
        let n = 5 + trial * 3;
        let points: Vec<Vec<f32>> = (0..n)
            .map(|i| {
                let centre = (i % 3) as f32 * 4.0;
                (0..3).map(|_| centre + rng.random::<f32>() * 3.0).collect()
            })
            .collect();
        let refs: Vec<&[f32]> = points.iter().map(|p| p.as_slice()).collect();
        let d = pairwise(&refs, Metric::Euclidean);
        let linkages = [
            Linkage::Single,
            Linkage::Complete,
            Linkage::Average,
            Linkage::Weighted,
            Linkage::Ward,
        ];
        for linkage in linkages {
            for cut in [Cut::Clusters { value: 3 }, at(2.5), at(6.0)] {
                assert_eq!(
                    agglomerate(&d, n, linkage, cut),
                    plain(&d, n, linkage, cut),
                    "{linkage:?}, {cut:?}, {n} points"
                );
            }
        }
    }
}

#[test]
fn a_bad_cut_names_its_field() {
    let err = Cut::Distance { value: 0.0 }.validate("cut").unwrap_err();
    assert_eq!(err.field, "cut.value");
    assert!(Cut::Clusters { value: 0 }.validate("cut").is_err());
    assert!(Cut::Clusters { value: 2 }.validate("cut").is_ok());
}
