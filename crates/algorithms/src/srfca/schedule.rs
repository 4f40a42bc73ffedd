//! REFINE's step-size schedule: the SR-FCA public code's `ClusterTrainer`
//! (`cifar_code/cifar_trainers.py`) builds a new optimizer and a `LambdaLR`
//! over `np.interp(iteration, [0, 5 · iters_per_epoch, epochs ·
//! iters_per_epoch], [0, 1, 0])` for each cluster of each REFINE step, one
//! scheduler step per TrimmedMeanGD iteration. Here a REFINE step's
//! TrimmedMeanGD round `r` (from 0) runs at `lr · factor(r)` with the
//! triangle `[0, warmup_rounds, refine_rounds] -> [0, 1, 0]` ([`triangle`],
//! which the baselines' `round_schedule` runs too), restarting at every
//! REFINE step as the code's new trainers do; the final training after the last REFINE keeps `lr`.
//!
//! A client knows its factor from the round alone (the stages are fixed by
//! the config both halves hold, [`Config::clustering_rounds`], as
//! [`super::resample`]'s blocks are), so the messages, their wire form and
//! the server are unchanged, and a resumed run takes the same steps. The
//! factor scales what a member sends: its gradient (one step of GD, the
//! server stepping `lr` along the coordinate-wise trimmed mean, which
//! commutes with a non-negative factor), or its update after local steps
//! taken at `lr · factor(r)` (divided by `lr`).

use serde::{Deserialize, Serialize};

use super::config::{AfterOneShot, Config, RefineSchedule};
use crate::common::round_schedule::triangle;

/// The factor of the step size at each round, derived from the config.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct RefineLr {
    one_shot_rounds: usize,
    /// Rounds of a REFINE step before its TrimmedMeanGD (resampling's).
    relocal: usize,
    refine_span: usize,
    refine_steps: usize,
    /// The triangle over a REFINE step's rounds (`None`: the full step).
    warmup: usize,
    total: usize,
}

impl RefineLr {
    /// The schedule of `config` (`None` without `refine_schedule`, or after
    /// ONE_SHOT-IFCA, which runs no REFINE).
    pub fn new(config: &Config) -> Option<Self> {
        let RefineSchedule::Triangular { warmup_rounds } = config.refine_schedule?;
        (config.then == AfterOneShot::Refine).then(|| Self {
            one_shot_rounds: config.one_shot_rounds(),
            relocal: if config.resample {
                config.relocal_rounds()
            } else {
                0
            },
            refine_span: config.refine_span(),
            refine_steps: config.refine_steps,
            warmup: warmup_rounds,
            total: config.refine_rounds,
        })
    }

    /// The TrimmedMeanGD round of its REFINE step that `round` is (from 0);
    /// `None` for every other round (ONE_SHOT, evaluations, the final
    /// training).
    pub fn refine_round(&self, round: usize) -> Option<usize> {
        let since = round.checked_sub(self.one_shot_rounds)?;
        let span = self.refine_span.max(1);
        if since / span >= self.refine_steps {
            return None;
        }
        (since % span)
            .checked_sub(self.relocal)
            .filter(|&r| r < self.total)
    }

    /// The factor of `lr` at `round`: the triangle's at its REFINE round, 1
    /// elsewhere.
    pub fn factor(&self, round: usize) -> f32 {
        self.refine_round(round)
            .map_or(1.0, |r| triangle(self.warmup, self.total, r))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(extra: &str) -> Config {
        toml::from_str::<Config>(&format!(
            "threshold = {{ kind = \"absolute\", value = 0.5 }}\nlocal_lr = 0.1\nlr = 0.1\n\
             refine_steps = 2\nrefine_rounds = 5\n\
             refine_schedule = {{ kind = \"triangular\", warmup_rounds = 2 }}\n{extra}"
        ))
        .unwrap()
    }

    #[test]
    fn each_refine_step_runs_the_triangle_over_its_rounds() {
        // Cross-loss: rounds 0-1 ONE_SHOT, then per REFINE 5 rounds and an
        // evaluation: 2-6 and 8-12 train, 7 and 13 evaluate, 14- final.
        let lr = RefineLr::new(&config("")).unwrap();
        let factors: Vec<f32> = (0..16).map(|r| lr.factor(r)).collect();
        let triangle = [0.0, 0.5, 1.0, 2.0 / 3.0, 1.0 / 3.0];
        let mut want = vec![1.0, 1.0];
        for _ in 0..2 {
            want.extend(triangle);
            want.push(1.0);
        }
        want.extend([1.0, 1.0]);
        assert_eq!(factors, want);
        assert_eq!(lr.refine_round(8), Some(0));
        assert_eq!(lr.refine_round(7), None);
        // Resampling adds ONE_SHOT's two rounds before each REFINE's training.
        let lr = RefineLr::new(&config("resample = true")).unwrap();
        let rounds: Vec<Option<usize>> = (2..11).map(|r| lr.refine_round(r)).collect();
        let (n, s) = (None, Some);
        assert_eq!(rounds, [n, n, s(0), s(1), s(2), s(3), s(4), n, n]);
        // ℓ2: no evaluation rounds.
        let lr = RefineLr::new(&config("distance = \"l2\"")).unwrap();
        assert_eq!(lr.refine_round(1), Some(0));
        assert_eq!(lr.refine_round(6), Some(0));
        assert_eq!(lr.refine_round(11), None);
    }

    #[test]
    fn no_schedule_and_a_short_refine_run_at_the_full_step() {
        let mut c = config("");
        c.refine_schedule = None;
        assert_eq!(RefineLr::new(&c), None);
        c.refine_schedule = Some(RefineSchedule::Triangular { warmup_rounds: 5 });
        let lr = RefineLr::new(&c).unwrap();
        assert!((0..20).all(|r| lr.factor(r) == 1.0));
    }
}
