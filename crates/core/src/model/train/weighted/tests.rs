//! Weighted training on a one-parameter model whose weighted optimum is known:
//! `ℓ_i(θ) = ½(θ − y_i)²`, so `L_w` is smallest at the weighted mean of `y`.

use super::*;
use crate::model::Targets;
use crate::rng::{Purpose, stream};
use crate::train::MinibatchOptimizer;
use crate::train::full_batch::gradient_descent;

/// `θ` estimates the targets' mean: loss `mean ½(θ − y)²`.
struct Mean;

impl Model for Mean {
    fn name(&self) -> &'static str {
        "mean"
    }
    fn num_params(&self) -> usize {
        1
    }
    fn input_dim(&self) -> usize {
        1
    }
    fn init(&self, _rng: &mut Rng, out: &mut [f32]) {
        out.fill(0.0);
    }
    fn loss(&self, params: &[f32], batch: Batch<'_>, _ws: &mut Workspace) -> f64 {
        let Targets::Real(y) = batch.y else {
            return f64::NAN;
        };
        let sum: f64 = y
            .iter()
            .map(|y| 0.5 * f64::from(params[0] - y).powi(2))
            .sum();
        sum / y.len() as f64
    }
    fn loss_grad(
        &self,
        params: &[f32],
        batch: Batch<'_>,
        grad: &mut [f32],
        ws: &mut Workspace,
    ) -> f64 {
        let Targets::Real(y) = batch.y else {
            return f64::NAN;
        };
        grad[0] = y.iter().map(|y| params[0] - y).sum::<f32>() / y.len() as f32;
        self.loss(params, batch, ws)
    }
    fn forward_flops_per_sample(&self) -> u64 {
        1
    }
}

const X: [f32; 4] = [0.0; 4];
const Y: [f32; 4] = [0.0, 1.0, 2.0, 3.0];

fn batch() -> Batch<'static> {
    Batch::new(&X, Targets::Real(&Y), 1).unwrap()
}

fn sgd(lr: f32, batch_size: usize) -> MinibatchSpec<'static> {
    MinibatchSpec {
        optimizer: MinibatchOptimizer::Sgd {
            momentum: 0.0,
            weight_decay: 0.0,
        },
        lr,
        batch_size,
        pull: None,
        schedule: None,
        decay: None,
    }
}

#[test]
fn full_batch_descent_finds_the_weighted_mean_and_unit_weights_are_plain_descent() {
    let mut ws = Workspace::default();
    let mut grad = [0.0f32];
    // Weights (1, 0, 0, 3) average to 1, so each step contracts by 1 − lr.
    let mut theta = [0.0f32];
    let start = descent(
        &Mean,
        &mut theta,
        batch(),
        &[1.0, 0.0, 0.0, 3.0],
        0.5,
        60,
        &mut grad,
        &mut ws,
    );
    assert!((theta[0] - 2.25).abs() < 1e-5, "{theta:?}");
    // L_w(0) = (1·0 + 3·4.5) / 4.
    assert!((start - 3.375).abs() < 1e-12, "{start}");
    let (mut a, mut b) = ([0.3f32], [0.3f32]);
    let la = descent(
        &Mean,
        &mut a,
        batch(),
        &[1.0; 4],
        0.1,
        5,
        &mut grad,
        &mut ws,
    );
    let lb = gradient_descent(&Mean, &mut b, batch(), 0.1, 5, &mut grad, &mut ws);
    assert!(
        (a[0] - b[0]).abs() < 1e-6 && (la - lb).abs() < 1e-9,
        "{a:?} {b:?}"
    );
}

#[test]
fn minibatches_drawn_by_weight_never_visit_a_weightless_row() {
    let mut ws = Workspace::default();
    let mut state = OptimizerState::default();
    let mut rng = stream(3, Purpose::Client, 0, 0);
    // Only row 2 weighs: every minibatch is (2, 2), and the scale 1/4 makes
    // each SGD step contract by 1 − lr/4.
    let mut theta = [0.0f32];
    let w = [0.0, 0.0, 1.0, 0.0];
    minibatch_steps(
        &Mean,
        &mut theta,
        batch(),
        &w,
        &sgd(1.0, 2),
        80,
        &mut state,
        &mut rng,
        &mut ws,
    );
    assert!((theta[0] - 2.0).abs() < 1e-6, "{theta:?}");
    let mut rows = Vec::new();
    draw_rows(&[0.0, 0.0, 1.0, 1.0], 50, &mut rng, &mut rows);
    assert!(rows.iter().all(|&r| r == 2), "{rows:?}");
}

#[test]
fn minibatches_drawn_by_weight_settle_near_the_weighted_mean() {
    let mut ws = Workspace::default();
    let mut state = OptimizerState::default();
    let mut rng = stream(5, Purpose::Client, 0, 0);
    let mut theta = [0.0f32];
    let w = [1.0, 0.0, 0.0, 3.0];
    for _ in 0..20 {
        minibatch_steps(
            &Mean,
            &mut theta,
            batch(),
            &w,
            &sgd(0.05, 4),
            50,
            &mut state,
            &mut rng,
            &mut ws,
        );
    }
    assert!((theta[0] - 2.25).abs() < 0.3, "{theta:?}");
}

#[test]
fn zero_weights_take_no_step_and_bad_weights_give_nan_without_touching_params() {
    let mut ws = Workspace::default();
    let mut state = OptimizerState::default();
    let mut rng = stream(1, Purpose::Client, 0, 0);
    let mut grad = [0.0f32];
    let mut theta = [0.7f32];
    let loss = minibatch_steps(
        &Mean,
        &mut theta,
        batch(),
        &[0.0; 4],
        &sgd(0.1, 2),
        5,
        &mut state,
        &mut rng,
        &mut ws,
    );
    assert_eq!((loss, theta), (0.0, [0.7]));
    for bad in [[1.0, f32::NAN, 1.0, 1.0], [1.0, -1.0, 1.0, 1.0]] {
        let l = minibatch_steps(
            &Mean,
            &mut theta,
            batch(),
            &bad,
            &sgd(0.1, 2),
            5,
            &mut state,
            &mut rng,
            &mut ws,
        );
        let g = descent(&Mean, &mut theta, batch(), &bad, 0.1, 5, &mut grad, &mut ws);
        assert!(l.is_nan() && g.is_nan());
        assert_eq!(theta, [0.7]);
    }
    // One weight per sample, or nothing.
    assert!(
        descent(
            &Mean,
            &mut theta,
            batch(),
            &[1.0; 3],
            0.1,
            5,
            &mut grad,
            &mut ws
        )
        .is_nan()
    );
}
