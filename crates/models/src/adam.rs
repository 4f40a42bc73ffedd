//! Adam on minibatches: the local trainer of the SR-FCA public code (Kingma,
//! Ba, "Adam: A Method for Stochastic Optimization", ICLR 2015, Algorithm 1).
//!
//! Each epoch visits the client's points in an order drawn from the client's
//! stream, in minibatches of `batch_size` (the last one may be smaller); the
//! minibatch rows are gathered into scratch buffers so that the model sees an
//! ordinary contiguous [`Batch`].

use rand::seq::SliceRandom;

use fedcluster_core::params::all_finite;
use fedcluster_core::{Batch, MinibatchScratch, Model, Rng, Targets, Workspace};

/// Adam's hyperparameters.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AdamConfig {
    /// Step size `α`.
    pub lr: f32,
    /// Decay of the first moment `β₁`.
    pub beta1: f32,
    /// Decay of the second moment `β₂`.
    pub beta2: f32,
    /// `ε` in the denominator.
    pub eps: f32,
    /// Points per minibatch (the whole batch when larger).
    pub batch_size: usize,
}

impl AdamConfig {
    /// PyTorch's defaults (`β₁ = 0.9`, `β₂ = 0.999`, `ε = 1e-8`) with the given
    /// step size and minibatch size.
    pub fn new(lr: f32, batch_size: usize) -> Self {
        Self {
            lr,
            beta1: 0.9,
            beta2: 0.999,
            eps: 1e-8,
            batch_size,
        }
    }
}

/// Adam's state: the moment estimates and the step count.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AdamState {
    m: Vec<f32>,
    v: Vec<f32>,
    t: u32,
}

/// A proximal pull `(μ/2)‖w − centre‖²` added to the loss (FedProx, FedSoft).
#[derive(Debug, Clone, Copy)]
pub struct Pull<'a> {
    /// `μ`.
    pub mu: f32,
    /// The point pulled towards.
    pub centre: &'a [f32],
}

/// `steps` Adam steps on minibatches of `batch` from `params`, continuing
/// `state`, on the loss plus an optional proximal `pull`. Returns the mean loss
/// (the model's alone) of the first minibatch, non-finite (and `params` left at
/// the last finite iterate) if training diverged.
#[allow(clippy::too_many_arguments)]
pub fn adam_steps(
    model: &dyn Model,
    params: &mut [f32],
    batch: Batch<'_>,
    config: AdamConfig,
    steps: usize,
    state: &mut AdamState,
    rng: &mut Rng,
    ws: &mut Workspace,
    pull: Option<Pull<'_>>,
) -> f64 {
    let (n, p, d) = (batch.len(), params.len(), batch.dim);
    if state.m.len() != p {
        *state = AdamState {
            m: vec![0.0; p],
            v: vec![0.0; p],
            t: 0,
        };
    }
    if n == 0 || steps == 0 {
        return model.loss(params, batch, ws);
    }
    let size = config.batch_size.clamp(1, n);
    let mut scratch = std::mem::take(&mut ws.minibatch);
    let MinibatchScratch {
        order,
        x,
        y_real,
        y_class,
    } = &mut scratch;
    order.clear();
    order.extend(0..n);
    let mut cursor = n; // start with a fresh shuffle
    let mut grad = std::mem::take(&mut ws.grad);
    grad.resize(p, 0.0);
    let mut first = f64::NAN;
    for step in 0..steps {
        if cursor >= n {
            order.shuffle(rng);
            cursor = 0;
        }
        let rows = &order[cursor..(cursor + size).min(n)];
        cursor += rows.len();
        x.clear();
        for &r in rows {
            x.extend_from_slice(&batch.x[r * d..(r + 1) * d]);
        }
        let targets = match batch.y {
            Targets::Real(y) => {
                y_real.clear();
                y_real.extend(rows.iter().map(|&r| y[r]));
                Targets::Real(y_real)
            }
            Targets::Class(y) => {
                y_class.clear();
                y_class.extend(rows.iter().map(|&r| y[r]));
                Targets::Class(y_class)
            }
        };
        let mini = Batch {
            x,
            y: targets,
            dim: d,
        };
        let loss = model.loss_grad(params, mini, &mut grad, ws);
        if step == 0 {
            first = loss;
        }
        if !loss.is_finite() || !all_finite(&grad) {
            first = f64::NAN;
            break;
        }
        if let Some(Pull { mu, centre }) = pull {
            for ((g, w), c) in grad.iter_mut().zip(params.iter()).zip(centre) {
                *g += mu * (w - c);
            }
        }
        state.t += 1;
        let t = state.t as i32;
        let (b1, b2) = (config.beta1, config.beta2);
        let c1 = 1.0 - b1.powi(t);
        let c2 = 1.0 - b2.powi(t);
        for (((w, g), m), v) in params
            .iter_mut()
            .zip(&grad)
            .zip(&mut state.m)
            .zip(&mut state.v)
        {
            *m = b1 * *m + (1.0 - b1) * g;
            *v = b2 * *v + (1.0 - b2) * g * g;
            let m_hat = *m / c1;
            let v_hat = *v / c2;
            *w -= config.lr * m_hat / (v_hat.sqrt() + config.eps);
        }
    }
    ws.grad = grad;
    ws.minibatch = scratch;
    if all_finite(params) { first } else { f64::NAN }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::LinearRegression;
    use crate::testutil::{normal, rng};

    #[test]
    fn the_first_step_moves_every_coordinate_by_lr_against_the_gradient_sign() {
        // After one step m̂ = g and v̂ = g², so the step is lr · g / (|g| + ε).
        let m = LinearRegression::new(3).unwrap();
        let x = [1.0, 0.0, 0.0, 0.0, 1.0, 0.0];
        let y = [2.0, -1.0];
        let b = Batch::new(&x, Targets::Real(&y), 3).unwrap();
        let mut params = [0.5f32, 0.5, 0.5];
        let mut grad = [0.0f32; 3];
        let mut ws = Workspace::default();
        m.loss_grad(&params, b, &mut grad, &mut ws);
        let before = params;
        let mut state = AdamState::default();
        adam_steps(
            &m,
            &mut params,
            b,
            AdamConfig::new(0.1, 2),
            1,
            &mut state,
            &mut rng(1),
            &mut ws,
            None,
        );
        for i in 0..3 {
            let want = if grad[i] == 0.0 {
                0.0
            } else {
                -0.1 * grad[i].signum()
            };
            assert!(
                (params[i] - before[i] - want).abs() < 1e-6,
                "{i}: {params:?} {grad:?}"
            );
        }
    }

    #[test]
    fn minibatch_adam_fits_a_least_squares_problem() {
        let (n, d) = (200, 5);
        let mut r = rng(2);
        let x = normal(&mut r, n * d, 1.0);
        let truth = [1.0f32, -2.0, 0.5, 0.0, 3.0];
        let y: Vec<f32> = x
            .chunks_exact(d)
            .map(|row| row.iter().zip(&truth).map(|(a, b)| a * b).sum())
            .collect();
        let m = LinearRegression::new(d).unwrap();
        let b = Batch::new(&x, Targets::Real(&y), d).unwrap();
        let mut params = vec![0.0f32; d];
        let mut state = AdamState::default();
        let mut ws = Workspace::default();
        let first = adam_steps(
            &m,
            &mut params,
            b,
            AdamConfig::new(0.05, 20),
            1000,
            &mut state,
            &mut rng(3),
            &mut ws,
            None,
        );
        assert!(first.is_finite());
        for (p, t) in params.iter().zip(truth) {
            assert!((p - t).abs() < 0.02, "{params:?}");
        }
        // The state carries on: the step count grew by the steps taken.
        assert_eq!(state.t, 1000);
    }

    #[test]
    fn a_pull_moves_the_minimiser_towards_the_centre() {
        // Loss mean (w·1 − 0)² has gradient 2w; with the pull μ(w − c) the
        // minimiser is w = μc / (2 + μ) = 2 for μ = 2, c = 4.
        let m = LinearRegression::new(1).unwrap();
        let (x, y) = ([1.0f32; 8], [0.0f32; 8]);
        let b = Batch::new(&x, Targets::Real(&y), 1).unwrap();
        let mut params = [0.0f32];
        let centre = [4.0f32];
        let first = adam_steps(
            &m,
            &mut params,
            b,
            AdamConfig::new(0.01, 4),
            3000,
            &mut AdamState::default(),
            &mut rng(4),
            &mut Workspace::default(),
            Some(Pull {
                mu: 2.0,
                centre: &centre,
            }),
        );
        assert_eq!(first, 0.0);
        assert!((params[0] - 2.0).abs() < 0.01, "{params:?}");
    }
}
