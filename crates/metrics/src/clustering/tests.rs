//! Tests of the clustering metrics on cases with known answers.

use super::*;

fn refs(v: &[Vec<f32>]) -> Vec<&[f32]> {
    v.iter().map(|m| m.as_slice()).collect()
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-12
}

#[test]
fn param_error_is_zero_for_permuted_truth() {
    let truth = vec![vec![0.0, 0.0], vec![3.0, 4.0], vec![-1.0, 2.0]];
    let models = vec![truth[2].clone(), truth[0].clone(), truth[1].clone()];
    assert_eq!(param_error(&refs(&models), &truth), Some(0.0));
}

#[test]
fn param_error_averages_matched_distances() {
    let truth = vec![vec![0.0, 0.0], vec![10.0, 0.0]];
    // Model 0 is 1 away from truth 1, model 1 is 3 away from truth 0.
    let models = vec![vec![10.0, 1.0], vec![0.0, 3.0]];
    assert_eq!(param_error(&refs(&models), &truth), Some(2.0));
}

#[test]
fn param_error_uses_the_optimal_not_the_greedy_matching() {
    // Greedy on the closest pair (model 0 -> truth 0, distance 1) forces
    // model 1 -> truth 1 (distance 13): mean 7. The swap costs 10 + 2: mean 6.
    let truth = vec![vec![0.0], vec![11.0]];
    let models = vec![vec![1.0], vec![-2.0]];
    assert_eq!(param_error(&refs(&models), &truth), Some(6.0));
}

#[test]
fn param_error_matches_brute_force_over_permutations() {
    let truth: Vec<Vec<f32>> = (0..4).map(|j| vec![j as f32, (j * j) as f32]).collect();
    let models: Vec<Vec<f32>> = vec![
        vec![2.5, 3.0],
        vec![0.2, -0.1],
        vec![3.1, 8.0],
        vec![1.0, 1.5],
    ];
    let mut best = f64::INFINITY;
    let perms = [
        [0, 1, 2, 3],
        [0, 1, 3, 2],
        [0, 2, 1, 3],
        [0, 2, 3, 1],
        [0, 3, 1, 2],
        [0, 3, 2, 1],
    ];
    // All 24 permutations: rotate each of the 6 above over the first slot.
    for p in perms {
        for r in 0..4 {
            let q: Vec<usize> = p.iter().map(|i| (i + r) % 4).collect();
            let total: f64 = q
                .iter()
                .enumerate()
                .map(|(j, &i)| dist(&models[i], &truth[j]))
                .sum();
            best = best.min(total / 4.0);
        }
    }
    let got = param_error(&refs(&models), &truth).unwrap();
    assert!((got - best).abs() < 1e-12, "{got} vs {best}");
}

#[test]
fn param_error_rejects_mismatched_input() {
    let truth = vec![vec![0.0, 0.0], vec![1.0, 1.0]];
    assert_eq!(param_error(&[], &[]), None);
    assert_eq!(param_error(&refs(&truth[..1]), &truth), None);
    let short = vec![vec![0.0], vec![1.0]];
    assert_eq!(param_error(&refs(&short), &truth), None);
    let diverged = vec![vec![f32::NAN, 0.0], vec![1.0, 1.0]];
    assert_eq!(param_error(&refs(&diverged), &truth), Some(f64::INFINITY));
}

#[test]
fn per_client_param_error_uses_each_clients_model() {
    let truth = vec![vec![0.0, 0.0], vec![3.0, 4.0]];
    // One global model at the origin: clients of cluster 0 are exact, clients
    // of cluster 1 are 5 away.
    let global = vec![vec![0.0, 0.0]];
    let labels = [0, 0, 1, 1];
    let assignment = [Some(0); 4];
    let got = per_client_param_error(&refs(&global), &assignment, &labels, &truth);
    assert_eq!(got, Some(2.5));
    // Local models, one per client.
    let local = vec![
        vec![0.0, 1.0],
        vec![0.0, 0.0],
        vec![3.0, 4.0],
        vec![3.0, 2.0],
    ];
    let assignment = [Some(0), Some(1), Some(2), Some(3)];
    let got = per_client_param_error(&refs(&local), &assignment, &labels, &truth);
    assert_eq!(got, Some(0.75));
}

#[test]
fn per_client_param_error_rejects_bad_input() {
    let truth = vec![vec![0.0], vec![1.0]];
    let models = vec![vec![0.0]];
    let m = refs(&models);
    assert_eq!(
        per_client_param_error(&m, &[Some(0), None], &[0, 1], &truth),
        None
    );
    assert_eq!(per_client_param_error(&m, &[Some(1)], &[0], &truth), None);
    assert_eq!(per_client_param_error(&m, &[Some(0)], &[2], &truth), None);
    assert_eq!(
        per_client_param_error(&m, &[Some(0)], &[0, 1], &truth),
        None
    );
    assert_eq!(per_client_param_error(&m, &[], &[], &truth), None);
    let wide = vec![vec![0.0, 0.0]];
    assert_eq!(
        per_client_param_error(&refs(&wide), &[Some(0)], &[0], &truth),
        None
    );
}

#[test]
fn misclustering_is_zero_under_a_permuted_labelling() {
    let labels = [0, 0, 0, 1, 1, 2, 2, 2, 2, 1];
    let assignment: Vec<Option<usize>> = labels.iter().map(|l| Some((l + 1) % 3)).collect();
    assert_eq!(misclustering(&assignment, 3, &labels, 3), Some(0.0));
}

#[test]
fn misclustering_counts_one_wrong_client_in_ten() {
    let labels = [0, 0, 0, 0, 0, 1, 1, 1, 1, 1];
    let mut assignment: Vec<Option<usize>> = labels.iter().map(|l| Some(1 - l)).collect();
    assignment[7] = Some(1);
    let got = misclustering(&assignment, 2, &labels, 2).unwrap();
    assert!(close(got, 0.1), "{got}");
    assignment[7] = None;
    let got = misclustering(&assignment, 2, &labels, 2).unwrap();
    assert!(close(got, 0.1), "{got}");
    let none = [None; 10];
    assert_eq!(misclustering(&none, 2, &labels, 2), Some(1.0));
}

#[test]
fn misclustering_with_more_models_than_clusters() {
    // Model 2 is matched to no cluster: its client counts as misclustered.
    let labels = [0, 0, 1, 1, 1];
    let assignment = [Some(0), Some(0), Some(1), Some(1), Some(2)];
    let got = misclustering(&assignment, 3, &labels, 2).unwrap();
    assert!(close(got, 0.2), "{got}");
    // Each cluster split over two models: only one model per cluster counts.
    let labels = [0, 0, 0, 0, 1, 1, 1, 1];
    let assignment = [0, 0, 0, 1, 2, 2, 3, 3].map(Some);
    let got = misclustering(&assignment, 4, &labels, 2).unwrap();
    assert!(close(got, 3.0 / 8.0), "{got}");
}

#[test]
fn misclustering_with_fewer_models_than_clusters() {
    let labels = [0, 0, 0, 1];
    let assignment = [Some(0); 4];
    let got = misclustering(&assignment, 1, &labels, 2).unwrap();
    assert!(close(got, 0.25), "{got}");
    // Only the occurring indices matter, however many models there are.
    let got = misclustering(&assignment, usize::MAX, &labels, usize::MAX).unwrap();
    assert!(close(got, 0.25), "{got}");
}

#[test]
fn misclustering_prefers_the_best_relabelling_over_greedy() {
    // Model 0 holds 3 clients of cluster 0 and 4 of cluster 1; model 1 holds 4
    // of cluster 1. Greedily taking the largest cell (model 0 -> cluster 1)
    // leaves model 1 -> cluster 0: 4 agreements. The optimum (0 -> 0, 1 -> 1)
    // has 3 + 4 = 7, so 4 of 11 clients are misclustered.
    let mut labels = vec![0; 3];
    labels.extend([1; 4]);
    labels.extend([1; 4]);
    let mut assignment = vec![Some(0); 7];
    assignment.extend([Some(1); 4]);
    let got = misclustering(&assignment, 2, &labels, 2).unwrap();
    assert!(close(got, 4.0 / 11.0), "{got}");
}

#[test]
fn misclustering_rejects_bad_input() {
    assert_eq!(misclustering(&[], 2, &[], 2), None);
    assert_eq!(misclustering(&[Some(0)], 2, &[0, 1], 2), None);
    assert_eq!(misclustering(&[Some(2)], 2, &[0], 2), None);
    assert_eq!(misclustering(&[Some(0)], 2, &[3], 2), None);
}

#[test]
fn ari_of_identical_partitions_is_one() {
    assert_eq!(adjusted_rand_index(&[0, 0, 1, 1, 2], &[0, 0, 1, 1, 2]), 1.0);
    assert_eq!(adjusted_rand_index(&[5, 5, 7, 7, 9], &[1, 1, 0, 0, 3]), 1.0);
    assert_eq!(adjusted_rand_index(&[3, 3, 3], &[0, 0, 0]), 1.0);
    assert_eq!(adjusted_rand_index(&[0, 1, 2], &[2, 0, 1]), 1.0);
    assert_eq!(adjusted_rand_index(&[4], &[1]), 1.0);
    assert_eq!(adjusted_rand_index(&[], &[]), 1.0);
}

#[test]
fn ari_matches_hand_computed_values() {
    // n = 4; pairs: total 6, together in a: 2, in b: 1, in both: 1.
    // ARI = (1 - 2·1/6) / ((2 + 1)/2 - 2·1/6) = (2/3) / (7/6) = 4/7.
    let got = adjusted_rand_index(&[0, 0, 1, 1], &[0, 0, 1, 2]);
    assert!(close(got, 4.0 / 7.0), "{got}");
    let got = adjusted_rand_index(&[0, 0, 1, 2], &[0, 0, 1, 1]);
    assert!(close(got, 4.0 / 7.0), "{got}");
    // Crossed partitions: no pair together in both; expected 2·2/6 = 2/3,
    // max 2, so ARI = (0 - 2/3) / (2 - 2/3) = -1/2.
    let got = adjusted_rand_index(&[0, 0, 1, 1], &[0, 1, 0, 1]);
    assert!(close(got, -0.5), "{got}");
    // One block against all singletons: index 0, expected 0, so ARI = 0.
    assert_eq!(adjusted_rand_index(&[0, 0, 0, 0], &[0, 1, 2, 3]), 0.0);
    // n = 6, a = {0,1,2},{3,4,5}, b = {0,1},{2,3},{4,5}: both = 2, in_a = 6,
    // in_b = 3, total = 15; expected 6·3/15 = 1.2, max 4.5:
    // ARI = (2 - 1.2) / (4.5 - 1.2) = 0.8 / 3.3 = 8/33.
    let got = adjusted_rand_index(&[0, 0, 0, 1, 1, 1], &[0, 0, 1, 1, 2, 2]);
    assert!(close(got, 8.0 / 33.0), "{got}");
}

#[test]
fn ari_of_mismatched_lengths_is_nan() {
    assert!(adjusted_rand_index(&[0, 1], &[0]).is_nan());
}

#[test]
fn majority_misclustering_spares_split_clusters_but_counts_impurities() {
    // Truth: 0 0 0 0 1 1. Found: {0,1} {2,3} {4,5}: a split cluster, exact.
    let labels = [0, 0, 0, 0, 1, 1];
    let split = [Some(0), Some(0), Some(1), Some(1), Some(2), Some(2)];
    assert_eq!(majority_misclustering(&split, &labels), Some(0.0));
    // {0,1,4} has label 0 with client 4 impure; client 5 unassigned.
    let impure = [Some(0), Some(0), Some(1), Some(1), Some(0), None];
    assert_eq!(majority_misclustering(&impure, &labels), Some(2.0 / 6.0));
    // A 1-1 tie has no majority: both count.
    let tie = [Some(0), Some(1), Some(1), Some(1), Some(0), Some(2)];
    assert_eq!(majority_misclustering(&tie, &labels), Some(2.0 / 6.0));
    assert_eq!(majority_misclustering(&[], &[]), None);
}
