//! The FedProx local problem (Li, Sahu, Zaheer, Sanjabi, Talwalkar, Smith,
//! "Federated Optimization in Heterogeneous Networks", MLSys 2020), solved to a
//! tolerance: `argmin_θ L(θ) + (μ/2)‖θ − θ₀‖²`.
//!
//! Su, Xu and Yang (IEEE Trans. Inf. Theory 2024, Phase 2) write it with
//! `μ = 1/η`. Full-batch gradient descent with step `η` on the proximal objective
//! is then the fixed-point iteration `θ <- θ₀ − η ∇L(θ)`, which contracts exactly
//! when `η · L_max < 1` (their condition `γ < 1`).

use crate::model::{Batch, Model, Workspace};
use crate::params::{all_finite, axpy, norm};

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
/// [`super::full_batch::gradient_descent`] does.
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
