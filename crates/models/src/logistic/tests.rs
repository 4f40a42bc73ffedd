//! Unit tests of [`LogisticRegression`](super::LogisticRegression).

use super::*;
use crate::gradcheck::max_rel_error;
use crate::testutil::{assert_assign_matches_default, assert_rel, classes, normal, rng};

#[test]
fn loss_and_gradient_match_a_hand_computed_example() {
    let m = LogisticRegression::new(1, 2).unwrap();
    let b = Batch::new(&[2.0], Targets::Class(&[0]), 1).unwrap();
    let mut ws = Workspace::default();
    let mut g = [0.0; 4];
    // Zero parameters: p = (1/2, 1/2), loss ln 2, Δ = (-1/2, 1/2).
    let l = m.loss_grad(&[0.0; 4], b, &mut g, &mut ws);
    assert!((l - 2f64.ln()).abs() < 1e-7);
    assert_eq!(g, [-1.0, 1.0, -0.5, 0.5]);
    assert_eq!(m.count_correct(&[0.0; 4], b, &mut ws), Some(1));
    assert_eq!(m.count_correct(&[-1.0, 1.0, 0.0, 0.0], b, &mut ws), Some(0));
}

#[test]
fn gradient_matches_finite_differences() {
    let mut rng = rng(21);
    for (n, d, c) in [(20, 5, 3), (9, 2, 2), (40, 8, 10), (1, 3, 4)] {
        let m = LogisticRegression::new(d, c).unwrap();
        let x = normal(&mut rng, n * d, 1.0);
        let y = classes(&mut rng, n, c as u32);
        let params = normal(&mut rng, m.num_params(), 0.5);
        let b = Batch::new(&x, Targets::Class(&y), d).unwrap();
        let err = max_rel_error(&m, &params, b, 1e-2);
        assert!(err < 2e-3, "n={n} d={d} c={c}: relative error {err}");
    }
}

#[test]
fn loss_is_stable_for_large_logits() {
    let m = LogisticRegression::new(2, 3).unwrap();
    let x = [1e3, -2e3, 5e2, 1e3];
    let y = [2, 0];
    let b = Batch::new(&x, Targets::Class(&y), 2).unwrap();
    let params = [1.0, 0.0, 0.0, 1.0, -1.0, -1.0, 0.0, 0.0, 0.0];
    let mut g = [0.0; 9];
    let l = m.loss_grad(&params, b, &mut g, &mut Workspace::default());
    // Sample 0: logits (1e3, -2e3, 1e3), target 2: loss ln 2. Sample 1: logits
    // (5e2, 1e3, -1.5e3), target 0: loss 5e2 (plus e^-500, negligible).
    assert_rel(l, (2f64.ln() + 500.0) / 2.0, 1e-6, "loss");
    assert!(g.iter().all(|v| v.is_finite()));
}

#[test]
fn batched_kernels_equal_per_model_computation() {
    let (d, c, n, group, replicas) = (6, 4, 50, 2, 3);
    let m = LogisticRegression::new(d, c).unwrap();
    let p = m.num_params();
    let mut rng = rng(22);
    let models = normal(&mut rng, replicas * group * p, 1.0);
    let x = normal(&mut rng, n * d, 1.0);
    // Labels from model 3 (replica 1, index 1), so replica 1 should pick it.
    let mut ws = Workspace::default();
    let mut z = vec![0.0; n * c];
    m.logits(&x, &models[3 * p..4 * p], 1, &mut [], &mut z);
    let y: Vec<u32> = z
        .chunks_exact(c)
        .map(|zi| zi.iter().position(|&v| v == row_max(zi)).unwrap() as u32)
        .collect();
    let b = Batch::new(&x, Targets::Class(&y), d).unwrap();

    let want: Vec<f64> = models
        .chunks_exact(p)
        .map(|t| m.loss(t, b, &mut ws))
        .collect();
    let mut losses = vec![0.0; replicas * group];
    m.losses(&models, b, &mut losses, &mut ws);
    for (l, w) in losses.iter().zip(&want) {
        assert_rel(*l, *w, 1e-5, "losses");
    }

    let chosen = assert_assign_matches_default(&m, &models, group, b, 1e-5);
    assert_eq!(chosen.len(), replicas);
    assert_eq!(
        chosen[1], 1,
        "the replica holding the data's model picks it"
    );
    assert_assign_matches_default(&m, &models[..p], 1, b, 1e-5);
}

#[test]
fn mismatched_batches_give_nan_without_panicking() {
    let m = LogisticRegression::new(2, 3).unwrap();
    let x = [1.0, 2.0, 3.0, 4.0];
    let params = [0.1; 9];
    let mut ws = Workspace::default();
    let mut g = [0.0; 9];
    let out_of_range = Batch::new(&x, Targets::Class(&[0, 3]), 2).unwrap();
    assert!(m.loss_grad(&params, out_of_range, &mut g, &mut ws).is_nan());
    assert!(g.iter().any(|v| v.is_nan()));
    assert!(m.check_batch(out_of_range).is_err());
    let real = Batch::new(&x, Targets::Real(&[0.0, 1.0]), 2).unwrap();
    assert!(m.loss(&params, real, &mut ws).is_nan());
    assert_eq!(m.count_correct(&params, real, &mut ws), Some(0));
    let (mut losses, mut chosen, mut grads) = ([0.0; 2], [5; 1], [0.0; 9]);
    let models = [0.1; 18];
    m.assign_and_grad(
        &models,
        2,
        real,
        &mut losses,
        &mut chosen,
        &mut grads,
        &mut ws,
    );
    assert!(losses.iter().all(|l| l.is_nan()) && chosen == [0]);
    assert!(
        m.check_batch(Batch::new(&x, Targets::Class(&[0, 2]), 2).unwrap())
            .is_ok()
    );
}

#[test]
fn constructor_and_init() {
    assert!(LogisticRegression::new(0, 3).is_err());
    assert!(LogisticRegression::new(3, 1).is_err());
    let m = LogisticRegression::new(4, 3).unwrap();
    assert_eq!(m.num_params(), 15);
    let mut out = vec![0.0; 15];
    m.init(&mut rng(23), &mut out);
    assert!(out.iter().all(|v| v.abs() < 0.5) && out.iter().any(|v| v.abs() > 0.1));
}
