//! The step size over a run's rounds: `round_schedule` of the baselines
//! (`global`, `oracle`, `ifca`, `cfl`, `local`), and the triangle over rounds
//! that SR-FCA's `refine_schedule` runs too ([`triangle`]).
//!
//! The SR-FCA public code (`cifar_code/cifar_trainers.py`, commit a1b418f)
//! trains every CIFAR-10 method under a `LambdaLR` over `np.interp(iteration,
//! [0, warmup, total], [0, 1, 0])`: its `GlobalTrainer` (Global, and IFCA one
//! iteration per round), `ClientTrainer` (the local models) and
//! `ClusterTrainer` (CFL, REFINE). With `round_schedule` absent every round
//! trains at `lr` (the bits of a run without the key); with `{ kind =
//! "triangular", warmup_rounds = W, total_rounds = T }` round `t` (from 0)
//! trains at `lr · np.interp(t, [0, W, T], [0, 1, 0])`: 0 at the first round
//! (as `LambdaLR`'s first step), the full step at `W`, then linear to 0 at `T`
//! and after it (as `np.interp` holds its last value). Each algorithm scales
//! the step size where it is used: the local steps a client takes (it knows
//! the round), or the server's step along the mean gradient (gradient
//! aggregation); the messages and their wire form are unchanged, and the
//! factor comes from the round and the config alone, so a resumed run takes
//! the same steps. A round is an engine round (with `clients = "sequential"`,
//! one link of a chain).

use serde::{Deserialize, Serialize};

use fedcluster_core::train::Triangular;

use super::checked::{FieldError, at_least_one};

/// `round_schedule`: the factor of the step size at each round.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields, tag = "kind")]
pub enum RoundSchedule {
    /// Every round at `lr`, as without the key (an override's way to turn a
    /// config's schedule off).
    Constant,
    /// `np.interp(round, [0, warmup_rounds, total_rounds], [0, 1, 0])`.
    Triangular {
        /// Rounds of the linear warm-up from 0 (the peak is at this round).
        warmup_rounds: usize,
        /// The round at which the step size is back at 0 (`> warmup_rounds`);
        /// later rounds train at 0.
        total_rounds: usize,
    },
}

impl RoundSchedule {
    /// The factor of `lr` at `round` (from 0).
    pub fn factor(&self, round: usize) -> f32 {
        match *self {
            RoundSchedule::Constant => 1.0,
            RoundSchedule::Triangular {
                warmup_rounds,
                total_rounds,
            } => triangle(warmup_rounds, total_rounds, round),
        }
    }

    /// Checks the schedule; `field` is its path in the config.
    pub fn validate(&self, field: &str) -> Result<(), FieldError> {
        match *self {
            RoundSchedule::Constant => Ok(()),
            RoundSchedule::Triangular {
                warmup_rounds,
                total_rounds,
            } => {
                at_least_one(&format!("{field}.total_rounds"), total_rounds)?;
                if warmup_rounds >= total_rounds {
                    return Err(FieldError::new(
                        format!("{field}.warmup_rounds"),
                        format!(
                            "must be below total_rounds ({total_rounds}): the step size \
                             peaks at warmup_rounds and is back at 0 at total_rounds, \
                             got {warmup_rounds}"
                        ),
                    ));
                }
                Ok(())
            }
        }
    }
}

/// Checks an optional `round_schedule` (at `field`).
pub fn validate(schedule: Option<RoundSchedule>, field: &str) -> Result<(), FieldError> {
    schedule.map_or(Ok(()), |s| s.validate(field))
}

/// `lr` at `round` under `schedule`; without one, `lr` itself (bit for bit).
pub fn scheduled(schedule: Option<RoundSchedule>, lr: f32, round: usize) -> f32 {
    match schedule {
        None => lr,
        Some(s) => lr * s.factor(round),
    }
}

/// `np.interp(round, [0, warmup, total], [0, 1, 0])` ([`Triangular`]); with
/// `total <= warmup` (no round after the warm-up) the full step, 1.
pub fn triangle(warmup: usize, total: usize, round: usize) -> f32 {
    if total > warmup {
        Triangular { warmup, total }.factor(round)
    } else {
        1.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<RoundSchedule, toml::de::Error> {
        #[derive(Deserialize)]
        struct Holder {
            round_schedule: RoundSchedule,
        }
        toml::from_str::<Holder>(&format!("round_schedule = {text}")).map(|h| h.round_schedule)
    }

    #[test]
    fn the_triangle_is_the_codes_interp_at_chosen_rounds() {
        // The SR-FCA code's GlobalTrainer scaled to 480 rounds of 5 iterations:
        // interp(t, [0, 31, 477], [0, 1, 0]).
        let s = parse("{ kind = \"triangular\", warmup_rounds = 31, total_rounds = 477 }").unwrap();
        let interp = |t: f64| {
            if t <= 31.0 {
                t / 31.0
            } else if t <= 477.0 {
                (477.0 - t) / (477.0 - 31.0)
            } else {
                0.0
            }
        };
        for t in [0, 1, 15, 30, 31, 32, 100, 250, 476, 477, 479, 1000] {
            assert_eq!(s.factor(t), interp(t as f64) as f32, "round {t}");
        }
        assert_eq!(s.factor(0), 0.0);
        assert_eq!(s.factor(31), 1.0);
        assert_eq!(s.factor(477), 0.0);
        // No warm-up: the full step at round 0, then down.
        let s = RoundSchedule::Triangular {
            warmup_rounds: 0,
            total_rounds: 4,
        };
        let factors: Vec<f32> = (0..5).map(|t| s.factor(t)).collect();
        assert_eq!(factors, [1.0, 0.75, 0.5, 0.25, 0.0]);
    }

    #[test]
    fn no_schedule_and_constant_keep_lr_bit_for_bit() {
        for lr in [0.5f32, 0.1, 1e-7, 3.3] {
            for round in [0, 7, 10_000] {
                assert_eq!(scheduled(None, lr, round).to_bits(), lr.to_bits());
                let constant = scheduled(Some(RoundSchedule::Constant), lr, round);
                assert_eq!(constant.to_bits(), lr.to_bits());
            }
        }
        assert_eq!(
            parse("{ kind = \"constant\" }").unwrap(),
            RoundSchedule::Constant
        );
    }

    #[test]
    fn bad_schedules_name_their_field() {
        let err = parse("{ kind = \"triangular\", warmup_rounds = 8, total_rounds = 8 }")
            .unwrap()
            .validate("round_schedule")
            .unwrap_err();
        assert_eq!(err.field, "round_schedule.warmup_rounds");
        assert!(err.message.contains("total_rounds (8)"), "{}", err.message);
        let err = parse("{ kind = \"triangular\", warmup_rounds = 0, total_rounds = 0 }")
            .unwrap()
            .validate("round_schedule")
            .unwrap_err();
        assert_eq!(err.field, "round_schedule.total_rounds");
        let unknown = parse("{ kind = \"triangular\", warmup_rounds = 1, total = 8 }");
        assert!(unknown.unwrap_err().to_string().contains("total"));
        assert!(parse("{ kind = \"triangular\", warmup_rounds = 1 }").is_err());
        assert!(parse("{ kind = \"cosine\" }").is_err());
        assert_eq!(validate(None, "round_schedule"), Ok(()));
    }

    #[test]
    fn a_triangle_without_rounds_after_its_warm_up_is_the_full_step() {
        // SR-FCA's `refine_schedule` with refine_rounds <= warmup_rounds.
        assert!((0..10).all(|t| triangle(5, 5, t) == 1.0 && triangle(5, 2, t) == 1.0));
        assert_eq!(triangle(2, 4, 1), 0.5);
    }
}
