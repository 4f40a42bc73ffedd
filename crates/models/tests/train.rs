//! The loops of `fedcluster_core::train` on the hand-written models: full-batch
//! gradient descent and momentum against least squares and a separable
//! classification problem, the minibatch optimizers' steps and augmentation
//! draws, and the FedProx solve's stationarity condition.

use std::sync::Mutex;

use fedcluster_core::params::norm;
use fedcluster_core::train::full_batch::gradient_descent;
use fedcluster_core::train::minibatch::{augmentation_draw, flat_steps, shuffle};
use fedcluster_core::train::prox::{ProxSolve, prox_descent};
use fedcluster_core::train::{
    Augmentation, Jitter, MinibatchOptimizer, MinibatchSpec, OptimizerState, Pull,
};
use fedcluster_core::{Batch, ImageShape, Model, Purpose, Rng, Targets, Workspace, stream};
use fedcluster_models::{LinearRegression, LogisticRegression};
use rand::Rng as _;
use rand_distr::StandardNormal;

/// The test stream for `seed`.
fn rng(seed: u64) -> Rng {
    stream(seed, Purpose::ClientData, 0, 0)
}

/// `len` standard normal draws scaled by `scale`.
fn normal(rng: &mut Rng, len: usize, scale: f32) -> Vec<f32> {
    (0..len)
        .map(|_| scale * rng.sample::<f32, _>(StandardNormal))
        .collect()
}

// Full-batch gradient descent and momentum.

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
        let loss = gradient_descent(&m, &mut theta, b, 0.1, 1, &mut grad, &mut ws);
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
    let first = gradient_descent(&m, &mut again, b, 0.1, 300, &mut grad, &mut ws);
    assert_eq!(first, m.loss(&[0.0; 5], b, &mut ws));
    assert_eq!(again, theta);
    let mut via_ws = vec![0.0; d];
    assert_eq!(m.train(&mut via_ws, b, 0.1, 300, &mut ws), first);
    assert_eq!(via_ws, theta);
}

#[test]
fn zero_steps_return_the_loss_and_leave_params() {
    let m = LinearRegression::new(2).unwrap();
    let b = Batch::new(&[1.0, 1.0], Targets::Real(&[1.0]), 2).unwrap();
    let mut theta = [1.0, 1.0];
    let l = gradient_descent(
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
    let l = gradient_descent(
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
    let l = gradient_descent(
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
    let start = gradient_descent(&m, &mut params, b, 0.5, 200, &mut grad, &mut ws);
    let end = m.loss(&params, b, &mut ws);
    let correct = m.count_correct(&params, b, &mut ws).unwrap();
    assert!(end < 0.2 * start, "loss {start} -> {end}");
    assert!(
        correct as f64 > 0.95 * n as f64,
        "accuracy {correct}/{n} (before: {before})"
    );
}

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

// Minibatch SGD and Adam.

fn adam(lr: f32, batch_size: usize, pull: Option<Pull<'_>>) -> MinibatchSpec<'_> {
    MinibatchSpec {
        optimizer: MinibatchOptimizer::Adam,
        lr,
        batch_size,
        pull,
        schedule: None,
        decay: None,
    }
}

fn sgd(lr: f32, batch_size: usize, momentum: f32, weight_decay: f32) -> MinibatchSpec<'static> {
    let optimizer = MinibatchOptimizer::Sgd {
        momentum,
        weight_decay,
    };
    MinibatchSpec {
        optimizer,
        lr,
        batch_size,
        pull: None,
        schedule: None,
        decay: None,
    }
}

#[test]
fn the_first_adam_step_moves_every_coordinate_by_lr_against_the_gradient_sign() {
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
    let mut state = OptimizerState::default();
    flat_steps(
        &m,
        &mut params,
        b,
        &adam(0.1, 2, None),
        1,
        &mut state,
        &mut rng(1),
        &mut ws,
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
    let mut state = OptimizerState::default();
    let mut ws = Workspace::default();
    let spec = adam(0.05, 20, None);
    let first = flat_steps(
        &m,
        &mut params,
        b,
        &spec,
        1000,
        &mut state,
        &mut rng(3),
        &mut ws,
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
    let spec = adam(
        0.01,
        4,
        Some(Pull {
            mu: 2.0,
            centre: &centre,
        }),
    );
    let mut state = OptimizerState::default();
    let first = flat_steps(
        &m,
        &mut params,
        b,
        &spec,
        3000,
        &mut state,
        &mut rng(4),
        &mut Workspace::default(),
    );
    assert_eq!(first, 0.0);
    assert!((params[0] - 2.0).abs() < 0.01, "{params:?}");
}

#[test]
fn sgd_with_momentum_and_weight_decay_takes_the_heavy_ball_steps() {
    // Loss mean (w·1 − 0)² has gradient 2w; with weight decay λ the step's
    // gradient is (2 + λ) w: u ← μ u + (2 + λ) w, w ← w − lr u.
    let m = LinearRegression::new(1).unwrap();
    let (x, y) = ([1.0f32; 4], [0.0f32; 4]);
    let b = Batch::new(&x, Targets::Real(&y), 1).unwrap();
    let (lr, mu, wd) = (0.1f32, 0.5f32, 0.2f32);
    let mut params = [1.0f32];
    let mut state = OptimizerState::default();
    let spec = sgd(lr, 2, mu, wd);
    flat_steps(
        &m,
        &mut params,
        b,
        &spec,
        3,
        &mut state,
        &mut rng(5),
        &mut Workspace::default(),
    );
    let (mut w, mut u) = (1.0f32, 0.0f32);
    for _ in 0..3 {
        u = mu * u + (2.0 + wd) * w;
        w -= lr * u;
    }
    assert!((params[0] - w).abs() < 1e-6, "{} vs {w}", params[0]);
    assert!((state.first[0] - u).abs() < 1e-6);
    assert!(state.second.is_empty());
}

/// A linear model that declares images and records every minibatch it sees.
struct Seen {
    inner: LinearRegression,
    augmentation: Augmentation,
    rows: Mutex<Vec<Vec<f32>>>,
}

impl Model for Seen {
    fn name(&self) -> &'static str {
        "seen"
    }
    fn num_params(&self) -> usize {
        self.inner.num_params()
    }
    fn input_dim(&self) -> usize {
        self.inner.input_dim()
    }
    fn init(&self, rng: &mut Rng, out: &mut [f32]) {
        self.inner.init(rng, out)
    }
    fn loss(&self, params: &[f32], batch: Batch<'_>, ws: &mut Workspace) -> f64 {
        self.inner.loss(params, batch, ws)
    }
    fn loss_grad(
        &self,
        params: &[f32],
        batch: Batch<'_>,
        grad: &mut [f32],
        ws: &mut Workspace,
    ) -> f64 {
        self.rows.lock().unwrap().push(batch.x.to_vec());
        self.inner.loss_grad(params, batch, grad, ws)
    }
    fn forward_flops_per_sample(&self) -> u64 {
        0
    }
    fn augmentation(&self) -> Option<Augmentation> {
        Some(self.augmentation)
    }
}

#[test]
fn augmentation_draws_a_crop_and_a_flip_per_image_from_the_client_stream() {
    let shape = ImageShape {
        height: 2,
        width: 2,
        channels: 1,
    };
    let augmentation = Augmentation {
        shape,
        crop_padding: 1,
        flip: true,
        jitter: Jitter::default(),
    };
    let m = Seen {
        inner: LinearRegression::new(4).unwrap(),
        augmentation,
        rows: Mutex::default(),
    };
    let x: Vec<f32> = (1..=12).map(|v| v as f32).collect();
    let y = [0.0f32; 3];
    let b = Batch::new(&x, Targets::Real(&y), 4).unwrap();
    let mut params = [0.0f32; 4];
    let spec = sgd(0.01, 3, 0.0, 0.0);
    flat_steps(
        &m,
        &mut params,
        b,
        &spec,
        2,
        &mut OptimizerState::default(),
        &mut rng(6),
        &mut Workspace::default(),
    );
    // The same draws by hand: a shuffle per epoch, then per row a crop and a flip.
    let mut r = rng(6);
    let (mut expected, mut order) = (Vec::new(), vec![0, 1, 2]);
    for _ in 0..2 {
        // Each epoch reshuffles the last epoch's order.
        shuffle(&mut order, &mut r);
        let mut rows = Vec::new();
        for &i in &order {
            let (dy, dx, flip) = augmentation_draw(&augmentation, &mut r);
            let mut out = [0.0f32; 4];
            augmentation.apply(&x[i * 4..(i + 1) * 4], &mut out, dy, dx, flip);
            rows.extend(out);
        }
        expected.push(rows);
    }
    assert_eq!(*m.rows.lock().unwrap(), expected);
}

// The FedProx local problem.

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

// Full-batch gradient descent with a proximal pull.

#[test]
fn a_weightless_pull_is_gradient_descent_and_a_pull_moves_the_minimiser() {
    use fedcluster_core::train::full_batch::pulled_descent;
    let (n, d) = (30, 3);
    let mut r = rng(7);
    let x = normal(&mut r, n * d, 1.0);
    let y = normal(&mut r, n, 1.0);
    let m = LinearRegression::new(d).unwrap();
    let b = Batch::new(&x, Targets::Real(&y), d).unwrap();
    let (mut grad, mut ws) = (vec![0.0; d], Workspace::default());
    let centre = vec![5.0f32; d];
    let (mut plain, mut pulled) = (vec![0.0; d], vec![0.0; d]);
    let want = gradient_descent(&m, &mut plain, b, 0.05, 40, &mut grad, &mut ws);
    let pull = Pull {
        mu: 0.0,
        centre: &centre,
    };
    let got = pulled_descent(&m, &mut pulled, b, pull, 0.05, 40, &mut grad, &mut ws);
    assert_eq!((got, &pulled), (want, &plain));
    // With μ > 0 the minimiser of L(θ) + (μ/2)‖θ − c‖² lies nearer the centre.
    let pull = Pull {
        mu: 1.0,
        centre: &centre,
    };
    let mut towards = vec![0.0; d];
    pulled_descent(&m, &mut towards, b, pull, 0.05, 400, &mut grad, &mut ws);
    gradient_descent(&m, &mut plain, b, 0.05, 360, &mut grad, &mut ws);
    let dist = |v: &[f32]| {
        v.iter()
            .zip(&centre)
            .map(|(a, c)| (a - c).powi(2))
            .sum::<f32>()
    };
    assert!(dist(&towards) < dist(&plain), "{towards:?} vs {plain:?}");
}
