//! The flat minibatch training loop: SGD (momentum, weight decay) and Adam
//! (Kingma, Ba, ICLR 2015, Algorithm 1; the local trainer of the SR-FCA public
//! code) over [`Model::loss_grad`], with optional image augmentation.
//!
//! Each epoch visits the client's points in an order drawn from the client's
//! stream, in minibatches of `batch_size` (the last one may be smaller); the
//! minibatch rows are gathered into scratch buffers so that the model sees an
//! ordinary contiguous [`Batch`]. With an [`Augmentation`], each gathered image
//! then gets a crop offset and a flip drawn from the same stream, in row order.
//! A model that trains on its own device ([`Model::train_minibatch`]) follows
//! the same order and draws.

use rand::Rng as _;
use rand::seq::SliceRandom;

use fedcluster_core::local::{
    ADAM_BETA1, ADAM_BETA2, ADAM_EPS, Augmentation, MinibatchOptimizer, MinibatchSpec,
    OptimizerState, Pull,
};
use fedcluster_core::params::all_finite;
use fedcluster_core::{Batch, MinibatchScratch, Model, Rng, Targets, Workspace};

/// `steps` minibatch steps of `spec` on `batch` from `params`, continuing
/// `state`: the model's own ([`Model::train_minibatch`]) where it has one,
/// else [`flat_steps`].
#[allow(clippy::too_many_arguments)]
pub fn steps(
    model: &dyn Model,
    params: &mut [f32],
    batch: Batch<'_>,
    spec: &MinibatchSpec<'_>,
    steps: usize,
    state: &mut OptimizerState,
    rng: &mut Rng,
    ws: &mut Workspace,
) -> f64 {
    match model.train_minibatch(params, batch, spec, steps, state, rng, ws) {
        Some(loss) => loss,
        None => flat_steps(model, params, batch, spec, steps, state, rng, ws),
    }
}

/// The minibatch order of one epoch: `order` shuffled by `rng` (the loop
/// reshuffles whenever an epoch ends).
pub fn shuffle(order: &mut [usize], rng: &mut Rng) {
    order.shuffle(rng);
}

/// The next minibatch's rows: the `size` rows of `order` after `cursor`, the
/// order reshuffled by `rng` whenever an epoch ends (start with `cursor` at the
/// end, so the first call shuffles).
pub fn next_rows<'o>(
    order: &'o mut [usize],
    cursor: &mut usize,
    size: usize,
    rng: &mut Rng,
) -> &'o [usize] {
    let n = order.len();
    if *cursor >= n {
        shuffle(order, rng);
        *cursor = 0;
    }
    let start = *cursor;
    *cursor = (start + size).min(n);
    &order[start..*cursor]
}

/// Appends the features of `rows` of `batch` to `x`, each image augmented with
/// its own draw from `rng` (in row order) when there is an augmentation.
pub fn gather_features(
    batch: Batch<'_>,
    rows: &[usize],
    augmentation: Option<&Augmentation>,
    rng: &mut Rng,
    x: &mut Vec<f32>,
) {
    let d = batch.dim;
    for &r in rows {
        let src = &batch.x[r * d..(r + 1) * d];
        match augmentation {
            None => x.extend_from_slice(src),
            Some(aug) => {
                let (dy, dx, flip) = augmentation_draw(aug, rng);
                let at = x.len();
                x.resize(at + d, 0.0);
                aug.apply(src, &mut x[at..], dy, dx, flip);
            }
        }
    }
}

/// One augmentation draw for one image: the crop offset `(dy, dx)` and the flip.
pub fn augmentation_draw(aug: &Augmentation, rng: &mut Rng) -> (isize, isize, bool) {
    let p = aug.crop_padding as i64;
    let (dy, dx) = if p > 0 {
        (
            rng.random_range(-p..=p) as isize,
            rng.random_range(-p..=p) as isize,
        )
    } else {
        (0, 0)
    };
    let flip = aug.flip && rng.random::<bool>();
    (dy, dx, flip)
}

/// `steps` steps of `spec` through [`Model::loss_grad`] on gathered
/// minibatches. Returns the mean loss (the model's alone) of the first
/// minibatch, non-finite (and `params` left at the last finite iterate) if
/// training diverged.
#[allow(clippy::too_many_arguments)]
pub fn flat_steps(
    model: &dyn Model,
    params: &mut [f32],
    batch: Batch<'_>,
    spec: &MinibatchSpec<'_>,
    steps: usize,
    state: &mut OptimizerState,
    rng: &mut Rng,
    ws: &mut Workspace,
) -> f64 {
    let (n, p, d) = (batch.len(), params.len(), batch.dim);
    state.ready(spec.optimizer, p);
    if n == 0 || steps == 0 {
        return model.loss(params, batch, ws);
    }
    let augmentation = model.augmentation();
    let size = spec.batch_size.clamp(1, n);
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
        let rows = next_rows(order, &mut cursor, size, rng);
        x.clear();
        gather_features(batch, rows, augmentation.as_ref(), rng, x);
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
        if let Some(Pull { mu, centre }) = spec.pull {
            for ((g, w), c) in grad.iter_mut().zip(params.iter()).zip(centre) {
                *g += mu * (w - c);
            }
        }
        update(spec, params, &grad, state);
    }
    ws.grad = grad;
    ws.minibatch = scratch;
    if all_finite(params) { first } else { f64::NAN }
}

/// One optimizer step along `grad`.
fn update(spec: &MinibatchSpec<'_>, params: &mut [f32], grad: &[f32], state: &mut OptimizerState) {
    state.t += 1;
    match spec.optimizer {
        MinibatchOptimizer::Adam => {
            let t = state.t as i32;
            let (b1, b2) = (ADAM_BETA1, ADAM_BETA2);
            let c1 = 1.0 - b1.powi(t);
            let c2 = 1.0 - b2.powi(t);
            for (((w, g), m), v) in params
                .iter_mut()
                .zip(grad)
                .zip(&mut state.first)
                .zip(&mut state.second)
            {
                *m = b1 * *m + (1.0 - b1) * g;
                *v = b2 * *v + (1.0 - b2) * g * g;
                let m_hat = *m / c1;
                let v_hat = *v / c2;
                *w -= spec.lr * m_hat / (v_hat.sqrt() + ADAM_EPS);
            }
        }
        MinibatchOptimizer::Sgd {
            momentum,
            weight_decay,
        } => {
            for ((w, g), u) in params.iter_mut().zip(grad).zip(&mut state.first) {
                let g = g + weight_decay * *w;
                *u = momentum * *u + g;
                *w -= spec.lr * *u;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use super::*;
    use crate::LinearRegression;
    use crate::testutil::{normal, rng};
    use fedcluster_core::local::ImageShape;

    fn adam(lr: f32, batch_size: usize, pull: Option<Pull<'_>>) -> MinibatchSpec<'_> {
        MinibatchSpec {
            optimizer: MinibatchOptimizer::Adam,
            lr,
            batch_size,
            pull,
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
}
