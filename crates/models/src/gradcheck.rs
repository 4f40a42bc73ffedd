//! Analytic gradients against central finite differences, for tests of every model.
//!
//! The trait computes losses in `f32` arithmetic (accumulated in `f64`), so a
//! finite difference carries rounding noise of about `1e-7 · loss / eps`; the
//! difference quotient itself is taken in `f64`, over the displacement actually
//! realised in `f32`. On well-scaled problems (features and parameters of order
//! one) `eps` between `1e-3` and `1e-2` keeps both that noise and the `O(eps²)`
//! truncation error near `1e-4` of the gradient, while a wrong gradient (a sign or
//! a factor of two) gives an error of at least `0.5`.

use fedcluster_core::{Batch, Model, Workspace};

/// Largest relative error between the analytic gradient of `model` at `params` and
/// central finite differences with step `eps`:
/// `max_i |g_i - fd_i| / max(|g_i|, |fd_i|, 1e-2 · max_j |fd_j|)`. The floor keeps
/// components that are nearly zero from reporting pure rounding noise. Returns
/// infinity if any loss or gradient is not finite.
pub fn max_rel_error(model: &dyn Model, params: &[f32], batch: Batch<'_>, eps: f64) -> f64 {
    let mut ws = Workspace::default();
    let mut grad = vec![0.0; params.len()];
    let loss = model.loss_grad(params, batch, &mut grad, &mut ws);
    let fd = finite_differences(model, params, batch, eps);
    if !loss.is_finite() || grad.iter().any(|g| !g.is_finite()) || fd.iter().any(|v| !v.is_finite())
    {
        return f64::INFINITY;
    }
    let floor = 1e-2 * fd.iter().fold(0.0f64, |a, v| a.max(v.abs()));
    grad.iter()
        .zip(&fd)
        .map(|(&g, &f)| {
            let g = f64::from(g);
            let scale = g.abs().max(f.abs()).max(floor);
            if scale == 0.0 {
                0.0
            } else {
                (g - f).abs() / scale
            }
        })
        .fold(0.0, f64::max)
}

/// Central differences `(L(θ + e_i) - L(θ - e_i)) / (θ_i⁺ - θ_i⁻)`, one per
/// parameter, where `θ_i^±` are the `f32` values nearest to `θ_i ± eps`.
pub fn finite_differences(
    model: &dyn Model,
    params: &[f32],
    batch: Batch<'_>,
    eps: f64,
) -> Vec<f64> {
    let mut ws = Workspace::default();
    let mut q = params.to_vec();
    (0..params.len())
        .map(|i| {
            let hi = (f64::from(params[i]) + eps) as f32;
            let lo = (f64::from(params[i]) - eps) as f32;
            q[i] = hi;
            let up = model.loss(&q, batch, &mut ws);
            q[i] = lo;
            let down = model.loss(&q, batch, &mut ws);
            q[i] = params[i];
            (up - down) / (f64::from(hi) - f64::from(lo))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::{classes, normal, rng};
    use crate::{LinearRegression, LogisticRegression};
    use fedcluster_core::{Rng, Targets};

    /// A model whose gradient is wrong: scaled by `factor`, and coordinate `flip`
    /// negated (if in range).
    struct Broken<'a> {
        inner: &'a dyn Model,
        factor: f32,
        flip: usize,
    }

    impl Model for Broken<'_> {
        fn name(&self) -> &'static str {
            "broken"
        }
        fn num_params(&self) -> usize {
            self.inner.num_params()
        }
        fn input_dim(&self) -> usize {
            self.inner.input_dim()
        }
        fn init(&self, rng: &mut Rng, out: &mut [f32]) {
            self.inner.init(rng, out);
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
            let l = self.inner.loss_grad(params, batch, grad, ws);
            for g in grad.iter_mut() {
                *g *= self.factor;
            }
            if let Some(g) = grad.get_mut(self.flip) {
                *g = -*g;
            }
            l
        }
        fn forward_flops_per_sample(&self) -> u64 {
            0
        }
    }

    #[test]
    fn catches_factor_two_and_sign_errors() {
        let mut rng = rng(31);
        let (n, d, c) = (15, 4, 3);
        let x = normal(&mut rng, n * d, 1.0);
        let yr = normal(&mut rng, n, 1.0);
        let yc = classes(&mut rng, n, c as u32);
        let real = Batch::new(&x, Targets::Real(&yr), d).unwrap();
        let class = Batch::new(&x, Targets::Class(&yc), d).unwrap();
        let lin = LinearRegression::new(d).unwrap();
        let log = LogisticRegression::new(d, c).unwrap();
        let theta = normal(&mut rng, d, 1.0);
        let w = normal(&mut rng, log.num_params(), 0.5);
        let cases: [(&dyn Model, &[f32], Batch<'_>); 2] = [(&lin, &theta, real), (&log, &w, class)];
        for (inner, params, batch) in cases {
            let exact = max_rel_error(inner, params, batch, 1e-2);
            assert!(exact < 2e-3, "{}: {exact}", inner.name());
            // The largest component, so that the floor cannot hide a flipped sign.
            let big = finite_differences(inner, params, batch, 1e-2)
                .iter()
                .enumerate()
                .fold(
                    (0, 0.0f64),
                    |a, (i, v)| if v.abs() > a.1 { (i, v.abs()) } else { a },
                )
                .0;
            for (factor, flip, min_err) in [
                (2.0, usize::MAX, 0.5),
                (0.5, usize::MAX, 0.5),
                (1.0, big, 2.0),
            ] {
                let broken = Broken {
                    inner,
                    factor,
                    flip,
                };
                let err = max_rel_error(&broken, params, batch, 1e-2);
                assert!(
                    err >= min_err * 0.99,
                    "{}: factor {factor} flip {flip}: {err}",
                    inner.name()
                );
            }
        }
    }

    #[test]
    fn non_finite_gradients_report_infinity() {
        let m = LinearRegression::new(2).unwrap();
        let b = Batch::new(&[1.0, 2.0], Targets::Class(&[0]), 2).unwrap();
        assert_eq!(max_rel_error(&m, &[0.0, 0.0], b, 1e-2), f64::INFINITY);
    }
}
