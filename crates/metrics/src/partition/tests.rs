use super::*;

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-12
}

#[test]
fn nmi_is_one_for_the_same_partition_under_any_labels() {
    let got = normalized_mutual_info(&[0, 0, 1, 1, 2], &[2, 2, 0, 0, 1]);
    assert!(close(got, 1.0), "{got}");
    let got = normalized_mutual_info(&[7, 3, 7, 3], &[0, 1, 0, 1]);
    assert!(close(got, 1.0), "{got}");
    // scikit-learn's limit cases: one cluster on both sides, or no items.
    assert_eq!(normalized_mutual_info(&[4, 4, 4], &[0, 0, 0]), 1.0);
    assert_eq!(normalized_mutual_info(&[], &[]), 1.0);
}

#[test]
fn nmi_matches_hand_computed_values() {
    // b refines a: I = H(a) = ln 2, H(b) = 1.5 ln 2, NMI = 1 / 1.25 = 0.8
    // (scikit-learn: normalized_mutual_info_score([0,0,1,1], [0,0,1,2]) = 0.8).
    let got = normalized_mutual_info(&[0, 0, 1, 1], &[0, 0, 1, 2]);
    assert!(close(got, 0.8), "{got}");
    assert!(close(
        normalized_mutual_info(&[0, 0, 1, 2], &[0, 0, 1, 1]),
        0.8
    ));
    // Crossed partitions are independent: I = 0.
    assert_eq!(normalized_mutual_info(&[0, 0, 1, 1], &[0, 1, 0, 1]), 0.0);
    // One block against singletons: H(a) = 0 so I = 0.
    assert_eq!(normalized_mutual_info(&[0, 0, 0, 0], &[0, 1, 2, 3]), 0.0);
    // Every client in one found cluster: exactly 0, no rounding residue.
    assert_eq!(
        normalized_mutual_info(&[0, 0, 1, 1, 1], &[3, 3, 3, 3, 3]),
        0.0
    );
    // n = 6, a = {0,1,2},{3,4,5}, b = {0,1},{2,3},{4,5}: I = (2/3) ln 2,
    // H(a) = ln 2, H(b) = ln 3: NMI = (4/3) ln 2 / ln 6 = 0.51580374...
    let got = normalized_mutual_info(&[0, 0, 0, 1, 1, 1], &[0, 0, 1, 1, 2, 2]);
    let expected = 4.0 / 3.0 * 2f64.ln() / 6f64.ln();
    assert!(close(got, expected), "{got} vs {expected}");
    assert!((got - 0.515_803_742_979_388_9).abs() < 1e-12, "{got}");
}

#[test]
fn nmi_of_mismatched_lengths_is_nan() {
    assert!(normalized_mutual_info(&[0, 1], &[0]).is_nan());
}

#[test]
fn unassigned_clients_are_each_alone() {
    assert_eq!(
        with_singletons(&[Some(3), None, Some(3), Some(1), None]),
        vec![0, 2, 0, 1, 3]
    );
    assert_eq!(with_singletons(&[None, None]), vec![0, 1]);
    // Truth {0,1},{2,3}; found {0,1} and 2, 3 unassigned: found = 0 0 1 2,
    // ARI 4/7 and NMI 0.8 by the hand-computed values above.
    let got = agreement(&[Some(5), Some(5), None, None], &[0, 0, 1, 1]).unwrap();
    assert!(close(got.ari, 4.0 / 7.0), "{got:?}");
    assert!(close(got.nmi, 0.8), "{got:?}");
    assert_eq!(agreement(&[], &[]), None);
    assert_eq!(agreement(&[Some(0)], &[0, 1]), None);
}

#[test]
fn a_relabelled_perfect_clustering_scores_one_and_a_random_one_about_zero() {
    let truth: Vec<usize> = (0..3000).map(|i| i % 3).collect();
    let relabelled: Vec<Option<usize>> = truth.iter().map(|&t| Some((t + 1) % 3 + 10)).collect();
    let perfect = agreement(&relabelled, &truth).unwrap();
    assert_eq!(perfect.ari, 1.0);
    assert!(close(perfect.nmi, 1.0), "{perfect:?}");
    // A seeded random assignment (a 64-bit LCG) into 3 clusters.
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let random: Vec<Option<usize>> = (0..truth.len())
        .map(|_| {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            Some((state >> 33) as usize % 3)
        })
        .collect();
    let chance = agreement(&random, &truth).unwrap();
    assert!(chance.ari.abs() < 0.01, "{chance:?}");
    assert!((0.0..0.01).contains(&chance.nmi), "{chance:?}");
}
