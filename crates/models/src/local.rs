//! Local training loops shared by algorithms.
//!
//! Divergence is the caller's to detect and handle: these loops never panic on
//! non-finite numbers, they stop and report a non-finite loss.

use fedcluster_core::model::gradient_descent;
use fedcluster_core::{Batch, Model, Workspace};

/// `steps` full-batch gradient-descent steps on `batch` with `grad` as scratch:
/// [`fedcluster_core::model::gradient_descent`], the plain loop, whatever the
/// model (the reference that shortcuts such as the MLP's are tested against).
pub fn gd_steps(
    model: &dyn Model,
    params: &mut [f32],
    batch: Batch<'_>,
    lr: f32,
    steps: usize,
    grad: &mut [f32],
    ws: &mut Workspace,
) -> f64 {
    gradient_descent(model, params, batch, lr, steps, grad, ws)
}

/// `steps` gradient-descent steps through [`Model::train`], which a model may
/// carry out with an exact shortcut; scratch comes from the workspace.
pub fn gd_steps_ws(
    model: &dyn Model,
    params: &mut [f32],
    batch: Batch<'_>,
    lr: f32,
    steps: usize,
    ws: &mut Workspace,
) -> f64 {
    model.train(params, batch, lr, steps, ws)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::{normal, rng};
    use crate::{LinearRegression, LogisticRegression};
    use fedcluster_core::Targets;
    use rand::Rng as _;

    /// Least squares `argmin ‖Xθ - y‖²` from the normal equations, in `f64`
    /// (Gaussian elimination with partial pivoting).
    fn least_squares(x: &[f32], y: &[f32], d: usize) -> Vec<f64> {
        let mut a = vec![0.0f64; d * (d + 1)];
        for (xi, &yi) in x.chunks_exact(d).zip(y) {
            for r in 0..d {
                for c in 0..d {
                    a[r * (d + 1) + c] += f64::from(xi[r]) * f64::from(xi[c]);
                }
                a[r * (d + 1) + d] += f64::from(xi[r]) * f64::from(yi);
            }
        }
        for col in 0..d {
            let piv = (col..d)
                .max_by(|&i, &j| {
                    a[i * (d + 1) + col]
                        .abs()
                        .total_cmp(&a[j * (d + 1) + col].abs())
                })
                .unwrap();
            for c in 0..=d {
                a.swap(col * (d + 1) + c, piv * (d + 1) + c);
            }
            for r in 0..d {
                if r != col {
                    let f = a[r * (d + 1) + col] / a[col * (d + 1) + col];
                    for c in 0..=d {
                        a[r * (d + 1) + c] -= f * a[col * (d + 1) + c];
                    }
                }
            }
        }
        (0..d)
            .map(|r| a[r * (d + 1) + d] / a[r * (d + 1) + r])
            .collect()
    }

    #[test]
    fn linear_gd_decreases_monotonically_to_least_squares() {
        let (n, d) = (60, 5);
        let mut rng = rng(41);
        let x = normal(&mut rng, n * d, 1.0);
        let truth = normal(&mut rng, d, 1.0);
        let noise = normal(&mut rng, n, 0.3);
        let y: Vec<f32> = x
            .chunks_exact(d)
            .zip(&noise)
            .map(|(xi, e)| xi.iter().zip(&truth).map(|(a, t)| a * t).sum::<f32>() + e)
            .collect();
        let m = LinearRegression::new(d).unwrap();
        let b = Batch::new(&x, Targets::Real(&y), d).unwrap();
        let (mut theta, mut grad, mut ws) = (vec![0.0; d], vec![0.0; d], Workspace::default());
        let mut prev = f64::INFINITY;
        for _ in 0..300 {
            let loss = gd_steps(&m, &mut theta, b, 0.1, 1, &mut grad, &mut ws);
            assert!(
                loss <= prev * (1.0 + 1e-6),
                "loss went up: {prev} -> {loss}"
            );
            prev = loss;
        }
        let ls = least_squares(&x, &y, d);
        for (t, s) in theta.iter().zip(&ls) {
            assert!((f64::from(*t) - s).abs() < 1e-3, "{theta:?} vs {ls:?}");
        }
        // Several steps at once reach the same point as single steps.
        let mut again = vec![0.0; d];
        let first = gd_steps(&m, &mut again, b, 0.1, 300, &mut grad, &mut ws);
        assert_eq!(first, m.loss(&[0.0; 5], b, &mut ws));
        assert_eq!(again, theta);
        let mut via_ws = vec![0.0; d];
        assert_eq!(gd_steps_ws(&m, &mut via_ws, b, 0.1, 300, &mut ws), first);
        assert_eq!(via_ws, theta);
    }

    #[test]
    fn zero_steps_return_the_loss_and_leave_params() {
        let m = LinearRegression::new(2).unwrap();
        let b = Batch::new(&[1.0, 1.0], Targets::Real(&[1.0]), 2).unwrap();
        let mut theta = [1.0, 1.0];
        let l = gd_steps(
            &m,
            &mut theta,
            b,
            0.1,
            0,
            &mut [0.0; 2],
            &mut Workspace::default(),
        );
        assert_eq!((l, theta), (1.0, [1.0, 1.0]));
    }

    #[test]
    fn divergence_is_reported_not_panicked() {
        let m = LinearRegression::new(2).unwrap();
        let b = Batch::new(&[3.0, 4.0], Targets::Real(&[1.0]), 2).unwrap();
        let mut theta = [0.0, 0.0];
        let l = gd_steps(
            &m,
            &mut theta,
            b,
            1e3,
            100,
            &mut [0.0; 2],
            &mut Workspace::default(),
        );
        assert!(!l.is_finite());
        let bad = Batch::new(&[3.0, 4.0], Targets::Class(&[0]), 2).unwrap();
        let mut theta = [0.0, 0.0];
        let l = gd_steps(
            &m,
            &mut theta,
            bad,
            0.1,
            3,
            &mut [0.0; 2],
            &mut Workspace::default(),
        );
        assert!(l.is_nan() && theta == [0.0, 0.0]);
    }

    #[test]
    fn logistic_gd_separates_three_classes() {
        let (n, d, c) = (150, 4, 3);
        let mut rng = rng(42);
        let centers = [
            [3.0, 0.0, 1.0, 0.0],
            [-3.0, 1.0, 0.0, 0.0],
            [0.0, -3.0, 0.0, 1.0],
        ];
        let y: Vec<u32> = (0..n).map(|_| rng.random_range(0..c as u32)).collect();
        let noise = normal(&mut rng, n * d, 0.7);
        let x: Vec<f32> = y
            .iter()
            .zip(noise.chunks_exact(d))
            .flat_map(|(&yi, e)| {
                centers[yi as usize]
                    .iter()
                    .zip(e)
                    .map(|(a, b)| a + b)
                    .collect::<Vec<_>>()
            })
            .collect();
        let m = LogisticRegression::new(d, c).unwrap();
        let b = Batch::new(&x, Targets::Class(&y), d).unwrap();
        let mut params = vec![0.0; m.num_params()];
        m.init(&mut rng, &mut params);
        let mut ws = Workspace::default();
        let before = m.count_correct(&params, b, &mut ws).unwrap();
        let mut grad = vec![0.0; m.num_params()];
        let start = gd_steps(&m, &mut params, b, 0.5, 200, &mut grad, &mut ws);
        let end = m.loss(&params, b, &mut ws);
        let correct = m.count_correct(&params, b, &mut ws).unwrap();
        assert!(end < 0.2 * start, "loss {start} -> {end}");
        assert!(
            correct as f64 > 0.95 * n as f64,
            "accuracy {correct}/{n} (before: {before})"
        );
    }
}

#[cfg(test)]
mod momentum_tests {
    use crate::LinearRegression;
    use crate::testutil::{normal, rng};
    use fedcluster_core::model::gradient_descent;
    use fedcluster_core::{Batch, Model, Targets, Workspace};

    #[test]
    fn momentum_zero_is_gradient_descent_and_momentum_converges() {
        let (n, d) = (40, 4);
        let mut r = rng(5);
        let x: Vec<f32> = normal(&mut r, n * d, 1.0);
        let y: Vec<f32> = x
            .chunks(d)
            .map(|row| row.iter().sum::<f32>() * 0.5)
            .collect();
        let batch = Batch::new(&x, Targets::Real(&y), d).unwrap();
        let model = LinearRegression::new(d).unwrap();
        let mut ws = Workspace::default();
        let (mut a, mut b, mut u) = (vec![0.0; d], vec![0.0; d], vec![0.0; d]);
        let mut grad = vec![0.0; d];
        gradient_descent(&model, &mut a, batch, 0.05, 30, &mut grad, &mut ws);
        model.train_momentum(&mut b, &mut u, batch, 0.05, 0.0, 30, &mut ws);
        assert_eq!(a, b);
        let (mut c, mut v) = (vec![0.0; d], vec![0.0; d]);
        let start = model.train_momentum(&mut c, &mut v, batch, 0.05, 0.9, 200, &mut ws);
        let end = model.loss(&c, batch, &mut ws);
        assert!(
            end < 1e-6 * start.max(1.0),
            "momentum GD reached {end} from {start}"
        );
        assert!(
            v.iter().any(|x| *x != 0.0),
            "the momentum buffer is returned"
        );
    }
}
