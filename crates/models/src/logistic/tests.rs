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

/// `softmax(z) - onehot(y)` written out plainly (all NaN for a class out of
/// range).
fn reference_softmax_minus_onehot(z: &mut [f32], y: u32) {
    let m = z.iter().fold(f32::NEG_INFINITY, |a, &b| a.max(b));
    let e: Vec<f32> = z.iter().map(|&v| (v - m).exp()).collect();
    let s = e.iter().fold(0.0f32, |a, &b| a + b);
    for (v, e) in z.iter_mut().zip(&e) {
        *v = e * (1.0 / s);
    }
    match z.get_mut(y as usize) {
        Some(v) => *v -= 1.0,
        None => z.fill(f32::NAN),
    }
}

#[test]
fn the_fused_loss_and_softmax_give_the_bits_of_the_two_calls() {
    let mut rng = rng(8);
    let mut rows: Vec<(Vec<f32>, u32)> = (0..50)
        .map(|i| (normal(&mut rng, 10, 4.0), (i % 10) as u32))
        .collect();
    rows.push((vec![0.0; 3], 7)); // class out of range
    rows.push((vec![1.0, f32::NAN, 2.0], 0));
    rows.push((vec![1.0, f32::INFINITY, 2.0], 2));
    rows.push((vec![-200.0, 0.0, 300.0], 0)); // an exponential underflows
    rows.push((vec![1.0, f32::NEG_INFINITY, 2.0], 1)); // an infinite loss
    rows.push((vec![f32::NEG_INFINITY; 3], 1));
    // A zero maximum of either sign, met in different running maxima.
    rows.push((vec![-0.0, 0.0, -1.0], 0));
    rows.push((vec![-0.0, -3.0, -2.0, -5.0, 0.0, -1.0], 4));
    rows.push((vec![0.0, -3.0, -2.0, -5.0, -0.0, -1.0], 0));
    for (z, y) in rows {
        let (mut fused, mut apart) = (z.clone(), z.clone());
        let loss = loss_and_softmax_minus_onehot(&mut fused, y);
        let mut tested = z.clone();
        let finite = softmax_minus_onehot_parts(&mut tested, y).loss_is_finite();
        assert_eq!(finite, loss.is_finite(), "{z:?} {y}");
        let want = sample_loss(&apart, y);
        reference_softmax_minus_onehot(&mut apart, y);
        assert_eq!(loss.to_bits(), want.to_bits(), "{z:?} {y}");
        let bits = |v: &[f32]| v.iter().map(|f| f.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&fused), bits(&apart), "{z:?} {y}");
    }
}

#[test]
fn train_takes_the_steps_of_plain_gradient_descent_bit_for_bit() {
    let mut rng = rng(13);
    let m = LogisticRegression::new(6, 4).unwrap();
    let y = classes(&mut rng, 2, 4);
    let huge = {
        let mut x = normal(&mut rng, 12, 1.0);
        x[3] = 1e37; // features past the bound: the plain loop runs
        x
    };
    let cases = [
        (normal(&mut rng, 12, 1.0), 0.5, 5),  // the shortcut
        (normal(&mut rng, 12, 1.0), 3e38, 3), // diverges: a non-finite loss
        (huge, 0.5, 4),
        (normal(&mut rng, 12, 1.0), 0.5, 0),
    ];
    for (x, lr, steps) in cases {
        let b = Batch::new(&x, Targets::Class(&y), 6).unwrap();
        let start = normal(&mut rng, m.num_params(), 0.5);
        let (mut fast, mut plain) = (start.clone(), start);
        let mut ws = Workspace::default();
        let mut grad = vec![0.0; m.num_params()];
        let got = m.train(&mut fast, b, lr, steps, &mut ws);
        let want = gradient_descent(&m, &mut plain, b, lr, steps, &mut grad, &mut ws);
        assert_eq!(got.to_bits(), want.to_bits(), "lr {lr} steps {steps}");
        if lr > 1.0 {
            assert!(!got.is_finite(), "lr {lr} diverges after the first step");
        }
        let bits = |v: &[f32]| v.iter().map(|f| f.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&fast), bits(&plain), "lr {lr} steps {steps}");
    }
    // Three samples: the product is not fused with the update.
    let (x, y3) = (normal(&mut rng, 18, 1.0), classes(&mut rng, 3, 4));
    let b = Batch::new(&x, Targets::Class(&y3), 6).unwrap();
    let start = normal(&mut rng, m.num_params(), 0.5);
    let (mut fast, mut plain) = (start.clone(), start);
    let mut ws = Workspace::default();
    let got = m.train(&mut fast, b, 0.5, 5, &mut ws);
    let mut grad = vec![0.0; m.num_params()];
    let want = gradient_descent(&m, &mut plain, b, 0.5, 5, &mut grad, &mut ws);
    assert_eq!((got.to_bits(), &fast), (want.to_bits(), &plain));
    // The small-clients shape, one and two samples: the update is fused with
    // the next step's logits too, where the CPU runs that.
    let wide = LogisticRegression::new(196, 10).unwrap();
    for n in [1, 2] {
        let (x, yn) = (normal(&mut rng, n * 196, 1.0), classes(&mut rng, n, 10));
        let b = Batch::new(&x, Targets::Class(&yn), 196).unwrap();
        let start = normal(&mut rng, wide.num_params(), 0.1);
        let (mut fast, mut plain) = (start.clone(), start);
        let mut ws = Workspace::default();
        let got = wide.train(&mut fast, b, 0.1, 5, &mut ws);
        let mut grad = vec![0.0; wide.num_params()];
        let want = gradient_descent(&wide, &mut plain, b, 0.1, 5, &mut grad, &mut ws);
        assert_eq!((got.to_bits(), &fast), (want.to_bits(), &plain), "n {n}");
    }
    let x = normal(&mut rng, 12, 1.0);
    let b = Batch::new(&x, Targets::Class(&y), 6).unwrap();
    assert!(m.gradient_is_finite_with_loss(b, 5));
    assert!(!m.gradient_is_finite_with_loss(b, 0));
}

#[test]
fn the_row_maximum_is_one_running_maximum_s_value() {
    let mut rng = rng(31);
    let specials = [f32::NAN, f32::INFINITY, f32::NEG_INFINITY, 0.0, -0.0];
    for len in 1..20 {
        for trial in 0..40 {
            let mut row = normal(&mut rng, len, 3.0);
            // Some rows with NaNs, infinities and zeros at varying places.
            for (i, v) in row.iter_mut().enumerate() {
                if (i + trial) % 7 == 0 {
                    *v = specials[(i + trial) % specials.len()];
                }
            }
            let want = row.iter().fold(f32::NEG_INFINITY, |a, &b| a.max(b));
            let got = row_max(&row);
            assert!(
                got == want || (got.is_nan() && want.is_nan()),
                "{row:?}: {got} against {want}"
            );
        }
    }
    assert_eq!(row_max(&[f32::NAN; 5]), f32::NEG_INFINITY);
}
