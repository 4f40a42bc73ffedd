//! The best round of a run, next to its last: the test metrics a run reached
//! at its best evaluated round and the round it reached them (FL-bench #139,
//! PFLlib #226: papers report one or the other, often without saying which).
//! `summary.json` holds both; docs/metrics.md defines them.

use fedcluster_sim::record::RoundRecord;

/// The best value of a metric over a run's rounds and the round (from 0, as
/// `metrics.csv`'s `round`) of its first occurrence.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BestRound {
    /// The round, counted from 0.
    pub round: usize,
    /// The metric's value there.
    pub value: f64,
}

/// Which way a metric improves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Better {
    /// Larger is better (accuracy).
    Higher,
    /// Smaller is better (loss).
    Lower,
}

/// The best `value` over `records` (one replica's rounds, in order): rounds
/// without a value (not evaluated) and NaN values are skipped, ties go to the
/// earliest round. `None` when no round has a value.
pub fn best_round<'a>(
    records: impl IntoIterator<Item = &'a RoundRecord>,
    value: impl Fn(&RoundRecord) -> Option<f64>,
    better: Better,
) -> Option<BestRound> {
    let mut best: Option<BestRound> = None;
    for r in records {
        let Some(v) = value(r).filter(|v| !v.is_nan()) else {
            continue;
        };
        let improves = best.is_none_or(|b| match better {
            Better::Higher => v > b.value,
            Better::Lower => v < b.value,
        });
        if improves {
            best = Some(BestRound {
                round: r.round,
                value: v,
            });
        }
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(round: usize, accuracy: Option<f64>) -> RoundRecord {
        RoundRecord {
            round,
            replica: 0,
            train_loss: None,
            param_error: None,
            misclustering: None,
            clusters_found: None,
            majority_misclustering: None,
            test_loss: accuracy.map(|a| 1.0 - a),
            test_accuracy: accuracy,
            test_misclustering: None,
            round_misclustering: None,
            ari: None,
            nmi: None,
            participants: 0,
            bytes_down: 0,
            bytes_up: 0,
            seconds: 0.0,
            diverged: false,
        }
    }

    #[test]
    fn the_best_round_is_the_first_to_reach_the_best_evaluated_value() {
        let rounds = [
            record(0, None),
            record(1, Some(0.5)),
            record(2, Some(0.8)),
            record(3, Some(f64::NAN)),
            record(4, Some(0.8)),
            record(5, Some(0.7)),
        ];
        let accuracy = best_round(&rounds, |r| r.test_accuracy, Better::Higher).unwrap();
        assert_eq!(
            accuracy,
            BestRound {
                round: 2,
                value: 0.8
            }
        );
        let loss = best_round(&rounds, |r| r.test_loss, Better::Lower).unwrap();
        assert_eq!(loss.round, 2);
        assert!((loss.value - 0.2).abs() < 1e-12);
        // Best is never worse than last.
        let last = rounds.last().unwrap().test_accuracy.unwrap();
        assert!(accuracy.value >= last);
        assert_eq!(
            best_round(&rounds[..1], |r| r.test_accuracy, Better::Higher),
            None
        );
    }
}
