//! Linear regression without bias under the squared loss: the model of the IFCA
//! paper's synthetic experiments (Ghosh, Chung, Yin, Ramchandran, "An Efficient
//! Framework for Clustered Federated Learning", NeurIPS 2020, Section 5.1).
//!
//! Parameters are `θ ∈ R^dim`; a sample `x` is predicted as `<x, θ>`; the loss of a
//! batch of `n` samples is `(1/n) Σ (y - <x, θ>)²` (not halved, as in the paper) and
//! its gradient is `(2/n) Xᵀ(Xθ - y)`.
//!
//! The batched kernels are the hot path of IFCA: [`Model::losses`] evaluates all
//! models with one GEMM `X · [θ_1 … θ_m]`, and [`Model::assign_and_grad`] reuses that
//! forward pass to build the residuals of every replica's chosen model and gets all
//! replicas' gradients from one more GEMM `Resᵀ · X`.
//!
//! Workspace buffers: `bufs[0]` holds predictions (`n × models`, row-major), reused
//! as residuals by `loss_grad`; `bufs[1]` holds the `n × replicas` residuals of
//! `assign_and_grad`. `bufs[2]` and `bufs[3]` are not used.

use fedcluster_core::kernels::{rest_x, x_wt};

use crate::init::uniform_fan_in;
use fedcluster_core::model::argmin_f64;
use fedcluster_core::{Batch, Input, Model, Rng, Targets, Task, TensorSpec, Workspace};
use serde::{Deserialize, Serialize};

use crate::{ModelError, Result, TargetKind, fits, inv_len};

/// `[model] kind = "linear"`: linear regression, squared loss, no bias; no
/// keys (the size comes from the data).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LinearConfig {}

impl LinearConfig {
    /// The model for `input`, which must be a regression data set.
    pub fn build(&self, input: &Input) -> Result<Box<dyn Model>> {
        match input.task {
            Task::Regression => Ok(Box::new(LinearRegression::new(input.dim)?)),
            Task::Classification { .. } => Err(ModelError::Field {
                field: "kind",
                why: "`linear` needs a regression data set".into(),
            }),
        }
    }
}

/// Linear regression `y ≈ <x, θ>` without bias, squared loss.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LinearRegression {
    /// Number of features, which is also the number of parameters.
    pub dim: usize,
}

impl LinearRegression {
    /// A model over `dim >= 1` features.
    pub fn new(dim: usize) -> Result<Self> {
        if dim == 0 {
            return Err(ModelError::Invalid {
                model: "linear",
                why: "dim must be at least 1".into(),
            });
        }
        Ok(Self { dim })
    }

    /// Linear regression trains on real targets.
    pub fn target_kind(&self) -> TargetKind {
        TargetKind::Real
    }

    /// Checks that `batch` fits this model (see [`crate::check_batch`]).
    pub fn check_batch(&self, batch: Batch<'_>) -> Result<()> {
        crate::check_batch(self.name(), self.dim, self.target_kind(), batch)
    }

    /// The real targets of `batch` if the batch fits the model.
    fn targets<'a>(&self, batch: Batch<'a>) -> Option<&'a [f32]> {
        match batch.y {
            Targets::Real(y) if fits(batch, self.dim) => Some(y),
            _ => None,
        }
    }

    /// `pred = X · Mᵀ` (`n × count`) for `count` models stored back to back.
    fn forward(&self, x: &[f32], _n: usize, models: &[f32], _count: usize, pred: &mut [f32]) {
        x_wt(x, models, self.dim, pred);
    }
}

/// `out[j] = (1/n) Σ_i (pred[i, j] - y_i)²`, accumulated in `f64`.
fn mean_sq_losses(pred: &[f32], y: &[f32], out: &mut [f64]) {
    out.fill(0.0);
    if out.is_empty() {
        return;
    }
    for (row, &yi) in pred.chunks_exact(out.len()).zip(y) {
        for (o, &p) in out.iter_mut().zip(row) {
            let e = f64::from(p) - f64::from(yi);
            *o += e * e;
        }
    }
    let s = inv_len(y.len());
    for o in out {
        *o *= s;
    }
}

/// `grads (rows × d) = (2/n) · Resᵀ · X` for residuals `res` (`n × rows`).
fn grads_from_residuals(x: &[f32], res: &[f32], n: usize, d: usize, grads: &mut [f32]) {
    rest_x(res, x, d, (2.0 * inv_len(n)) as f32, grads);
}

impl Model for LinearRegression {
    fn name(&self) -> &'static str {
        "linear"
    }

    fn num_params(&self) -> usize {
        self.dim
    }

    /// `weight` (`1 x dim`), PyTorch's `nn.Linear(dim, 1, bias=False)`.
    fn tensors(&self) -> Vec<TensorSpec> {
        vec![TensorSpec::new("weight", &[1, self.dim])]
    }

    fn input_dim(&self) -> usize {
        self.dim
    }

    /// `U(-1/√dim, 1/√dim)`, like PyTorch's `nn.Linear`.
    fn init(&self, rng: &mut Rng, out: &mut [f32]) {
        debug_assert_eq!(out.len(), self.dim);
        uniform_fan_in(rng, self.dim, out);
    }

    /// NaN if the batch does not fit (wrong targets or shape); 0 if it is empty.
    fn loss(&self, params: &[f32], batch: Batch<'_>, ws: &mut Workspace) -> f64 {
        let mut out = [0.0];
        self.losses(params, batch, &mut out, ws);
        out[0]
    }

    /// NaN loss and gradient if the batch does not fit; 0 and 0 if it is empty.
    fn loss_grad(
        &self,
        params: &[f32],
        batch: Batch<'_>,
        grad: &mut [f32],
        ws: &mut Workspace,
    ) -> f64 {
        assert_eq!(params.len(), self.dim, "linear: parameter length");
        assert_eq!(grad.len(), self.dim, "linear: gradient length");
        let Some(y) = self.targets(batch) else {
            grad.fill(f32::NAN);
            return f64::NAN;
        };
        let n = y.len();
        let [res, ..] = ws.slices([n, 0, 0, 0]);
        self.forward(batch.x, n, params, 1, res);
        let mut loss = [0.0];
        mean_sq_losses(res, y, &mut loss);
        for (r, &yi) in res.iter_mut().zip(y) {
            *r -= yi;
        }
        grads_from_residuals(batch.x, res, n, self.dim, grad);
        loss[0]
    }

    fn forward_flops_per_sample(&self) -> u64 {
        2 * self.dim as u64
    }

    /// One GEMM for all models. NaN losses if the batch does not fit.
    fn losses(&self, models: &[f32], batch: Batch<'_>, out: &mut [f64], ws: &mut Workspace) {
        let count = out.len();
        assert_eq!(
            models.len(),
            count * self.dim,
            "linear: stacked models length"
        );
        let Some(y) = self.targets(batch) else {
            out.fill(f64::NAN);
            return;
        };
        let n = y.len();
        let [pred, ..] = ws.slices([n * count, 0, 0, 0]);
        self.forward(batch.x, n, models, count, pred);
        mean_sq_losses(pred, y, out);
    }

    /// One GEMM forward for every model of every replica, the argmin per replica,
    /// then one GEMM for every replica's gradient at its chosen model. If the batch
    /// does not fit: NaN losses, model 0 chosen, NaN gradients.
    fn assign_and_grad(
        &self,
        models: &[f32],
        group: usize,
        batch: Batch<'_>,
        losses: &mut [f64],
        chosen: &mut [usize],
        grads: &mut [f32],
        ws: &mut Workspace,
    ) {
        let (d, replicas, count) = (self.dim, chosen.len(), losses.len());
        assert_eq!(count, replicas * group, "linear: losses length");
        assert_eq!(models.len(), count * d, "linear: stacked models length");
        assert_eq!(grads.len(), replicas * d, "linear: gradients length");
        if count == 0 {
            return;
        }
        let Some(y) = self.targets(batch) else {
            losses.fill(f64::NAN);
            chosen.fill(0);
            grads.fill(f32::NAN);
            return;
        };
        let n = y.len();
        let [pred, res, ..] = ws.slices([n * count, n * replicas, 0, 0]);
        self.forward(batch.x, n, models, count, pred);
        mean_sq_losses(pred, y, losses);
        for (r, c) in chosen.iter_mut().enumerate() {
            *c = argmin_f64(&losses[r * group..(r + 1) * group]);
        }
        for ((res_row, pred_row), &yi) in res
            .chunks_exact_mut(replicas)
            .zip(pred.chunks_exact(count))
            .zip(y)
        {
            for (r, (e, &c)) in res_row.iter_mut().zip(chosen.iter()).enumerate() {
                *e = pred_row[r * group + c] - yi;
            }
        }
        grads_from_residuals(batch.x, res, n, d, grads);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gradcheck::max_rel_error;
    use crate::testutil::{assert_assign_matches_default, assert_rel, classes, normal, rng};

    #[test]
    fn loss_and_gradient_match_a_hand_computed_example() {
        let m = LinearRegression::new(2).unwrap();
        let x = [1.0, 2.0, 3.0, 4.0];
        let y = [0.0, 1.0];
        let b = Batch::new(&x, Targets::Real(&y), 2).unwrap();
        let mut ws = Workspace::default();
        let mut g = [0.0; 2];
        // predictions 3 and 7, residuals 3 and 6: loss (9 + 36) / 2.
        let l = m.loss_grad(&[1.0, 1.0], b, &mut g, &mut ws);
        assert_eq!(l, 22.5);
        assert_eq!(m.loss(&[1.0, 1.0], b, &mut ws), 22.5);
        // (2/2) Xᵀ r = [1*3 + 3*6, 2*3 + 4*6].
        assert_eq!(g, [21.0, 30.0]);
    }

    #[test]
    fn gradient_matches_finite_differences() {
        let mut rng = rng(11);
        for (n, d) in [(20, 6), (7, 3), (50, 12), (1, 4)] {
            let m = LinearRegression::new(d).unwrap();
            let x = normal(&mut rng, n * d, 1.0);
            let y = normal(&mut rng, n, 2.0);
            let theta = normal(&mut rng, d, 1.0);
            let b = Batch::new(&x, Targets::Real(&y), d).unwrap();
            let err = max_rel_error(&m, &theta, b, 1e-2);
            assert!(err < 1e-3, "n={n} d={d}: relative error {err}");
        }
    }

    /// Stacked models and a batch drawn near model 3 of the 6.
    fn ifca_setup(seed: u64, n: usize, d: usize) -> (Vec<f32>, Vec<f32>, Vec<f32>) {
        let mut rng = rng(seed);
        let models = normal(&mut rng, 6 * d, 1.0);
        let x = normal(&mut rng, n * d, 1.0);
        let noise = normal(&mut rng, n, 0.1);
        let y = x
            .chunks_exact(d)
            .zip(&noise)
            .map(|(xi, e)| {
                xi.iter()
                    .zip(&models[3 * d..4 * d])
                    .map(|(a, t)| a * t)
                    .sum::<f32>()
                    + e
            })
            .collect();
        (models, x, y)
    }

    #[test]
    fn batched_kernels_equal_per_model_computation() {
        let (d, n, group, replicas) = (8, 40, 2, 3);
        let m = LinearRegression::new(d).unwrap();
        let (models, x, y) = ifca_setup(12, n, d);
        let b = Batch::new(&x, Targets::Real(&y), d).unwrap();
        let mut ws = Workspace::default();

        let mut losses = vec![0.0; replicas * group];
        m.losses(&models, b, &mut losses, &mut ws);
        let want: Vec<f64> = models
            .chunks_exact(d)
            .map(|t| m.loss(t, b, &mut Workspace::default()))
            .collect();
        for (l, w) in losses.iter().zip(&want) {
            assert_rel(*l, *w, 1e-5, "losses");
        }

        let chosen = assert_assign_matches_default(&m, &models, group, b, 1e-5);
        assert_eq!(chosen.len(), replicas);
        assert_eq!(
            chosen[1], 1,
            "the replica holding the data's model picks it"
        );
        // Also with one replica of one model (the GEMMs degenerate to vectors).
        assert_assign_matches_default(&m, &models[..d], 1, b, 1e-5);
    }

    #[test]
    fn mismatched_batches_give_nan_without_panicking() {
        let m = LinearRegression::new(2).unwrap();
        let x = [1.0, 2.0, 3.0, 4.0];
        let mut rng = rng(13);
        let cls = classes(&mut rng, 2, 3);
        let mut ws = Workspace::default();
        let mut g = [0.0; 2];
        let class_batch = Batch::new(&x, Targets::Class(&cls), 2).unwrap();
        assert!(
            m.loss_grad(&[1.0, 1.0], class_batch, &mut g, &mut ws)
                .is_nan()
        );
        assert!(g.iter().all(|v| v.is_nan()));
        assert!(m.check_batch(class_batch).is_err());
        let y = [1.0, 2.0];
        let wrong_dim = Batch {
            x: &x,
            y: Targets::Real(&y),
            dim: 1,
        };
        assert!(m.loss(&[1.0, 1.0], wrong_dim, &mut ws).is_nan());
        let (mut losses, mut chosen, mut grads) = ([0.0; 4], [7; 2], [0.0; 4]);
        m.assign_and_grad(
            &[0.0; 8],
            2,
            wrong_dim,
            &mut losses,
            &mut chosen,
            &mut grads,
            &mut ws,
        );
        assert!(losses.iter().all(|l| l.is_nan()) && chosen == [0, 0]);
    }

    #[test]
    fn empty_batch_has_zero_loss_and_gradient() {
        let m = LinearRegression::new(3).unwrap();
        let b = Batch::new(&[], Targets::Real(&[]), 3).unwrap();
        let mut g = [1.0; 3];
        assert_eq!(
            m.loss_grad(&[1.0; 3], b, &mut g, &mut Workspace::default()),
            0.0
        );
        assert_eq!(g, [0.0; 3]);
    }

    #[test]
    fn init_is_uniform_within_the_fan_in_bound() {
        let m = LinearRegression::new(16).unwrap();
        let mut out = vec![0.0; 16];
        m.init(&mut rng(14), &mut out);
        assert!(out.iter().all(|v| v.abs() < 0.25));
        assert!(out.iter().any(|v| v.abs() > 0.05));
        assert!(LinearRegression::new(0).is_err());
    }
}
