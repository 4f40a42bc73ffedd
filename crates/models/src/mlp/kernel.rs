//! Full-batch local training of the MLP carried in the kernel space of the batch.
//!
//! A gradient step changes the first layer by `ΔW1 = −lr · Dᵀ X`, where `D`
//! (`n × hidden`) is the back-propagated hidden gradient. So the projection
//! `P = X · W1ᵀ` that the next forward pass needs changes by
//! `ΔP = −lr · X Xᵀ D = −lr · K D` with the `n × n` Gram matrix `K = X Xᵀ`, and
//! after `τ` steps `W1 = W1₀ − lr · (Σ_t D_t)ᵀ X`. Training therefore keeps `P`,
//! updates it with `K` (`2n²h` operations instead of `2ndh` for a forward pass
//! and as many for the weight gradient), and forms `W1` once at the end. In exact
//! arithmetic this is plain gradient descent; in floating point it agrees to
//! rounding (tested against [`fedcluster_core::train::full_batch::gradient_descent`]).
//!
//! Workspace buffers: `bufs[0]` the projections (`n × hidden`, one per model in
//! `assign_and_train`), `bufs[1]` `K` (`n × n`), `bufs[2]` `Σ_t D_t`, `bufs[3]`
//! the activations, `bufs[4]` the logits and `bufs[5]` `D`.

use fedcluster_core::linalg::{MatMut, MatRef, matmul};
use fedcluster_core::model::argmin_f64;
use fedcluster_core::params::all_finite;
use fedcluster_core::{Batch, Model, Workspace};

use super::Mlp;
use crate::inv_len;
use crate::logistic::{loss_and_softmax_minus_onehot, sample_loss};

/// The buffers one kernel-space descent works in.
struct Scratch<'a> {
    k: &'a [f32],
    g: &'a mut [f32],
    a: &'a mut [f32],
    z: &'a mut [f32],
    dh: &'a mut [f32],
}

impl Mlp {
    /// `steps` gradient steps on `batch` in the kernel space; the loss at the
    /// start, with the non-finite conventions of plain gradient descent.
    pub(super) fn train_in_kernel_space(
        &self,
        params: &mut [f32],
        batch: Batch<'_>,
        lr: f32,
        steps: usize,
        ws: &mut Workspace,
    ) -> f64 {
        let Some(y) = self.targets(batch) else {
            return f64::NAN;
        };
        if steps == 0 {
            return self.loss(params, batch, ws);
        }
        let (n, h, c) = (y.len(), self.hidden, self.classes);
        let [p, k, g, a, z, dh] = ws.slices([n * h, n * n, n * h, n * h, n * c, n * h]);
        self.project(params, batch.x, p);
        gram(batch.x, n, self.input, k);
        self.descend(params, batch.x, y, lr, steps, p, Scratch { k, g, a, z, dh })
    }

    /// Projections of every model in one pass, their losses, then each
    /// replica's chosen model trained from its projection.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn assign_and_train_in_kernel_space(
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
        let np = self.num_params();
        let Some(y) = self.targets(batch) else {
            losses.fill(f64::NAN);
            chosen.fill(0);
            out.fill(f32::NAN);
            return vec![f64::NAN; chosen.len()];
        };
        let (n, h, c, count) = (y.len(), self.hidden, self.classes, losses.len());
        let [projections, k, g, a, z, dh] =
            ws.slices([count * n * h, n * n, n * h, n * h, n * c, n * h]);
        for ((m, proj), loss) in models
            .chunks_exact(np)
            .zip(projections.chunks_exact_mut(n * h))
            .zip(losses.iter_mut())
        {
            self.project(m, batch.x, proj);
            a.copy_from_slice(proj);
            self.head(m, a, z);
            let sum: f64 = z
                .chunks_exact(c)
                .zip(y)
                .map(|(zi, &yi)| sample_loss(zi, yi))
                .sum();
            *loss = sum * inv_len(n);
        }
        gram(batch.x, n, self.input, k);
        let mut trained = Vec::with_capacity(chosen.len());
        for (r, (ch, slot)) in chosen.iter_mut().zip(out.chunks_exact_mut(np)).enumerate() {
            *ch = argmin_f64(&losses[r * group..(r + 1) * group]);
            let m = r * group + *ch;
            slot.copy_from_slice(&models[m * np..(m + 1) * np]);
            let proj = &mut projections[m * n * h..(m + 1) * n * h];
            let scratch = Scratch {
                k,
                g: &mut *g,
                a: &mut *a,
                z: &mut *z,
                dh: &mut *dh,
            };
            trained.push(if steps == 0 {
                losses[m]
            } else {
                self.descend(slot, batch.x, y, lrs[r], steps, proj, scratch)
            });
        }
        trained
    }

    /// The descent itself, from the projection `p = X · W1ᵀ` of `params`.
    #[allow(clippy::too_many_arguments)]
    fn descend(
        &self,
        params: &mut [f32],
        x: &[f32],
        y: &[u32],
        lr: f32,
        steps: usize,
        p: &mut [f32],
        s: Scratch<'_>,
    ) -> f64 {
        let (d, h, c) = (self.input, self.hidden, self.classes);
        let n = y.len();
        let l = self.layout();
        let scale = inv_len(n) as f32;
        s.g.fill(0.0);
        let mut start = f64::NAN;
        let mut outcome = None;
        for step in 0..steps {
            s.a.copy_from_slice(p);
            self.head(params, s.a, s.z);
            let mut loss = 0.0;
            for (zi, &yi) in s.z.chunks_exact_mut(c).zip(y) {
                loss += loss_and_softmax_minus_onehot(zi, yi);
            }
            let loss = loss * inv_len(n);
            if !loss.is_finite() || !all_finite(s.z) {
                outcome = Some(if loss.is_finite() { f64::NAN } else { loss });
                break;
            }
            if step == 0 {
                start = loss;
            }
            // D = (Δ W2) ⊙ [A > 0] / n, with the W2 of this step.
            matmul(
                MatMut::row_major(s.dh, n, h),
                MatRef::row_major(s.z, n, c),
                MatRef::row_major(&params[l.w2..l.b2], c, h),
                false,
                scale,
            );
            for (g, act) in s.dh.iter_mut().zip(s.a.iter()) {
                if *act <= 0.0 {
                    *g = 0.0;
                }
            }
            // Output layer: W2 -= lr/n Δᵀ A, b2 -= lr/n Σ Δ.
            matmul(
                MatMut::row_major(&mut params[l.w2..l.b2], c, h),
                MatRef::row_major(s.z, n, c).t(),
                MatRef::row_major(s.a, n, h),
                true,
                -lr * scale,
            );
            subtract_column_sums(s.z, c, lr * scale, &mut params[l.b2..l.end]);
            // Hidden bias, and the first layer through its projection.
            subtract_column_sums(s.dh, h, lr, &mut params[l.b1..l.w2]);
            matmul(
                MatMut::row_major(p, n, h),
                MatRef::row_major(s.k, n, n),
                MatRef::row_major(s.dh, n, h),
                true,
                -lr,
            );
            for (g, v) in s.g.iter_mut().zip(s.dh.iter()) {
                *g += v;
            }
        }
        // W1 -= lr (Σ_t D_t)ᵀ X, for the steps taken.
        matmul(
            MatMut::row_major(&mut params[..l.b1], h, d),
            MatRef::row_major(s.g, n, h).t(),
            MatRef::row_major(x, n, d),
            true,
            -lr,
        );
        match outcome {
            Some(bad) => bad,
            None if all_finite(params) => start,
            None => f64::NAN,
        }
    }
}

/// `k = X Xᵀ` (`n × n`).
fn gram(x: &[f32], n: usize, d: usize, k: &mut [f32]) {
    matmul(
        MatMut::row_major(k, n, n),
        MatRef::row_major(x, n, d),
        MatRef::row_major(x, n, d).t(),
        false,
        1.0,
    );
}

/// `b -= scale · Σ_rows m` for `m` with rows of `b.len()` values.
fn subtract_column_sums(m: &[f32], width: usize, scale: f32, b: &mut [f32]) {
    for row in m.chunks_exact(width) {
        for (bv, v) in b.iter_mut().zip(row) {
            *bv -= scale * v;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use fedcluster_core::train::full_batch::gradient_descent;
    use fedcluster_core::{Purpose, Targets, stream};
    use rand::Rng as _;

    fn setup(n: usize, d: usize, h: usize, c: usize) -> (Mlp, Vec<f32>, Vec<u32>, Vec<f32>) {
        let model = Mlp::new(d, h, c).unwrap();
        let mut rng = stream(11, Purpose::ClientData, 0, 0);
        let x = (0..n * d).map(|_| rng.random_range(0.0f32..1.0)).collect();
        let y = (0..n).map(|_| rng.random_range(0..c as u32)).collect();
        let mut params = vec![0.0; model.num_params()];
        model.init(&mut stream(11, Purpose::Init, 0, 0), &mut params);
        (model, x, y, params)
    }

    fn max_rel_diff(a: &[f32], b: &[f32]) -> f32 {
        let scale = b.iter().fold(0.0f32, |m, v| m.max(v.abs()));
        a.iter()
            .zip(b)
            .map(|(u, v)| (u - v).abs())
            .fold(0.0, f32::max)
            / scale
    }

    #[test]
    fn kernel_space_training_equals_plain_gradient_descent() {
        for (n, d, h, c, steps) in [
            (30, 50, 16, 10, 10),
            (7, 20, 5, 3, 25),
            (100, 784, 200, 10, 10),
        ] {
            let (model, x, y, start) = setup(n, d, h, c);
            let batch = Batch::new(&x, Targets::Class(&y), d).unwrap();
            let mut ws = Workspace::default();
            let mut plain = start.clone();
            let mut grad = vec![0.0; model.num_params()];
            let l_plain =
                gradient_descent(&model, &mut plain, batch, 0.1, steps, &mut grad, &mut ws);
            let mut fast = start.clone();
            let l_fast = model.train(&mut fast, batch, 0.1, steps, &mut ws);
            assert!(
                (l_plain - l_fast).abs() < 1e-6 * l_plain.abs(),
                "{l_plain} vs {l_fast}"
            );
            let diff = max_rel_diff(&fast, &plain);
            assert!(
                diff < 1e-4,
                "parameters differ by {diff} (relative) for {n}x{d}-{h}-{c}"
            );
            assert!(
                max_rel_diff(&plain, &start) > 1e-3,
                "training moved the parameters"
            );
        }
    }

    #[test]
    fn assign_and_train_picks_the_best_model_and_trains_it() {
        let (n, d, h, c) = (20, 12, 6, 4);
        let (model, x, y, first) = setup(n, d, h, c);
        let batch = Batch::new(&x, Targets::Class(&y), d).unwrap();
        let np = model.num_params();
        // Two replicas of two models; in replica 1 the better model comes second.
        let mut good = first.clone();
        let mut ws = Workspace::default();
        model.train(&mut good, batch, 0.5, 50, &mut ws);
        let models: Vec<f32> = [first.as_slice(), &good, &good, &first].concat();
        let mut losses = vec![0.0; 4];
        let mut chosen = vec![0; 2];
        let mut out = vec![0.0; 2 * np];
        let trained = model.assign_and_train(
            &models,
            2,
            batch,
            &[0.1, 0.2],
            5,
            &mut losses,
            &mut chosen,
            &mut out,
            &mut ws,
        );
        assert_eq!(chosen, vec![1, 0]);
        assert!(trained.iter().all(|l| l.is_finite()));
        for (r, lr) in [0.1f32, 0.2].into_iter().enumerate() {
            let mut want = good.clone();
            model.train(&mut want, batch, lr, 5, &mut ws);
            let got = &out[r * np..(r + 1) * np];
            assert!(max_rel_diff(got, &want) < 1e-5, "replica {r}");
            assert_eq!(trained[r], losses[r * 2 + chosen[r]]);
        }
    }

    #[test]
    fn divergence_is_reported_not_panicked() {
        let (model, x, y, mut params) = setup(10, 5, 4, 3);
        let batch = Batch::new(&x, Targets::Class(&y), 5).unwrap();
        let loss = model.train(&mut params, batch, 1e30, 20, &mut Workspace::default());
        assert!(!loss.is_finite());
    }
}
