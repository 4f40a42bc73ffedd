//! The clustered-benchmark's statistics over seeds: mean and standard
//! deviation, ranks with ties shared, and the rule that says whether two
//! methods differ by more than the seed noise.

/// Mean and sample standard deviation (0 for one value); `None` for none.
pub fn mean_std(v: &[f64]) -> Option<(f64, f64)> {
    if v.is_empty() {
        return None;
    }
    let n = v.len() as f64;
    let mean = v.iter().sum::<f64>() / n;
    let var = if v.len() > 1 {
        v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0)
    } else {
        0.0
    };
    Some((mean, var.sqrt()))
}

/// The pooled standard deviation of two samples' seeds; `None` when they
/// have fewer than three values together (no spread to pool).
pub fn pooled_std(a: &[f64], b: &[f64]) -> Option<f64> {
    let dof = (a.len() + b.len()).checked_sub(2).filter(|&d| d > 0)?;
    let ss = |v: &[f64]| {
        let (m, _) = mean_std(v).unwrap_or((0.0, 0.0));
        v.iter().map(|x| (x - m).powi(2)).sum::<f64>()
    };
    Some(((ss(a) + ss(b)) / dof as f64).sqrt())
}

/// How many pooled standard deviations two means must be apart to count as
/// a difference larger than the seed noise.
pub const NOISE_RULE: f64 = 2.0;

/// Whether `a`'s mean exceeds `b`'s by more than [`NOISE_RULE`] pooled
/// standard deviations: `Some(true)` above `b`, `Some(false)` not (within
/// the noise or below), `None` when the seeds cannot say (one seed each).
pub fn beats(a: &[f64], b: &[f64]) -> Option<bool> {
    let sd = pooled_std(a, b)?;
    let (ma, _) = mean_std(a)?;
    let (mb, _) = mean_std(b)?;
    Some(ma - mb > NOISE_RULE * sd)
}

/// Ranks of `scores` (higher is better), 1 for the best; tied scores share
/// the mean of their ranks. `None` scores get no rank.
pub fn ranks(scores: &[Option<f64>]) -> Vec<Option<f64>> {
    let mut order: Vec<(usize, f64)> = scores
        .iter()
        .enumerate()
        .filter_map(|(i, s)| s.map(|s| (i, s)))
        .collect();
    order.sort_by(|a, b| b.1.total_cmp(&a.1));
    let mut out = vec![None; scores.len()];
    let mut start = 0;
    while start < order.len() {
        let mut end = start + 1;
        while end < order.len() && order[end].1 == order[start].1 {
            end += 1;
        }
        // Positions start..end (0-based) share ranks start+1..=end.
        let shared = (start + 1 + end) as f64 / 2.0;
        for &(i, _) in &order[start..end] {
            out[i] = Some(shared);
        }
        start = end;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ties_share_their_mean_rank_and_missing_scores_get_none() {
        let r = ranks(&[Some(0.5), None, Some(0.9), Some(0.5), Some(0.1)]);
        assert_eq!(r, vec![Some(2.5), None, Some(1.0), Some(2.5), Some(4.0)]);
    }

    #[test]
    fn a_difference_counts_only_beyond_twice_the_pooled_std() {
        // Pooled std 1 (each sample's deviations ±1): 2.5 apart beats, 1.5 does not.
        assert_eq!(beats(&[9.5, 10.5, 11.5], &[7.0, 8.0, 9.0]), Some(true));
        assert_eq!(beats(&[9.5, 10.5, 11.5], &[8.0, 9.0, 10.0]), Some(false));
        assert_eq!(beats(&[8.0, 9.0, 10.0], &[9.5, 10.5, 11.5]), Some(false));
        assert_eq!(beats(&[1.0], &[0.0]), None);
        let sd = pooled_std(&[1.0, 3.0], &[4.0, 6.0]).unwrap();
        assert!((sd - 2f64.sqrt()).abs() < 1e-12, "{sd}");
    }

    #[test]
    fn mean_and_sample_std() {
        assert_eq!(mean_std(&[]), None);
        assert_eq!(mean_std(&[2.0]), Some((2.0, 0.0)));
        let (m, s) = mean_std(&[1.0, 2.0, 3.0]).unwrap();
        assert!((m - 2.0).abs() < 1e-12 && (s - 1.0).abs() < 1e-12);
    }
}
