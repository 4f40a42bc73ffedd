//! The deals' statistics against their closed forms, on pools large enough
//! that no class runs out.

use fedcluster_core::{Purpose, stream};
use rand::seq::SliceRandom;

use super::*;

/// `count` image indices with labels `i % classes`, in a random order.
fn pool(count: usize, classes: usize, seed: u64) -> (Vec<usize>, Vec<u32>) {
    let labels = (0..count).map(|i| (i % classes) as u32).collect();
    let mut pool: Vec<usize> = (0..count).collect();
    pool.shuffle(&mut stream(seed, Purpose::Partition, 99, 0));
    (pool, labels)
}

fn distinct(client: &[usize], labels: &[u32]) -> usize {
    let mut seen: Vec<u32> = client.iter().map(|&i| labels[i]).collect();
    seen.sort_unstable();
    seen.dedup();
    seen.len()
}

fn deal_seeded(
    skew: &LabelSkew,
    pool: &[usize],
    labels: &[u32],
    k: usize,
    m: usize,
    n: usize,
    seed: u64,
) -> Vec<Vec<usize>> {
    let mut rng = stream(seed, Purpose::Partition, 0, 2);
    deal(skew, pool, labels, k, m, n, &mut rng).unwrap()
}

/// Hsu et al.'s deal: the mean number of classes a client sees is its
/// expectation `K (1 - E[(1 - q)^n])`, `q ~ Beta(alpha, (K - 1) alpha)` (a
/// class's share of `Dir(alpha · 1)`), i.e.
/// `K (1 - prod_{i < n} ((K - 1) alpha + i) / (K alpha + i))`; and the mean
/// of `sum_l qhat_l^2` is `S + (1 - S) / n` with
/// `S = E[sum_l q_l^2] = (alpha + 1) / (K alpha + 1)`.
#[test]
fn dirichlet_clients_see_the_expected_number_of_classes() {
    let (k, m, n) = (10, 1000, 20);
    let (pool, labels) = pool(50_000, k, 1);
    for alpha in [0.1, 0.5, 10.0] {
        let dealt = deal_seeded(&LabelSkew::Dirichlet { alpha }, &pool, &labels, k, m, n, 7);
        assert_eq!(dealt.len(), m);
        assert!(dealt.iter().all(|c| c.len() == n));
        let mut all: Vec<usize> = dealt.concat();
        all.sort_unstable();
        all.dedup();
        assert_eq!(all.len(), m * n, "an image dealt twice");

        let kf = k as f64;
        let none: f64 = (0..n)
            .map(|i| ((kf - 1.0) * alpha + i as f64) / (kf * alpha + i as f64))
            .product();
        let want_classes = kf * (1.0 - none);
        let got_classes = dealt
            .iter()
            .map(|c| distinct(c, &labels) as f64)
            .sum::<f64>()
            / m as f64;
        assert!(
            (got_classes - want_classes).abs() < 0.15,
            "alpha {alpha}: {got_classes} classes per client, expected {want_classes}"
        );

        let s = (alpha + 1.0) / (kf * alpha + 1.0);
        let want_sq = s + (1.0 - s) / n as f64;
        let got_sq = dealt
            .iter()
            .map(|c| {
                let mut counts = vec![0.0; k];
                c.iter().for_each(|&i| counts[labels[i] as usize] += 1.0);
                counts
                    .iter()
                    .map(|v: &f64| (v / n as f64).powi(2))
                    .sum::<f64>()
            })
            .sum::<f64>()
            / m as f64;
        assert!(
            (got_sq - want_sq).abs() < 0.02,
            "alpha {alpha}: mean sum of squared label shares {got_sq}, expected {want_sq}"
        );
    }
}

#[test]
fn dirichlet_fails_naming_the_shortfall() {
    let (pool, labels) = pool(30, 3, 1);
    let mut rng = stream(1, Purpose::Partition, 0, 2);
    let e = deal(
        &LabelSkew::Dirichlet { alpha: 1.0 },
        &pool,
        &labels,
        3,
        4,
        10,
        &mut rng,
    )
    .unwrap_err();
    assert!(e.contains("ran out") && e.contains("30 images"), "{e}");
}

/// McMahan's shards: with classes that fill whole shards, a client of two
/// shards sees one class when both come from the same class, which happens
/// with probability `(shards per class - 1) / (shards - 1)`.
#[test]
fn shard_clients_see_at_most_their_shards_classes() {
    let (k, m, n, per) = (10, 100, 20, 2);
    let (pool, labels) = pool(m * n, k, 2);
    let (shards, per_class) = ((m * per) as f64, (m * per / k) as f64);
    let want = 2.0 - (per_class - 1.0) / (shards - 1.0);
    let mut mean = 0.0;
    let seeds = 40;
    for seed in 0..seeds {
        let dealt = deal_seeded(
            &LabelSkew::Classes { per_client: per },
            &pool,
            &labels,
            k,
            m,
            n,
            seed,
        );
        let mut all = dealt.concat();
        all.sort_unstable();
        assert_eq!(all, (0..m * n).collect::<Vec<_>>(), "every image once");
        for c in &dealt {
            assert_eq!(c.len(), n);
            assert!(distinct(c, &labels) <= per);
        }
        mean += dealt
            .iter()
            .map(|c| distinct(c, &labels) as f64)
            .sum::<f64>()
            / m as f64;
    }
    mean /= seeds as f64;
    assert!(
        (mean - want).abs() < 0.02,
        "{mean} classes per client, expected {want}"
    );
}

/// Quantity skew: the mean of `sum_c p_c^2` over draws is
/// `(alpha + 1) / (m alpha + 1)`, `p` the clients' shares of the images.
#[test]
fn quantity_shares_follow_the_dirichlet() {
    let (m, n, alpha) = (10, 1000, 1.0);
    let (pool, labels) = pool(m * n, 10, 3);
    let want = (alpha + 1.0) / (m as f64 * alpha + 1.0);
    let seeds = 400;
    let mut mean = 0.0;
    for seed in 0..seeds {
        let dealt = deal_seeded(
            &LabelSkew::Quantity { alpha },
            &pool,
            &labels,
            10,
            m,
            n,
            seed,
        );
        let mut all = dealt.concat();
        all.sort_unstable();
        assert_eq!(all, (0..m * n).collect::<Vec<_>>(), "every image once");
        assert!(dealt.iter().all(|c| !c.is_empty()));
        mean += dealt
            .iter()
            .map(|c| (c.len() as f64 / (m * n) as f64).powi(2))
            .sum::<f64>();
    }
    mean /= seeds as f64;
    assert!(
        (mean - want).abs() < 0.01,
        "mean sum of squared shares {mean}, expected {want}"
    );
}

#[test]
fn sizes_give_one_each_then_largest_remainders() {
    assert_eq!(sizes(&[0.5, 0.5], 5), [3, 2]);
    assert_eq!(sizes(&[0.0, 0.0, 0.0], 7), [3, 2, 2]);
    assert_eq!(sizes(&[1.0, 0.0, 0.0], 3), [1, 1, 1]);
    assert_eq!(sizes(&[0.7, 0.2, 0.1], 13), [8, 3, 2]);
    for total in 3..40 {
        assert_eq!(sizes(&[0.3, 0.3, 0.4], total).iter().sum::<usize>(), total);
    }
}

#[test]
fn bad_skews_name_the_field() {
    let field = |s: LabelSkew| s.check(10).unwrap_err().field().to_string();
    assert_eq!(field(LabelSkew::Dirichlet { alpha: 0.0 }), "skew.alpha");
    assert_eq!(field(LabelSkew::Quantity { alpha: f64::NAN }), "skew.alpha");
    assert_eq!(
        field(LabelSkew::Classes { per_client: 3 }),
        "skew.per_client"
    );
    assert_eq!(
        field(LabelSkew::Classes { per_client: 0 }),
        "skew.per_client"
    );
    assert_eq!(LabelSkew::Classes { per_client: 5 }.check(10), Ok(()));
    let read = |t: &str| toml::from_str::<LabelSkew>(t);
    assert_eq!(
        read("kind = 'dirichlet'\nalpha = 0.5").unwrap(),
        LabelSkew::Dirichlet { alpha: 0.5 }
    );
    assert_eq!(
        read("kind = 'classes'\nper_client = 2").unwrap(),
        LabelSkew::Classes { per_client: 2 }
    );
    assert!(read("kind = 'classes'\nalpha = 2").is_err());
    assert!(read("kind = 'dirichlet'\nalpha = 0.5\nbeta = 1").is_err());
}
