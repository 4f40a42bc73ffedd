//! Which candidate of each method the clustered-benchmark's search chose:
//! per setting, the highest mean validation accuracy.

use std::collections::BTreeMap;

use super::clustered_benchmark_methods::families;
use super::clustered_benchmark_settings::ACCURACY;
use super::clustered_benchmark_stats::mean_std;
use crate::reproduce::harness::{Experiment, FinishedRun, Metric};

/// The search's winner per (setting, family): the candidate of highest mean
/// validation accuracy (the first candidate wins a tie; a diverged
/// candidate has none).
pub struct Choice {
    /// `(setting, family key)` to the winning method's index in the grids.
    winners: BTreeMap<(usize, &'static str), usize>,
}

impl Choice {
    /// The winners among `runs` of the search grid `exp`.
    pub fn new(exp: &Experiment, runs: &[FinishedRun]) -> Self {
        let mut winners = BTreeMap::new();
        for f in families() {
            let members: Vec<usize> = f
                .variants()
                .iter()
                .filter_map(|v| exp.methods.iter().position(|m| m.key == v.key))
                .collect();
            for si in 0..exp.settings.len() {
                let best = members
                    .iter()
                    .filter_map(|&m| Some((m, mean_std(&values(runs, si, m, ACCURACY))?.0)))
                    .reduce(|best, next| if next.1 > best.1 { next } else { best });
                if let Some((m, _)) = best {
                    winners.insert((si, f.key), m);
                }
            }
        }
        Self { winners }
    }

    /// The winning method's index for `family` in setting `setting`.
    pub fn winner(&self, setting: usize, family: &str) -> Option<usize> {
        self.winners
            .iter()
            .find(|((s, f), _)| *s == setting && *f == family)
            .map(|(_, &m)| m)
    }
}

/// `metric` over the runs of (setting, method).
pub fn values(runs: &[FinishedRun], setting: usize, method: usize, metric: Metric) -> Vec<f64> {
    of(runs, setting, method)
        .filter_map(|r| r.run.value(metric))
        .collect()
}

pub fn of(
    runs: &[FinishedRun],
    setting: usize,
    method: usize,
) -> impl Iterator<Item = &FinishedRun> {
    runs.iter()
        .filter(move |r| r.setting == setting && r.method == method)
}
