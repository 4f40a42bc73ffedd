//! The FedProx local problem (Li, Sahu, Zaheer, Sanjabi, Talwalkar, Smith,
//! "Federated Optimization in Heterogeneous Networks", MLSys 2020), solved to a
//! tolerance: `argmin_θ L(θ) + (μ/2)‖θ − θ₀‖²`.
//!
//! Su, Xu and Yang (IEEE Trans. Inf. Theory 2024, Phase 2) write it with
//! `μ = 1/η`. Full-batch gradient descent with step `η` on the proximal objective
//! is then the fixed-point iteration `θ <- θ₀ − η ∇L(θ)`, which contracts exactly
//! when `η · L_max < 1` (their condition `γ < 1`).

use fedcluster_core::params::{all_finite, axpy, norm};
use fedcluster_core::{Batch, Model, Workspace};

/// How the proximal problem is solved.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ProxSolve {
    /// Step size of the inner gradient descent.
    pub lr: f32,
    /// Proximal weight `μ`.
    pub mu: f32,
    /// Stop when `‖∇L(θ) + μ(θ − θ₀)‖ <= tol · ‖∇L(θ₀)‖`.
    pub tol: f64,
    /// Stop after this many steps in any case.
    pub max_steps: usize,
}

/// What a proximal solve did.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ProxOutcome {
    /// Loss `L(θ₀)` at the starting point (non-finite if training diverged).
    pub start_loss: f64,
    /// Gradient steps taken.
    pub steps: usize,
    /// Whether the tolerance was met within `max_steps`.
    pub converged: bool,
}

/// Solves the proximal problem from `params = θ₀` in place, with `grad` and
/// `origin` (a copy of `θ₀`) as scratch of `params.len()` values each.
/// Non-finite values stop the loop with a non-finite `start_loss`, as
/// [`fedcluster_core::model::gradient_descent`] does.
pub fn prox_descent(
    model: &dyn Model,
    params: &mut [f32],
    batch: Batch<'_>,
    solve: ProxSolve,
    grad: &mut [f32],
    origin: &mut [f32],
    ws: &mut Workspace,
) -> ProxOutcome {
    origin.copy_from_slice(params);
    let mut outcome = ProxOutcome {
        start_loss: f64::NAN,
        steps: 0,
        converged: false,
    };
    let mut first_norm = 0.0;
    loop {
        let loss = model.loss_grad(params, batch, grad, ws);
        if outcome.steps == 0 {
            outcome.start_loss = loss;
        }
        if !loss.is_finite() || !all_finite(grad) {
            outcome.start_loss = f64::NAN;
            return outcome;
        }
        // ∇F(θ) = ∇L(θ) + μ(θ − θ₀).
        for ((g, p), a) in grad.iter_mut().zip(params.iter()).zip(origin.iter()) {
            *g += solve.mu * (p - a);
        }
        let g_norm = norm(grad);
        if outcome.steps == 0 {
            first_norm = g_norm;
        }
        if g_norm <= solve.tol * first_norm {
            outcome.converged = true;
            return outcome;
        }
        if outcome.steps == solve.max_steps {
            return outcome;
        }
        axpy(-solve.lr, grad, params);
        outcome.steps += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::LinearRegression;
    use crate::testutil::{normal, rng};
    use fedcluster_core::Targets;

    #[test]
    fn linear_prox_meets_its_stationarity_condition() {
        let (n, d) = (10, 6);
        let mut r = rng(5);
        let x = normal(&mut r, n * d, 1.0);
        let y = normal(&mut r, n, 1.0);
        let start = normal(&mut r, d, 0.5);
        let m = LinearRegression::new(d).unwrap();
        let b = Batch::new(&x, Targets::Real(&y), d).unwrap();
        let mut ws = Workspace::default();
        let solve = ProxSolve {
            lr: 0.02,
            mu: 1.0 / 0.02,
            tol: 1e-5,
            max_steps: 500,
        };
        let mut theta = start.clone();
        let (mut grad, mut origin) = (vec![0.0; d], vec![0.0; d]);
        let out = prox_descent(&m, &mut theta, b, solve, &mut grad, &mut origin, &mut ws);
        assert!(out.converged, "{out:?}");
        assert_eq!(out.start_loss, m.loss(&start, b, &mut ws));
        // ∇L(θ) + μ(θ − θ₀) = 0, checked independently of the solver's loop.
        m.loss_grad(&theta, b, &mut grad, &mut ws);
        let residual: f64 = grad
            .iter()
            .zip(theta.iter().zip(&start))
            .map(|(g, (t, s))| f64::from(g + solve.mu * (t - s)).powi(2))
            .sum::<f64>()
            .sqrt();
        m.loss_grad(&start, b, &mut grad, &mut ws);
        assert!(residual < 1e-4 * norm(&grad), "residual {residual}");
        // The proximal point lies between θ₀ and the one-step FedAvg point.
        assert!(theta != start);
    }

    #[test]
    fn a_diverging_solve_reports_a_non_finite_loss() {
        let m = LinearRegression::new(2).unwrap();
        let b = Batch::new(&[3.0, 4.0], Targets::Real(&[1.0]), 2).unwrap();
        let solve = ProxSolve {
            lr: 10.0,
            mu: 0.0,
            tol: 1e-9,
            max_steps: 1000,
        };
        let mut theta = [0.0, 0.0];
        let out = prox_descent(
            &m,
            &mut theta,
            b,
            solve,
            &mut [0.0; 2],
            &mut [0.0; 2],
            &mut Workspace::default(),
        );
        assert!(!out.start_loss.is_finite());
        assert!(!out.converged);
    }
}
