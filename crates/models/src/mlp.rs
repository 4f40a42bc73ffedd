//! A multi-layer perceptron with one ReLU hidden layer and a softmax
//! cross-entropy output: `logits = W2 · relu(W1 x + b1) + b2` (the MNIST model of
//! the IFCA paper, 784-200-10).
//!
//! Parameters, back to back: `W1` (`hidden × input`, row-major), `b1` (`hidden`),
//! `W2` (`classes × hidden`), `b2` (`classes`); all initialised like PyTorch's
//! `nn.Linear` (`U(±1/√fan_in)`). Forward and backward passes are GEMMs over the
//! batch:
//! - `A = relu(X · W1ᵀ + b1)` (`n × hidden`), `Z = A · W2ᵀ + b2` (`n × classes`);
//! - `Δ = (softmax(Z) − onehot(y)) / n`; `∇W2 = Δᵀ A`, `∇b2 = Σ_rows Δ`;
//! - `D = (Δ · W2) ⊙ [A > 0]`; `∇W1 = Dᵀ X`, `∇b1 = Σ_rows D`.
//!
//! Workspace buffers: `bufs[0]` hidden activations `A` (`n × hidden`), `bufs[1]`
//! logits `Z` (turned into `Δ` in place), `bufs[2]` the hidden gradient `D`.

use fedcluster_core::linalg::{MatMut, MatRef, matmul};
use fedcluster_core::{Batch, Model, Rng, TensorSpec, Workspace};

use crate::init::uniform_fan_in;
use crate::logistic::{
    bias_grad, count_argmax_matches, loss_and_softmax_minus_onehot, sample_loss,
};
use crate::{ModelError, Result, TargetKind, inv_len};

mod kernel;
mod momentum;

/// One-hidden-layer ReLU network with a softmax output.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Mlp {
    /// Input features.
    pub input: usize,
    /// Hidden units.
    pub hidden: usize,
    /// Output classes.
    pub classes: usize,
}

/// Offsets of the four parameter blocks in the flat vector.
struct Layout {
    b1: usize,
    w2: usize,
    b2: usize,
    end: usize,
}

impl Mlp {
    /// A network `input -> hidden (ReLU) -> classes (softmax)`; every size at
    /// least 1 and at least 2 classes.
    pub fn new(input: usize, hidden: usize, classes: usize) -> Result<Self> {
        let why = if input == 0 || hidden == 0 {
            "input and hidden sizes must be at least 1"
        } else if classes < 2 {
            "classes must be at least 2"
        } else {
            return Ok(Self {
                input,
                hidden,
                classes,
            });
        };
        Err(ModelError::Invalid {
            model: "mlp",
            why: why.into(),
        })
    }

    /// The MLP trains on class indices below `classes`.
    pub fn target_kind(&self) -> TargetKind {
        TargetKind::Class {
            classes: self.classes,
        }
    }

    /// Checks that `batch` fits this model (see [`crate::check_batch`]).
    pub fn check_batch(&self, batch: Batch<'_>) -> Result<()> {
        crate::check_batch(self.name(), self.input, self.target_kind(), batch)
    }

    fn layout(&self) -> Layout {
        let (d, h, c) = (self.input, self.hidden, self.classes);
        let b1 = h * d;
        let w2 = b1 + h;
        let b2 = w2 + c * h;
        Layout {
            b1,
            w2,
            b2,
            end: b2 + c,
        }
    }

    fn targets<'a>(&self, batch: Batch<'a>) -> Option<&'a [u32]> {
        crate::class_targets(batch, self.input)
    }

    /// Hidden activations `a` and logits `z` of the batch `x`.
    fn forward(&self, params: &[f32], x: &[f32], a: &mut [f32], z: &mut [f32]) {
        self.project(params, x, a);
        self.head(params, a, z);
    }

    /// `a = X · W1ᵀ` (`n × hidden`): the first layer without its bias.
    fn project(&self, params: &[f32], x: &[f32], a: &mut [f32]) {
        let (d, h) = (self.input, self.hidden);
        let n = a.len() / h;
        matmul(
            MatMut::row_major(a, n, h),
            MatRef::row_major(x, n, d),
            MatRef::row_major(&params[..h * d], h, d).t(),
            false,
            1.0,
        );
    }

    /// From the projection `a = X · W1ᵀ`: `a <- relu(a + b1)` in place and the
    /// logits `z = a · W2ᵀ + b2`.
    fn head(&self, params: &[f32], a: &mut [f32], z: &mut [f32]) {
        let (h, c) = (self.hidden, self.classes);
        let l = self.layout();
        let n = a.len() / h;
        let b1 = &params[l.b1..l.w2];
        for row in a.chunks_exact_mut(h) {
            for (v, b) in row.iter_mut().zip(b1) {
                *v = (*v + b).max(0.0);
            }
        }
        matmul(
            MatMut::row_major(z, n, c),
            MatRef::row_major(a, n, h),
            MatRef::row_major(&params[l.w2..l.b2], c, h).t(),
            false,
            1.0,
        );
        let b2 = &params[l.b2..l.end];
        for row in z.chunks_exact_mut(c) {
            for (v, b) in row.iter_mut().zip(b2) {
                *v += b;
            }
        }
    }
}

impl Model for Mlp {
    fn name(&self) -> &'static str {
        "mlp"
    }

    fn num_params(&self) -> usize {
        self.layout().end
    }

    /// `fc1` and `fc2` as PyTorch's `nn.Linear`s name them.
    fn tensors(&self) -> Vec<TensorSpec> {
        let (d, h, c) = (self.input, self.hidden, self.classes);
        vec![
            TensorSpec::new("fc1.weight", &[h, d]),
            TensorSpec::new("fc1.bias", &[h]),
            TensorSpec::new("fc2.weight", &[c, h]),
            TensorSpec::new("fc2.bias", &[c]),
        ]
    }

    fn input_dim(&self) -> usize {
        self.input
    }

    /// `U(±1/√fan_in)` for every weight and bias, like PyTorch's `nn.Linear`.
    fn init(&self, rng: &mut Rng, out: &mut [f32]) {
        let l = self.layout();
        uniform_fan_in(rng, self.input, &mut out[..l.w2]);
        uniform_fan_in(rng, self.hidden, &mut out[l.w2..l.end]);
    }

    /// NaN if the batch does not fit; 0 if it is empty.
    fn loss(&self, params: &[f32], batch: Batch<'_>, ws: &mut Workspace) -> f64 {
        assert_eq!(params.len(), self.num_params(), "mlp: parameter length");
        let Some(y) = self.targets(batch) else {
            return f64::NAN;
        };
        let n = y.len();
        let [a, z, ..] = ws.slices([n * self.hidden, n * self.classes, 0, 0]);
        self.forward(params, batch.x, a, z);
        let sum: f64 = z
            .chunks_exact(self.classes)
            .zip(y)
            .map(|(zi, &yi)| sample_loss(zi, yi))
            .sum();
        sum * inv_len(n)
    }

    /// NaN loss and gradient if the batch does not fit; 0 and 0 if it is empty.
    fn loss_grad(
        &self,
        params: &[f32],
        batch: Batch<'_>,
        grad: &mut [f32],
        ws: &mut Workspace,
    ) -> f64 {
        let (d, h, c) = (self.input, self.hidden, self.classes);
        assert_eq!(params.len(), self.num_params(), "mlp: parameter length");
        assert_eq!(grad.len(), self.num_params(), "mlp: gradient length");
        let Some(y) = self.targets(batch) else {
            grad.fill(f32::NAN);
            return f64::NAN;
        };
        let n = y.len();
        let l = self.layout();
        let [a, z, dh, _] = ws.slices([n * h, n * c, n * h, 0]);
        self.forward(params, batch.x, a, z);
        let mut loss = 0.0;
        for (zi, &yi) in z.chunks_exact_mut(c).zip(y) {
            loss += loss_and_softmax_minus_onehot(zi, yi);
        }
        let s = inv_len(n) as f32;
        let (gw1, rest) = grad.split_at_mut(l.b1);
        let (gb1, rest) = rest.split_at_mut(h);
        let (gw2, gb2) = rest.split_at_mut(c * h);
        // Output layer: ∇W2 = s Δᵀ A, ∇b2 = s Σ Δ.
        matmul(
            MatMut::row_major(gw2, c, h),
            MatRef::row_major(z, n, c).t(),
            MatRef::row_major(a, n, h),
            false,
            s,
        );
        bias_grad(z, c, 0, s, gb2);
        // Hidden layer: D = (Δ W2) ⊙ [A > 0], ∇W1 = s Dᵀ X, ∇b1 = s Σ D.
        matmul(
            MatMut::row_major(dh, n, h),
            MatRef::row_major(z, n, c),
            MatRef::row_major(&params[l.w2..l.b2], c, h),
            false,
            1.0,
        );
        for (g, act) in dh.iter_mut().zip(a.iter()) {
            if *act <= 0.0 {
                *g = 0.0;
            }
        }
        matmul(
            MatMut::row_major(gw1, h, d),
            MatRef::row_major(dh, n, h).t(),
            MatRef::row_major(batch.x, n, d),
            false,
            s,
        );
        bias_grad(dh, h, 0, s, gb1);
        loss * inv_len(n)
    }

    /// Carried in the kernel space of the batch (see [`kernel`]): equal to plain
    /// gradient descent in exact arithmetic, about 5x fewer operations.
    fn train(
        &self,
        params: &mut [f32],
        batch: Batch<'_>,
        lr: f32,
        steps: usize,
        ws: &mut Workspace,
    ) -> f64 {
        self.train_in_kernel_space(params, batch, lr, steps, ws)
    }

    /// Momentum local training in the kernel space of the batch (see [`momentum`]).
    #[allow(clippy::too_many_arguments)]
    fn train_momentum(
        &self,
        params: &mut [f32],
        velocity: &mut [f32],
        batch: Batch<'_>,
        lr: f32,
        beta: f32,
        steps: usize,
        ws: &mut Workspace,
    ) -> f64 {
        self.train_momentum_in_kernel_space(params, velocity, batch, lr, beta, steps, ws)
    }

    /// Evaluates every model from its first-layer projection and trains each
    /// replica's chosen model from that same projection (see [`kernel`]).
    #[allow(clippy::too_many_arguments)]
    fn assign_and_train(
        &self,
        models: &[f32],
        group: usize,
        batch: Batch<'_>,
        lrs: &[f32],
        steps: usize,
        losses: &mut [f64],
        chosen: &mut [usize],
        out: &mut [f32],
        ws: &mut Workspace,
    ) -> Vec<f64> {
        self.assign_and_train_in_kernel_space(
            models, group, batch, lrs, steps, losses, chosen, out, ws,
        )
    }

    fn count_correct(&self, params: &[f32], batch: Batch<'_>, ws: &mut Workspace) -> Option<usize> {
        let y = self.targets(batch)?;
        let n = y.len();
        let [a, z, ..] = ws.slices([n * self.hidden, n * self.classes, 0, 0]);
        self.forward(params, batch.x, a, z);
        Some(count_argmax_matches(z, self.classes, y))
    }

    /// The output layer (`W2`, `b2`) is the head; the hidden layer is shared.
    fn head_start(&self) -> usize {
        self.layout().w2
    }

    fn forward_flops_per_sample(&self) -> u64 {
        2 * (self.input * self.hidden + self.hidden * self.classes) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gradcheck::{finite_differences, max_rel_error};
    use fedcluster_core::Targets;
    use fedcluster_core::{Purpose, stream};
    use rand::Rng as _;

    fn problem(seed: u64, n: usize, d: usize, classes: u32) -> (Vec<f32>, Vec<u32>) {
        let mut rng = stream(seed, Purpose::ClientData, 0, 0);
        let x = (0..n * d).map(|_| rng.random_range(-1.0f32..1.0)).collect();
        let y = (0..n).map(|_| rng.random_range(0..classes)).collect();
        (x, y)
    }

    #[test]
    fn gradient_matches_finite_differences() {
        for (seed, n, d, h, c) in [(1, 7, 5, 4, 3), (2, 12, 9, 6, 4), (3, 3, 2, 8, 2)] {
            let model = Mlp::new(d, h, c).unwrap();
            let (x, y) = problem(seed, n, d, c as u32);
            let batch = Batch::new(&x, Targets::Class(&y), d).unwrap();
            // Draw parameters until no hidden unit's input lies within 0.02 of the
            // ReLU kink: inputs are in [-1, 1], so a 1e-3 step cannot cross it and
            // finite differences see a smooth function.
            let mut params = vec![0.0; model.num_params()];
            for attempt in 0.. {
                model.init(&mut stream(seed, Purpose::Init, attempt, 0), &mut params);
                let margin = (0..n)
                    .flat_map(|i| (0..h).map(move |u| (i, u)))
                    .map(|(i, u)| {
                        let w = &params[u * d..(u + 1) * d];
                        let z: f32 = x[i * d..(i + 1) * d]
                            .iter()
                            .zip(w)
                            .map(|(a, b)| a * b)
                            .sum();
                        (z + params[h * d + u]).abs()
                    })
                    .fold(f32::INFINITY, f32::min);
                if margin > 0.02 {
                    break;
                }
            }
            // f32 losses limit central differences to about 1e-4 absolute; a
            // factor-2 or sign error shows as 0.5 or more.
            let err = max_rel_error(&model, &params, batch, 1e-3);
            assert!(
                err < 2e-2,
                "relative gradient error {err} for {n}x{d}-{h}-{c}"
            );
            // Block by block, absolute agreement well below the gradients' size.
            let fd = finite_differences(&model, &params, batch, 1e-3);
            let mut grad = vec![0.0; model.num_params()];
            model.loss_grad(&params, batch, &mut grad, &mut Workspace::default());
            let l = model.layout();
            for (name, lo, hi) in [
                ("W1", 0, l.b1),
                ("b1", l.b1, l.w2),
                ("W2", l.w2, l.b2),
                ("b2", l.b2, l.end),
            ] {
                let err = (lo..hi)
                    .map(|i| (f64::from(grad[i]) - fd[i]).abs())
                    .fold(0.0, f64::max);
                assert!(err < 1e-3, "{name}: absolute error {err}");
            }
        }
    }

    #[test]
    fn gradient_descent_fits_a_small_problem() {
        let (n, d, h, c) = (40, 6, 16, 3);
        let model = Mlp::new(d, h, c).unwrap();
        let (x, _) = problem(4, n, d, c as u32);
        // Labels from a rule the network can learn: the largest of the first three features.
        let y: Vec<u32> = x
            .chunks_exact(d)
            .map(|r| (0..3).max_by(|&a, &b| r[a].total_cmp(&r[b])).unwrap() as u32)
            .collect();
        let batch = Batch::new(&x, Targets::Class(&y), d).unwrap();
        let mut params = vec![0.0; model.num_params()];
        model.init(&mut stream(4, Purpose::Init, 0, 0), &mut params);
        let mut ws = Workspace::default();
        let start = model.loss(&params, batch, &mut ws);
        model.train(&mut params, batch, 0.5, 2000, &mut ws);
        let end = model.loss(&params, batch, &mut ws);
        let correct = model.count_correct(&params, batch, &mut ws).unwrap();
        assert!(end < start / 4.0, "loss {start} -> {end}");
        assert!(correct >= 36, "{correct}/40 correct");
    }

    #[test]
    fn bad_batches_give_nan_not_panics() {
        let model = Mlp::new(2, 3, 2).unwrap();
        let params = vec![0.1; model.num_params()];
        let mut grad = vec![0.0; model.num_params()];
        let mut ws = Workspace::default();
        let x = [1.0f32, 2.0];
        let real = [1.0f32];
        let batch = Batch::new(&x, Targets::Real(&real), 2).unwrap();
        assert!(model.loss(&params, batch, &mut ws).is_nan());
        assert!(model.loss_grad(&params, batch, &mut grad, &mut ws).is_nan());
        let out_of_range = [5u32];
        let batch = Batch::new(&x, Targets::Class(&out_of_range), 2).unwrap();
        assert!(model.loss(&params, batch, &mut ws).is_nan());
        assert!(Mlp::new(0, 3, 2).is_err() && Mlp::new(2, 3, 1).is_err());
        assert_eq!(model.num_params(), 2 * 3 + 3 + 3 * 2 + 2);
    }
}
