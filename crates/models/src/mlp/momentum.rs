//! Momentum local training of the MLP (CFL-MGD's LocalUpdate) carried in the
//! kernel space of the batch, like [`super::kernel`].
//!
//! With momentum `u <- β u + ∇`, `θ <- θ − η u`, the first layer's momentum `U`
//! (`hidden × input`) starts from the buffer `U₀` the server sent and changes by
//! `Dᵀ X`. Its projection `Q = X Uᵀ` therefore evolves as `Q <- β Q + K D` and the
//! weights' projection as `P <- P − η Q`, with `K = X Xᵀ`. Keeping
//! `F_s = β F_{s−1} + D_s` and `G = Σ_s F_s` (both `n × hidden`):
//! `U_H = β^H U₀ + F_Hᵀ X` and `W1_H = W1₀ − η (Σ_{s=1..H} β^s) U₀ − η Gᵀ X`.
//! The other layers take their momentum steps directly. Exact in exact arithmetic;
//! tested against the plain loop.
//!
//! Workspace buffers: as [`super::kernel`], plus `bufs[6]` `Q` and `bufs[7]` `F`.

use fedcluster_core::linalg::{MatMut, MatRef, matmul};
use fedcluster_core::params::{all_finite, axpy, scale};
use fedcluster_core::{Batch, Model, Workspace};

use super::Mlp;
use crate::inv_len;
use crate::logistic::{sample_loss, softmax_minus_onehot};

impl Mlp {
    /// `steps` momentum steps from `params` and `velocity` in the kernel space.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn train_momentum_in_kernel_space(
        &self,
        params: &mut [f32],
        velocity: &mut [f32],
        batch: Batch<'_>,
        lr: f32,
        beta: f32,
        steps: usize,
        ws: &mut Workspace,
    ) -> f64 {
        let Some(y) = self.targets(batch) else {
            return f64::NAN;
        };
        if steps == 0 {
            return self.loss(params, batch, ws);
        }
        let (n, d, h, c) = (y.len(), self.input, self.hidden, self.classes);
        let l = self.layout();
        let s = inv_len(n) as f32;
        let x = batch.x;
        let [p, k, g, a, z, dh, q, f] =
            ws.slices([n * h, n * n, n * h, n * h, n * c, n * h, n * h, n * h]);
        self.project(params, x, p);
        self.project(velocity, x, q);
        matmul(
            MatMut::row_major(k, n, n),
            MatRef::row_major(x, n, d),
            MatRef::row_major(x, n, d).t(),
            false,
            1.0,
        );
        g.fill(0.0);
        f.fill(0.0);
        let (mut start, mut outcome) = (f64::NAN, None);
        let (mut decay, mut decay_sum) = (1.0f32, 0.0f32);
        for step in 0..steps {
            a.copy_from_slice(p);
            self.head(params, a, z);
            let mut loss = 0.0;
            for (zi, &yi) in z.chunks_exact_mut(c).zip(y) {
                loss += sample_loss(zi, yi);
                softmax_minus_onehot(zi, yi);
            }
            let loss = loss * inv_len(n);
            if !loss.is_finite() || !all_finite(z) {
                outcome = Some(if loss.is_finite() { f64::NAN } else { loss });
                break;
            }
            if step == 0 {
                start = loss;
            }
            // D = (Δ W2) ⊙ [A > 0] / n, with the W2 of this step.
            matmul(
                MatMut::row_major(dh, n, h),
                MatRef::row_major(z, n, c),
                MatRef::row_major(&params[l.w2..l.b2], c, h),
                false,
                s,
            );
            for (gv, act) in dh.iter_mut().zip(a.iter()) {
                if *act <= 0.0 {
                    *gv = 0.0;
                }
            }
            // Output layer and hidden bias: u <- β u + ∇, θ <- θ − η u.
            scale(beta, &mut velocity[l.b1..]);
            matmul(
                MatMut::row_major(&mut velocity[l.w2..l.b2], c, h),
                MatRef::row_major(z, n, c).t(),
                MatRef::row_major(a, n, h),
                true,
                s,
            );
            for row in z.chunks_exact(c) {
                for (u, v) in velocity[l.b2..l.end].iter_mut().zip(row) {
                    *u += s * v;
                }
            }
            for row in dh.chunks_exact(h) {
                for (u, v) in velocity[l.b1..l.w2].iter_mut().zip(row) {
                    *u += v;
                }
            }
            axpy(-lr, &velocity[l.b1..], &mut params[l.b1..]);
            // First layer in the kernel space.
            for (fv, dv) in f.iter_mut().zip(dh.iter()) {
                *fv = beta * *fv + dv;
            }
            for (gv, fv) in g.iter_mut().zip(f.iter()) {
                *gv += fv;
            }
            scale(beta, q);
            matmul(
                MatMut::row_major(q, n, h),
                MatRef::row_major(k, n, n),
                MatRef::row_major(dh, n, h),
                true,
                1.0,
            );
            axpy(-lr, q, p);
            decay *= beta;
            decay_sum += decay;
        }
        // W1 -= η (Σ β^s) U₀ + η Gᵀ X;  U <- β^H U₀ + Fᵀ X (over the steps taken).
        axpy(-lr * decay_sum, &velocity[..l.b1], &mut params[..l.b1]);
        matmul(
            MatMut::row_major(&mut params[..l.b1], h, d),
            MatRef::row_major(g, n, h).t(),
            MatRef::row_major(x, n, d),
            true,
            -lr,
        );
        scale(decay, &mut velocity[..l.b1]);
        matmul(
            MatMut::row_major(&mut velocity[..l.b1], h, d),
            MatRef::row_major(f, n, h).t(),
            MatRef::row_major(x, n, d),
            true,
            1.0,
        );
        match outcome {
            Some(bad) => bad,
            None if all_finite(params) && all_finite(velocity) => start,
            None => f64::NAN,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use fedcluster_core::train::full_batch::momentum_descent;
    use fedcluster_core::{Purpose, Targets, stream};
    use rand::Rng as _;

    fn max_rel_diff(a: &[f32], b: &[f32]) -> f32 {
        let scale = b.iter().fold(0.0f32, |m, v| m.max(v.abs()));
        a.iter()
            .zip(b)
            .map(|(u, v)| (u - v).abs())
            .fold(0.0, f32::max)
            / scale
    }

    #[test]
    fn kernel_space_momentum_equals_the_plain_loop() {
        for (n, d, h, c, steps, beta) in [
            (30, 50, 16, 10, 10, 0.9f32),
            (7, 20, 5, 3, 25, 0.5),
            (100, 784, 200, 10, 10, 0.9),
        ] {
            let model = Mlp::new(d, h, c).unwrap();
            let mut rng = stream(13, Purpose::ClientData, 0, 0);
            let x: Vec<f32> = (0..n * d).map(|_| rng.random_range(0.0f32..1.0)).collect();
            let y: Vec<u32> = (0..n).map(|_| rng.random_range(0..c as u32)).collect();
            let batch = Batch::new(&x, Targets::Class(&y), d).unwrap();
            let mut start = vec![0.0; model.num_params()];
            model.init(&mut stream(13, Purpose::Init, 0, 0), &mut start);
            // A non-zero incoming momentum buffer, as the server sends after round 0.
            let mut u0 = vec![0.0; model.num_params()];
            model.init(&mut stream(13, Purpose::Init, 1, 0), &mut u0);
            u0.iter_mut().for_each(|v| *v *= 0.1);
            let mut ws = Workspace::default();
            let (mut plain, mut plain_u) = (start.clone(), u0.clone());
            let mut grad = vec![0.0; model.num_params()];
            let l_plain = momentum_descent(
                &model,
                &mut plain,
                &mut plain_u,
                batch,
                0.05,
                beta,
                steps,
                &mut grad,
                &mut ws,
            );
            let (mut fast, mut fast_u) = (start.clone(), u0.clone());
            let l_fast =
                model.train_momentum(&mut fast, &mut fast_u, batch, 0.05, beta, steps, &mut ws);
            assert!(
                (l_plain - l_fast).abs() < 1e-6 * l_plain.abs(),
                "{l_plain} vs {l_fast}"
            );
            assert!(
                max_rel_diff(&fast, &plain) < 1e-4,
                "parameters, {n}x{d}-{h}-{c}"
            );
            assert!(
                max_rel_diff(&fast_u, &plain_u) < 1e-3,
                "momentum buffers, {n}x{d}-{h}-{c}"
            );
        }
    }
}
