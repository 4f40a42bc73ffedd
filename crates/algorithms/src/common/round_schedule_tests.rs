//! `round_schedule` in every baseline that takes it (`global`, whose config
//! `oracle` shares, `ifca`, `cfl`, `local`; model and gradient averaging),
//! each built through the algorithm table and run on three linear-regression
//! clients with full-batch gradient descent from zero models, so that a
//! round's step is the only thing the schedule changes.

use fedcluster_core::{Batch, ServerHalf, Targets};
use fedcluster_models::LinearRegression;
use fedcluster_sim::InProcess;

use crate::cfl::Cfl;
use crate::common::checked::Checked;
use crate::global::Global;
use crate::ifca::Ifca;
use crate::local::Local;
use crate::table::{Algorithm, Setup};

const X: [f32; 8] = [1.0, 0.0, 0.0, 1.0, 1.0, 1.0, 2.0, -1.0];
const Y: [[f32; 4]; 3] = [
    [1.0, 2.0, 3.0, 0.0],
    [-1.0, 0.5, 2.0, 1.0],
    [0.0, 1.0, -2.0, 3.0],
];

/// Warm-up over rounds 0-2 (factors 0, ½, 1), then ½ at round 3 and 0 from 4.
const TRIANGLE: &str =
    "round_schedule = { kind = \"triangular\", warmup_rounds = 2, total_rounds = 4 }";

fn checked<A: Algorithm>(text: &str) -> Result<Checked<A::Config>, crate::FieldError> {
    Checked::new(toml::from_str::<A::Config>(text).unwrap())
}

/// Every model of `A` (its cluster models, or each client's own) after
/// `rounds` rounds of the `[algorithm]` table `text`.
fn models<A: Algorithm>(text: &str, rounds: usize) -> Vec<f32> {
    let config = checked::<A>(text).unwrap();
    let model = LinearRegression::new(2).unwrap();
    let batches: Vec<Batch<'_>> = Y
        .iter()
        .map(|y| Batch::new(&X, Targets::Real(y), 2).unwrap())
        .collect();
    let m = batches.len();
    let client = A::client(&config);
    let mut server = A::server(config, &Setup::new(&model, m, 1)).unwrap();
    let mut transport = InProcess::new(vec![client; m], &batches, &model, 1, 1).unwrap();
    fedcluster_sim::run(&mut server, &mut transport, rounds, 1, |_| Ok(())).unwrap();
    let snapshot = server.snapshot();
    snapshot.replicas[0].models.concat()
}

/// Each baseline's models after `rounds` rounds at step size `lr`, with the
/// `schedule` line (or none).
fn runs(lr: &str, schedule: &str, rounds: usize) -> Vec<(&'static str, Vec<f32>)> {
    let text = |rest: &str| format!("lr = {lr}\ninit = {{ kind = \"zeros\" }}\n{rest}\n{schedule}");
    let gradient = "aggregation = \"gradient\"";
    vec![
        ("global", models::<Global>(&text("local_steps = 2"), rounds)),
        (
            "global, gradient",
            models::<Global>(&text(gradient), rounds),
        ),
        (
            "ifca",
            models::<Ifca>(
                &text("clusters = 2\naggregation = \"model\"\nlocal_steps = 2"),
                rounds,
            ),
        ),
        (
            "ifca, gradient",
            models::<Ifca>(&text(&format!("clusters = 2\n{gradient}")), rounds),
        ),
        (
            "cfl",
            models::<Cfl>(&text("local_steps = 2\neps1 = 0.5\neps2 = 0.1"), rounds),
        ),
        ("local", models::<Local>(&text("local_steps = 2"), rounds)),
    ]
}

#[test]
fn at_factor_0_the_first_round_leaves_every_baselines_models_at_their_start() {
    let scheduled = runs("0.1", TRIANGLE, 1);
    let plain = runs("0.1", "", 1);
    for ((name, s), (_, p)) in scheduled.iter().zip(&plain) {
        assert!(s.iter().all(|&v| v == 0.0), "{name}: {s:?}");
        assert!(p.iter().any(|&v| v != 0.0), "{name}: a plain round moves");
    }
}

#[test]
fn the_second_round_trains_at_half_the_step_bit_for_bit() {
    // Round 1 at factor ½ from the untouched start is a plain first round at
    // lr / 2 (halving is exact), and not one at lr.
    let scheduled = runs("0.1", TRIANGLE, 2);
    let half = runs("0.05", "", 1);
    let full = runs("0.1", "", 1);
    for (((name, s), (_, h)), (_, f)) in scheduled.iter().zip(&half).zip(&full) {
        assert_eq!(s, h, "{name}");
        assert_ne!(s, f, "{name}");
    }
}

#[test]
fn past_total_rounds_the_step_is_0_and_the_models_stay() {
    let at_4 = runs("0.1", TRIANGLE, 4);
    assert_eq!(runs("0.1", TRIANGLE, 6), at_4);
    assert_ne!(runs("0.1", TRIANGLE, 3), at_4, "round 3 trains at ½");
}

#[test]
fn without_the_key_or_with_a_constant_schedule_the_runs_are_the_same_bits() {
    let plain = runs("0.1", "", 3);
    assert_eq!(
        plain,
        runs("0.1", "round_schedule = { kind = \"constant\" }", 3)
    );
    // The default is not written back (resolved configs, checkpoints).
    let config = checked::<Global>("lr = 0.1").unwrap().into_inner();
    assert!(!toml::to_string(&config).unwrap().contains("round_schedule"));
}

#[test]
fn each_baseline_refuses_a_bad_schedule_naming_the_field() {
    let bad = "lr = 0.1\neps1 = 0.5\neps2 = 0.1\nclusters = 2\n\
               round_schedule = { kind = \"triangular\", warmup_rounds = 4, total_rounds = 4 }";
    // Each config takes the keys it knows (deny_unknown_fields): trim them.
    let only = |keys: &[&str]| {
        bad.lines()
            .filter(|l| keys.iter().any(|k| l.starts_with(k)))
            .collect::<Vec<_>>()
            .join("\n")
    };
    let field = "round_schedule.warmup_rounds";
    let global = only(&["lr", "round_schedule"]);
    assert_eq!(checked::<Global>(&global).unwrap_err().field, field);
    assert_eq!(checked::<Local>(&global).unwrap_err().field, field);
    let ifca = only(&["lr", "clusters", "round_schedule"]);
    assert_eq!(checked::<Ifca>(&ifca).unwrap_err().field, field);
    let cfl = only(&["lr", "eps", "round_schedule"]);
    assert_eq!(checked::<Cfl>(&cfl).unwrap_err().field, field);
}
