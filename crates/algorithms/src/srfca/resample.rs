//! Theorem 4.11's resampling: "resampling n_i points from D_i and recompute
//! w_i as in ONE_SHOT for every step of REFINE()". With a finite data set this
//! is sample splitting: each client's rows are cut into `refine_steps + 1`
//! disjoint contiguous blocks, block 0 for ONE_SHOT and block `r` for REFINE
//! `r`; the final training uses every row.
//!
//! A client knows its block from the round alone: the schedule is fixed by the
//! config both halves hold (see [`Config::clustering_rounds`]), so the
//! messages and their wire form are unchanged.

use std::ops::Range;

use serde::{Deserialize, Serialize};

use super::config::{AfterOneShot, Config};

/// Which block of its data a client uses in each round.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct DataSplit {
    one_shot_rounds: usize,
    refine_span: usize,
    refine_steps: usize,
}

impl DataSplit {
    /// The split of `config`; `None` without `resample` (every round uses all
    /// the data).
    pub fn new(config: &Config) -> Option<Self> {
        (config.resample && config.then == AfterOneShot::Refine).then(|| Self {
            one_shot_rounds: config.one_shot_rounds(),
            refine_span: config.refine_span(),
            refine_steps: config.refine_steps,
        })
    }

    /// Blocks: ONE_SHOT's and one per REFINE step.
    pub fn parts(&self) -> usize {
        self.refine_steps + 1
    }

    /// The block `round` uses (0: ONE_SHOT, `r`: REFINE `r`, from 1); `None`
    /// after the last REFINE (all the data).
    pub fn part(&self, round: usize) -> Option<usize> {
        if round < self.one_shot_rounds {
            return Some(0);
        }
        let refine = (round - self.one_shot_rounds) / self.refine_span.max(1);
        (refine < self.refine_steps).then_some(refine + 1)
    }

    /// Rows of block `part` among `n`: `[part·n/P, (part+1)·n/P)` with
    /// `P = parts()`, so the blocks are disjoint, cover `0..n` and differ in
    /// size by at most one.
    pub fn rows(&self, part: usize, n: usize) -> Range<usize> {
        let p = self.parts();
        part * n / p..(part + 1) * n / p
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::srfca::config::Distance;

    fn config(distance: Distance, resample: bool) -> Config {
        toml::from_str::<Config>(&format!(
            "threshold = {{ kind = \"quantile\", value = 0.3 }}\nlocal_lr = 0.1\nlr = 0.1\n\
             refine_steps = 2\nrefine_rounds = 3\ndistance = \"{}\"\nresample = {resample}",
            match distance {
                Distance::L2 => "l2",
                Distance::CrossLoss => "cross-loss",
            }
        ))
        .unwrap()
    }

    #[test]
    fn blocks_are_disjoint_and_cover_the_data() {
        let split = DataSplit::new(&config(Distance::L2, true)).unwrap();
        for n in [0, 1, 2, 3, 7, 600] {
            let mut seen = vec![0; n];
            for part in 0..split.parts() {
                split.rows(part, n).for_each(|i| seen[i] += 1);
            }
            assert!(seen.iter().all(|&s| s == 1), "n = {n}: {seen:?}");
        }
        assert_eq!(split.rows(1, 600), 200..400);
    }

    #[test]
    fn each_round_maps_to_its_stage_block() {
        // Cross-loss: ONE_SHOT 2 rounds (block 0), then each REFINE: local
        // models, pair losses, 3 TrimmedMeanGD rounds, 1 evaluation.
        let c = config(Distance::CrossLoss, true);
        let split = DataSplit::new(&c).unwrap();
        let parts: Vec<Option<usize>> = (0..16).map(|r| split.part(r)).collect();
        let mut want = vec![Some(0); 2];
        want.extend([Some(1); 6]);
        want.extend([Some(2); 6]);
        want.extend([None; 2]);
        assert_eq!(parts, want);
        assert_eq!(c.clustering_rounds(), 14);
        // ℓ2: ONE_SHOT 1 round; each REFINE: local models, 3 rounds.
        let c = config(Distance::L2, true);
        let split = DataSplit::new(&c).unwrap();
        assert_eq!(split.part(0), Some(0));
        assert_eq!(split.part(4), Some(1));
        assert_eq!(split.part(5), Some(2));
        assert_eq!(split.part(9), None);
        assert_eq!(c.clustering_rounds(), 9);
        assert!(DataSplit::new(&config(Distance::L2, false)).is_none());
    }
}
