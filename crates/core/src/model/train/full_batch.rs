//! Full-batch local training: gradient descent ([`gradient_descent`], the
//! loop behind [`Model::train`]), Polyak momentum ([`momentum_descent`],
//! behind [`Model::train_momentum`]) and gradient descent on the loss plus a
//! proximal pull ([`pulled_descent`], FedSoft's full-batch local step). Every
//! step is one [`Model::loss_grad`] over the whole batch.
//!
//! These are the plain loops, for every model; a model may override
//! [`Model::train`] with an exact shortcut, tested against them.

use super::Pull;
use crate::model::{Batch, Model, Workspace};
use crate::params::{all_finite, axpy};

/// `steps` full-batch gradient-descent steps `θ ← θ − lr · ∇L(θ)` on `batch`,
/// with `grad` (`num_params` long) as scratch. Returns the loss at the starting
/// point: the loss of the first step's forward pass, or `model.loss` when
/// `steps == 0`.
///
/// Non-finite values: if a step's loss or gradient is not finite, the loop stops
/// without applying that step (`params` keeps the last finite iterate) and returns
/// that loss, or NaN if only the gradient was non-finite. If the final parameters
/// overflowed, NaN is returned. So a finite return value means every step was
/// finite and `params` is finite.
pub fn gradient_descent<M: Model + ?Sized>(
    model: &M,
    params: &mut [f32],
    batch: Batch<'_>,
    lr: f32,
    steps: usize,
    grad: &mut [f32],
    ws: &mut Workspace,
) -> f64 {
    if steps == 0 {
        return model.loss(params, batch, ws);
    }
    let mut start = f64::NAN;
    for step in 0..steps {
        let loss = model.loss_grad(params, batch, grad, ws);
        if !loss.is_finite() {
            return loss;
        }
        if !all_finite(grad) {
            return f64::NAN;
        }
        if step == 0 {
            start = loss;
        }
        axpy(-lr, grad, params);
    }
    if all_finite(params) { start } else { f64::NAN }
}

/// `steps` steps of Polyak momentum gradient descent, `u <- beta u + ∇L(θ)`,
/// `θ <- θ - lr u`, with `grad` as scratch: the plain loop behind
/// [`Model::train_momentum`]. Returns the loss at the start; non-finite values
/// stop the loop as in [`gradient_descent`].
#[allow(clippy::too_many_arguments)]
pub fn momentum_descent<M: Model + ?Sized>(
    model: &M,
    params: &mut [f32],
    velocity: &mut [f32],
    batch: Batch<'_>,
    lr: f32,
    beta: f32,
    steps: usize,
    grad: &mut [f32],
    ws: &mut Workspace,
) -> f64 {
    if steps == 0 {
        return model.loss(params, batch, ws);
    }
    let mut start = f64::NAN;
    for step in 0..steps {
        let loss = model.loss_grad(params, batch, grad, ws);
        if !loss.is_finite() {
            return loss;
        }
        if !all_finite(grad) {
            return f64::NAN;
        }
        if step == 0 {
            start = loss;
        }
        for (u, g) in velocity.iter_mut().zip(grad.iter()) {
            *u = beta * *u + g;
        }
        axpy(-lr, velocity, params);
    }
    if all_finite(params) && all_finite(velocity) {
        start
    } else {
        f64::NAN
    }
}

/// `steps` full-batch gradient-descent steps on the loss plus `pull`'s
/// `(μ/2)‖θ − centre‖²`: `θ ← θ − lr · (∇L(θ) + μ(θ − centre))`, with `grad`
/// as scratch. Returns the model's loss (without the pull) at the start, NaN
/// when `steps == 0`; a non-finite loss or gradient stops the loop with NaN
/// (`params` at the last finite iterate), and so do non-finite final
/// parameters.
#[allow(clippy::too_many_arguments)]
pub fn pulled_descent<M: Model + ?Sized>(
    model: &M,
    params: &mut [f32],
    batch: Batch<'_>,
    pull: Pull<'_>,
    lr: f32,
    steps: usize,
    grad: &mut [f32],
    ws: &mut Workspace,
) -> f64 {
    let mut start_loss = f64::NAN;
    for step in 0..steps {
        let loss = model.loss_grad(params, batch, grad, ws);
        if step == 0 {
            start_loss = loss;
        }
        if !loss.is_finite() || !all_finite(grad) {
            start_loss = f64::NAN;
            break;
        }
        for ((g, w), c) in grad.iter_mut().zip(params.iter()).zip(pull.centre) {
            *g += pull.mu * (w - c);
        }
        axpy(-lr, grad, params);
    }
    if all_finite(params) {
        start_loss
    } else {
        f64::NAN
    }
}
