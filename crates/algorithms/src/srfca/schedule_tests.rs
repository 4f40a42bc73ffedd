//! REFINE's step-size schedule on a seeded mixture: each TrimmedMeanGD round
//! moves the cluster models by `lr · factor(r)`, whether members send their
//! gradient or their update after local steps.

use super::tests::{config, data, drive};
use fedcluster_core::ServerHalf;

use super::*;

/// The cluster models after `rounds` rounds of `c`.
fn models(c: &Config, data: &fedcluster_data::FederatedData, rounds: usize) -> Vec<Vec<f32>> {
    let server = drive(c, data, rounds, 1);
    let snap = server.snapshot();
    snap.replicas[0].models.iter().map(|m| m.to_vec()).collect()
}

/// ℓ2: round 0 is ONE_SHOT, REFINE's rounds 1-4 run at factors 0, ½, 1, ½
/// (warm-up over 2 of 4 rounds); the cluster models start at `w_0 = 0`.
fn pair(refine_local_steps: usize) -> (Config, Config) {
    let mut plain = config(Distance::L2, Threshold::Quantile { value: 0.2 });
    (plain.refine_rounds, plain.refine_local_steps) = (4, refine_local_steps);
    let mut scheduled = plain.clone();
    scheduled.refine_schedule = Some(RefineSchedule::Triangular { warmup_rounds: 2 });
    (plain, scheduled)
}

#[test]
fn refine_rounds_step_by_the_schedules_factors() {
    let data = data(1);
    let (plain, scheduled) = pair(1);
    // Factor 0: the first round leaves every cluster model at w_0.
    let first = models(&scheduled, &data, 2);
    assert!(first.len() >= 2, "{} clusters", first.len());
    assert!(first.iter().flatten().all(|&v| v == 0.0));
    // Factor ½ from w_0: half the plain first step, bit for bit (members
    // send their gradient, scaled; halving is exact).
    let half = models(&scheduled, &data, 3);
    let full = models(&plain, &data, 2);
    assert!(full.iter().flatten().any(|&v| v != 0.0));
    for (h, f) in half.iter().flatten().zip(full.iter().flatten()) {
        assert_eq!(*h, 0.5 * f);
    }
}

#[test]
fn local_steps_are_taken_at_the_scheduled_step_size() {
    let data = data(1);
    let (mut plain, scheduled) = pair(3);
    // Round 2 of the scheduled run trains at lr · ½ from w_0, as the plain
    // run's first REFINE round does at lr' = lr / 2.
    plain.lr = scheduled.lr / 2.0;
    let half = models(&scheduled, &data, 3);
    let plain = models(&plain, &data, 2);
    let mut moved = 0.0f32;
    for (h, p) in half.iter().flatten().zip(plain.iter().flatten()) {
        assert!((h - p).abs() <= 1e-5 * p.abs().max(1e-3), "{h} vs {p}");
        moved = moved.max(p.abs());
    }
    assert!(moved > 1e-3, "the models moved");
    // And at factor 1 (round 3) the scheduled step differs from a constant ½.
    assert_ne!(models(&scheduled, &data, 4), models(&pair(3).0, &data, 3));
}

#[test]
fn a_schedule_without_refine_names_its_field() {
    use crate::common::checked::Validate;
    let (_, mut c) = pair(1);
    c.then = AfterOneShot::Ifca { local_steps: 1 };
    assert_eq!(c.validate().unwrap_err().field, "refine_schedule");
}
