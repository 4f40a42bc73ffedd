//! Multinomial logistic regression: `p(y = c | x) = softmax(W x + b)_c`, trained on
//! the mean softmax cross-entropy.
//!
//! Parameters are `W` (`classes × dim`, row-major) followed by `b` (`classes`).
//! Logits of a batch are one GEMM `X · Wᵀ`; with `Δ = softmax(Z) - onehot(y)` the
//! gradient is `(1/n) Δᵀ X` for `W` (one GEMM) and the column means of `Δ` for `b`.
//! The log-sum-exp subtracts each row's largest logit, so large logits do not
//! overflow. Several models are evaluated with one GEMM against their weights
//! stacked into a scratch matrix.
//!
//! Workspace buffers: `bufs[0]` logits (`n × models·classes`, turned into `Δ` in
//! place by `loss_grad`); `bufs[1]` the stacked weights (`models·classes × dim`,
//! only for more than one model); `assign_and_grad` also uses `bufs[2]` for `Δ` of
//! the chosen models (`n × replicas·classes`) and `bufs[3]` for their weight
//! gradients (`replicas·classes × dim`).

use fedcluster_core::kernels::{all_abs_below, exp_minus};
use fedcluster_core::linalg::{MatMut, MatRef, add_product, matmul, step_then_forward};
use fedcluster_core::model::argmin_f64;
use fedcluster_core::params::{all_finite, axpy};
use fedcluster_core::train::full_batch::gradient_descent;
use fedcluster_core::{Batch, Input, Model, Rng, Targets, Task, TensorSpec, Workspace};
use serde::{Deserialize, Serialize};

use crate::init::uniform_fan_in;
use crate::{ModelError, Result, TargetKind, fits, inv_len};

/// `[model] kind = "logistic"`: multinomial logistic regression; no keys (the
/// sizes come from the data).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LogisticConfig {}

impl LogisticConfig {
    /// The model for `input`, which must be a classification data set.
    pub fn build(&self, input: &Input) -> Result<Box<dyn Model>> {
        match input.task {
            Task::Classification { classes } => {
                Ok(Box::new(LogisticRegression::new(input.dim, classes)?))
            }
            Task::Regression => Err(ModelError::Field {
                field: "kind",
                why: "`logistic` needs a classification data set".into(),
            }),
        }
    }
}

/// Multinomial logistic regression over `dim` features and `classes` classes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LogisticRegression {
    /// Number of features.
    pub dim: usize,
    /// Number of classes.
    pub classes: usize,
}

impl LogisticRegression {
    /// A model over `dim >= 1` features and `classes >= 2` classes.
    pub fn new(dim: usize, classes: usize) -> Result<Self> {
        let why = if dim == 0 {
            "dim must be at least 1"
        } else if classes < 2 {
            "classes must be at least 2"
        } else {
            return Ok(Self { dim, classes });
        };
        Err(ModelError::Invalid {
            model: "logistic",
            why: why.into(),
        })
    }

    /// Logistic regression trains on class indices below `classes`.
    pub fn target_kind(&self) -> TargetKind {
        TargetKind::Class {
            classes: self.classes,
        }
    }

    /// Checks that `batch` fits this model (see [`crate::check_batch`]).
    pub fn check_batch(&self, batch: Batch<'_>) -> Result<()> {
        crate::check_batch(self.name(), self.dim, self.target_kind(), batch)
    }

    /// The class targets of `batch` if the batch fits the model (class indices
    /// are not checked here: an out-of-range one gives a NaN loss).
    fn targets<'a>(&self, batch: Batch<'a>) -> Option<&'a [u32]> {
        match batch.y {
            Targets::Class(y) if self.classes > 0 && fits(batch, self.dim) => Some(y),
            _ => None,
        }
    }

    /// Biased logits `z (n × count·classes)` of `count` models stored back to back;
    /// `wstack` (`count·classes × dim`) is scratch, unused when `count == 1`.
    fn logits(&self, x: &[f32], models: &[f32], count: usize, wstack: &mut [f32], z: &mut [f32]) {
        let (c, d) = (self.classes, self.dim);
        let (n, p, width) = (z.len() / (count * c), self.num_params(), count * c);
        let w = if count == 1 {
            &models[..c * d]
        } else {
            for (dst, m) in wstack.chunks_exact_mut(c * d).zip(models.chunks_exact(p)) {
                dst.copy_from_slice(&m[..c * d]);
            }
            &*wstack
        };
        matmul(
            MatMut::row_major(z, n, width),
            MatRef::row_major(x, n, d),
            MatRef::row_major(w, width, d).t(),
            false,
            1.0,
        );
        let biases = models.chunks_exact(p).map(|m| &m[c * d..]);
        for row in z.chunks_exact_mut(width) {
            for (zk, b) in row.chunks_exact_mut(c).zip(biases.clone()) {
                add_bias(zk, b);
            }
        }
    }

    /// Whether, for `steps` steps on `batch`, a finite loss proves the
    /// gradient finite, and checking the features once is cheaper than checking
    /// every step's gradient. A finite loss means finite logits, so the
    /// residual `Δ = softmax - onehot` lies in `[-1, 1]`: every weight gradient
    /// is `1/n` times a sum of `n` products `Δ x` and every bias gradient lies in
    /// `[-1, 1]`, finite while `n · max |x|` stays below [`FINITE_SUM_BOUND`].
    fn gradient_is_finite_with_loss(&self, batch: Batch<'_>, steps: usize) -> bool {
        let n = batch.x.len() / self.dim.max(1);
        if steps == 0 || batch.x.len() > steps * self.num_params() {
            return false;
        }
        all_abs_below(batch.x, FINITE_SUM_BOUND / n.max(1) as f32)
    }

    /// [`gradient_descent`]'s loop with the loss as the only per-step check,
    /// for batches where [`Self::gradient_is_finite_with_loss`] holds.
    fn descend_on_finite_loss(
        &self,
        params: &mut [f32],
        batch: Batch<'_>,
        lr: f32,
        steps: usize,
        grad: &mut [f32],
        ws: &mut Workspace,
    ) -> f64 {
        let mut start = f64::NAN;
        let mut logits_ready = false;
        for step in 0..steps {
            let plan = StepPlan {
                // Only the first loss is returned; later ones are only tested.
                value: step == 0,
                logits_ready,
                last: step + 1 == steps,
            };
            let (loss, next_ready) = self.step(params, batch, lr, grad, ws, plan);
            if !loss.is_finite() {
                // The value `gradient_descent` returns (`params` are untouched).
                return if step == 0 {
                    loss
                } else {
                    self.loss(params, batch, ws)
                };
            }
            if step == 0 {
                start = loss;
            }
            logits_ready = next_ready;
        }
        if all_finite(params) { start } else { f64::NAN }
    }

    /// One step `θ ← θ − lr ∇L(θ)` in place, with the bits of [`Model::loss_grad`]
    /// into `grad` then `axpy`, and its return value; a non-finite loss leaves
    /// `params` untouched. For one- or two-sample clients the weights' update
    /// is fused with the product that forms their gradient
    /// ([`fedcluster_core::linalg::add_product`]) and, unless the step is the
    /// last, with the next step's logits
    /// ([`fedcluster_core::linalg::step_then_forward`], where it runs); the
    /// second value says whether workspace buffer 0 now holds those logits.
    fn step(
        &self,
        params: &mut [f32],
        batch: Batch<'_>,
        lr: f32,
        grad: &mut [f32],
        ws: &mut Workspace,
        plan: StepPlan,
    ) -> (f64, bool) {
        let (c, d) = (self.classes, self.dim);
        let Some(y) = self.targets(batch) else {
            return (f64::NAN, false);
        };
        let (loss, z) = self.residuals(params, batch.x, y, ws, plan.value, plan.logits_ready);
        if !loss.is_finite() {
            return (loss, false);
        }
        let s = inv_len(y.len()) as f32;
        let (pw, pb) = params.split_at_mut(c * d);
        let (gw, gb) = grad.split_at_mut(c * d);
        // The bias gradient first: the fused step overwrites the residuals.
        bias_grad(z, c, 0, s, gb);
        let forwarded = !plan.last && step_then_forward(pw, d, -lr, batch.x, s, z);
        if !forwarded {
            let (zt, x) = self.backward_operands(z, batch.x);
            if !add_product(MatMut::row_major(pw, c, d), -lr, zt, x, s) {
                matmul(MatMut::row_major(gw, c, d), zt, x, false, s);
                axpy(-lr, gw, pw);
            }
        }
        axpy(-lr, gb, pb);
        if forwarded {
            add_bias(z, pb);
        }
        (loss, forwarded)
    }

    /// The logits of `x` overwritten by the residuals `Δ = softmax - onehot(y)`
    /// (workspace buffer 0, where the logits already are if `logits_ready`),
    /// and the mean loss if `value`, else `0.0` where it is finite and NaN
    /// where it is not.
    fn residuals<'w>(
        &self,
        params: &[f32],
        x: &[f32],
        y: &[u32],
        ws: &'w mut Workspace,
        value: bool,
        logits_ready: bool,
    ) -> (f64, &'w mut [f32]) {
        assert_eq!(
            params.len(),
            self.num_params(),
            "logistic: parameter length"
        );
        let n = y.len();
        let [z, ..] = ws.slices([n * self.classes, 0, 0, 0]);
        if !logits_ready {
            self.logits(x, params, 1, &mut [], z);
        }
        let mut loss = 0.0;
        for (zi, &yi) in z.chunks_exact_mut(self.classes).zip(y) {
            let parts = softmax_minus_onehot_parts(zi, yi);
            if value {
                loss += parts.loss();
            } else if !parts.loss_is_finite() {
                loss = f64::NAN;
            }
        }
        (loss * inv_len(n), z)
    }

    /// `Δᵀ` (`classes x n`) and `X` (`n x dim`), whose product is `n` times the
    /// weights' gradient.
    fn backward_operands<'a>(&self, z: &'a [f32], x: &'a [f32]) -> (MatRef<'a>, MatRef<'a>) {
        let n = z.len() / self.classes;
        (
            MatRef::row_major(z, n, self.classes).t(),
            MatRef::row_major(x, n, self.dim),
        )
    }

    /// `out[k]` = mean cross-entropy of model `k` from biased logits `z`.
    fn mean_losses(&self, z: &[f32], y: &[u32], out: &mut [f64]) {
        out.fill(0.0);
        for (row, &yi) in z.chunks_exact(out.len() * self.classes).zip(y) {
            for (o, zk) in out.iter_mut().zip(row.chunks_exact(self.classes)) {
                *o += sample_loss(zk, yi);
            }
        }
        let s = inv_len(y.len());
        for o in out {
            *o *= s;
        }
    }
}

/// What a step of [`LogisticRegression::descend_on_finite_loss`] is asked
/// for and starts from.
#[derive(Clone, Copy)]
struct StepPlan {
    /// Whether to compute the loss's value (else only whether it is finite).
    value: bool,
    /// Whether workspace buffer 0 holds the logits of the current parameters.
    logits_ready: bool,
    /// Whether no step follows (so no logits are formed for one).
    last: bool,
}

/// `z[row, j] += bias[j]` for every row of `bias.len()` logits.
fn add_bias(z: &mut [f32], bias: &[f32]) {
    for row in z.chunks_exact_mut(bias.len()) {
        for (v, b) in row.iter_mut().zip(bias) {
            *v += b;
        }
    }
}

/// A bound on `n · max |x|` under which a sum of `n` products `Δ x` with
/// `|Δ| <= 1` cannot overflow `f32`, rounding included (`f32::MAX` is 3.4e38).
const FINITE_SUM_BOUND: f32 = 1e37;

/// A row's largest entry, NaN entries skipped (`-inf` if all are, or none).
///
/// Four running maxima, then theirs: a quarter of the dependent steps of one
/// running maximum (a softmax waits on it), and the same value, as `f32::max`
/// is exact; only the sign of a zero maximum may differ, which no caller's
/// result depends on (`-0.0 == 0.0`; a logit less either zero is the same
/// number or a zero, whose exponential is 1; and `m - z_y + ln s`, with
/// `ln s >= 0`, has the same bits for either zero `m`).
fn row_max(z: &[f32]) -> f32 {
    let mut m = [f32::NEG_INFINITY; 4];
    let mut quads = z.chunks_exact(4);
    for quad in &mut quads {
        for (m, &v) in m.iter_mut().zip(quad) {
            *m = m.max(v);
        }
    }
    for (m, &v) in m.iter_mut().zip(quads.remainder()) {
        *m = m.max(v);
    }
    m[0].max(m[1]).max(m[2].max(m[3]))
}

/// Number of rows of the logits `z` (`classes` wide) whose largest entry (the
/// first, on ties) is at the row's label.
pub(crate) fn count_argmax_matches(z: &[f32], classes: usize, y: &[u32]) -> usize {
    z.chunks_exact(classes)
        .zip(y)
        .filter(|(zi, yi)| {
            let m = row_max(zi);
            zi.iter().position(|&v| v == m) == Some(**yi as usize)
        })
        .count()
}

/// Cross-entropy `log Σ exp(z) - z_y` of one sample, stable; NaN if `y` is out of
/// range or a logit is not finite.
pub(crate) fn sample_loss(z: &[f32], y: u32) -> f64 {
    let Some(&zy) = z.get(y as usize) else {
        return f64::NAN;
    };
    let m = row_max(z);
    let s: f32 = z.iter().map(|&v| (v - m).exp()).sum();
    f64::from(m) - f64::from(zy) + f64::from(s).ln()
}

/// Overwrites logits `z` by `softmax(z) - onehot(y)` (all NaN if `y` is out of range).
pub(crate) fn softmax_minus_onehot(z: &mut [f32], y: u32) {
    softmax_minus_onehot_parts(z, y);
}

/// [`sample_loss`] of logits `z`, which are then overwritten as by
/// [`softmax_minus_onehot`]: the same bits as the two calls, with each
/// exponential computed once.
pub(crate) fn loss_and_softmax_minus_onehot(z: &mut [f32], y: u32) -> f64 {
    softmax_minus_onehot_parts(z, y).loss()
}

/// What a row's cross-entropy is made of: its largest logit `m`, the label's
/// logit `z_y` and `s = Σ exp(z - m)`; `None` for a label out of range.
struct LossParts(Option<(f32, f32, f32)>);

impl LossParts {
    /// [`sample_loss`]'s value, `m - z_y + ln s`, to the bit.
    fn loss(&self) -> f64 {
        match self.0 {
            Some((m, zy, s)) => f64::from(m) - f64::from(zy) + f64::from(s).ln(),
            None => f64::NAN,
        }
    }

    /// Whether [`LossParts::loss`] is finite, without the logarithm: `s`
    /// holds `exp(0) = 1` when `m` is finite, so `ln s` is finite with `s`.
    fn loss_is_finite(&self) -> bool {
        self.0
            .is_some_and(|(m, zy, s)| m.is_finite() && zy.is_finite() && s.is_finite())
    }
}

/// Overwrites logits `z` by `softmax(z) - onehot(y)` as
/// [`softmax_minus_onehot`] does and returns the parts of the row's loss.
fn softmax_minus_onehot_parts(z: &mut [f32], y: u32) -> LossParts {
    let Some(&zy) = z.get(y as usize) else {
        z.fill(f32::NAN);
        return LossParts(None);
    };
    let m = row_max(z);
    // The exponentials first, together ([`exp_minus`]: `f32::exp`'s bits),
    // then their sum in the same order.
    exp_minus(z, m);
    let s = z.iter().fold(0.0f32, |s, &v| s + v);
    let inv = 1.0 / s;
    for v in z.iter_mut() {
        *v *= inv;
    }
    z[y as usize] -= 1.0;
    LossParts(Some((m, zy, s)))
}

/// `gb = scale · Σ_rows delta[row, ..]` for `delta` rows of `gb.len()` columns
/// taken at `offset` within rows of `stride` values.
pub(crate) fn bias_grad(delta: &[f32], stride: usize, offset: usize, scale: f32, gb: &mut [f32]) {
    gb.fill(0.0);
    for row in delta.chunks_exact(stride) {
        for (g, v) in gb.iter_mut().zip(&row[offset..]) {
            *g += v;
        }
    }
    for g in gb {
        *g *= scale;
    }
}

impl Model for LogisticRegression {
    fn name(&self) -> &'static str {
        "logistic"
    }

    fn num_params(&self) -> usize {
        self.classes * (self.dim + 1)
    }

    /// `weight` (`classes x dim`) and `bias`, PyTorch's `nn.Linear`.
    fn tensors(&self) -> Vec<TensorSpec> {
        vec![
            TensorSpec::new("weight", &[self.classes, self.dim]),
            TensorSpec::new("bias", &[self.classes]),
        ]
    }

    fn input_dim(&self) -> usize {
        self.dim
    }

    /// `U(-1/√dim, 1/√dim)` for `W` and `b`, like PyTorch's `nn.Linear`.
    fn init(&self, rng: &mut Rng, out: &mut [f32]) {
        debug_assert_eq!(out.len(), self.num_params());
        uniform_fan_in(rng, self.dim, out);
    }

    /// NaN if the batch does not fit (wrong targets, class out of range, shape).
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
        let (c, d) = (self.classes, self.dim);
        assert_eq!(grad.len(), self.num_params(), "logistic: gradient length");
        let Some(y) = self.targets(batch) else {
            grad.fill(f32::NAN);
            return f64::NAN;
        };
        let (loss, z) = self.residuals(params, batch.x, y, ws, true, false);
        let s = inv_len(y.len()) as f32;
        let (gw, gb) = grad.split_at_mut(c * d);
        let (zt, x) = self.backward_operands(z, batch.x);
        matmul(MatMut::row_major(gw, c, d), zt, x, false, s);
        bias_grad(z, c, 0, s, gb);
        loss
    }

    /// [`gradient_descent`]: the same steps, bits and handling of non-finite
    /// values, without its scan of every step's gradient where the loss already
    /// vouches for it (see [`LogisticRegression::gradient_is_finite_with_loss`]).
    fn train(
        &self,
        params: &mut [f32],
        batch: Batch<'_>,
        lr: f32,
        steps: usize,
        ws: &mut Workspace,
    ) -> f64 {
        let shortcut = self.gradient_is_finite_with_loss(batch, steps);
        ws.with_grad(self.num_params(), |grad, ws| {
            if shortcut {
                self.descend_on_finite_loss(params, batch, lr, steps, grad, ws)
            } else {
                gradient_descent(self, params, batch, lr, steps, grad, ws)
            }
        })
    }

    /// Arg-max predictions (ties to the lowest class) that equal the target;
    /// `Some(0)` if the batch does not fit.
    fn count_correct(&self, params: &[f32], batch: Batch<'_>, ws: &mut Workspace) -> Option<usize> {
        let Some(y) = self.targets(batch) else {
            return Some(0);
        };
        let [z, ..] = ws.slices([y.len() * self.classes, 0, 0, 0]);
        self.logits(batch.x, params, 1, &mut [], z);
        Some(count_argmax_matches(z, self.classes, y))
    }

    /// `2·dim·classes` for the logits plus `classes` for the bias.
    fn forward_flops_per_sample(&self) -> u64 {
        (2 * self.dim as u64 + 1) * self.classes as u64
    }

    /// One GEMM against all models' stacked weights. NaN losses if the batch does
    /// not fit.
    fn losses(&self, models: &[f32], batch: Batch<'_>, out: &mut [f64], ws: &mut Workspace) {
        let (c, d, count) = (self.classes, self.dim, out.len());
        assert_eq!(
            models.len(),
            count * self.num_params(),
            "logistic: stacked models length"
        );
        let Some(y) = self.targets(batch) else {
            out.fill(f64::NAN);
            return;
        };
        if count == 0 {
            return;
        }
        let n = y.len();
        let stack = if count > 1 { count * c * d } else { 0 };
        let [z, wstack, ..] = ws.slices([n * count * c, stack, 0, 0]);
        self.logits(batch.x, models, count, wstack, z);
        self.mean_losses(z, y, out);
    }

    /// One GEMM for every model's logits, the argmin per replica, then one GEMM for
    /// every replica's weight gradient at its chosen model. If the batch does not
    /// fit: NaN losses, model 0 chosen, NaN gradients.
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
        let (c, d, p) = (self.classes, self.dim, self.num_params());
        let (replicas, count) = (chosen.len(), losses.len());
        assert_eq!(count, replicas * group, "logistic: losses length");
        assert_eq!(models.len(), count * p, "logistic: stacked models length");
        assert_eq!(grads.len(), replicas * p, "logistic: gradients length");
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
        let stack = if count > 1 { count * c * d } else { 0 };
        let (rc, width) = (replicas * c, count * c);
        let [z, wstack, delta, gw] = ws.slices([n * width, stack, n * rc, rc * d]);
        self.logits(batch.x, models, count, wstack, z);
        self.mean_losses(z, y, losses);
        for (r, ch) in chosen.iter_mut().enumerate() {
            *ch = argmin_f64(&losses[r * group..(r + 1) * group]);
        }
        for ((drow, zrow), &yi) in delta.chunks_exact_mut(rc).zip(z.chunks_exact(width)).zip(y) {
            for (r, (dr, &ch)) in drow.chunks_exact_mut(c).zip(chosen.iter()).enumerate() {
                dr.copy_from_slice(&zrow[(r * group + ch) * c..][..c]);
                softmax_minus_onehot(dr, yi);
            }
        }
        let s = inv_len(n) as f32;
        matmul(
            MatMut::row_major(gw, rc, d),
            MatRef::row_major(delta, n, rc).t(),
            MatRef::row_major(batch.x, n, d),
            false,
            s,
        );
        for (r, (g, gwr)) in grads
            .chunks_exact_mut(p)
            .zip(gw.chunks_exact(c * d))
            .enumerate()
        {
            let (gw_dst, gb) = g.split_at_mut(c * d);
            gw_dst.copy_from_slice(gwr);
            bias_grad(delta, rc, r * c, s, gb);
        }
    }
}

#[cfg(test)]
mod tests;
