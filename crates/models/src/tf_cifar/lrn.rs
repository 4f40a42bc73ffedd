//! Local response normalisation across channels (Krizhevsky, Sutskever,
//! Hinton 2012, Section 3.3), as TF's `tf.nn.lrn` computes it on
//! channels-last maps: `y_c = x_c / (bias + alpha · Σ_{|j − c| ≤ r} x_j²)^beta`,
//! the sum over the channels within `r` of `c` at the same position (`alpha`
//! is not divided by the window's size, unlike PyTorch's `LocalResponseNorm`).
//!
//! Backward: with `s_c` the denominator's base and `dy` the gradient at `y`,
//! `dx_j = dy_j · s_j^(−beta) − 2 · alpha · beta · x_j · Σ_{|c − j| ≤ r} dy_c · y_c / s_c`.

/// The normalisation's constants (the TF CIFAR-10 tutorial's: `r = 4`,
/// `bias = 1`, `alpha = 0.001 / 9`, `beta = 0.75`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Lrn {
    /// Channels on each side in the sum (`depth_radius`).
    pub radius: usize,
    /// Added to the scaled sum.
    pub bias: f32,
    /// The sum's scale.
    pub alpha: f32,
    /// The denominator's power.
    pub beta: f32,
}

/// The TF CIFAR-10 tutorial's `norm1` and `norm2`.
pub const TF_CIFAR: Lrn = Lrn {
    radius: 4,
    bias: 1.0,
    alpha: 0.001 / 9.0,
    beta: 0.75,
};

impl Lrn {
    /// `s^(−beta)`; for the tutorial's `beta = 0.75` as `1 / (√s · √√s)`,
    /// several times faster than `powf` and within an ulp or two of it.
    fn inverse_power(&self, s: f32) -> f32 {
        if self.beta == 0.75 {
            let r = s.sqrt();
            1.0 / (r * r.sqrt())
        } else {
            s.powf(-self.beta)
        }
    }

    /// `y` from `x` (positions of `channels` values, back to back), keeping
    /// each value's base `s` for [`Lrn::backward`].
    pub fn forward(&self, x: &[f32], channels: usize, y: &mut [f32], s: &mut [f32]) {
        let r = self.radius;
        for ((xp, yp), sp) in x
            .chunks_exact(channels)
            .zip(y.chunks_exact_mut(channels))
            .zip(s.chunks_exact_mut(channels))
        {
            for c in 0..channels {
                let (lo, hi) = (c.saturating_sub(r), (c + r + 1).min(channels));
                let sum: f32 = xp[lo..hi].iter().map(|v| v * v).sum();
                sp[c] = self.bias + self.alpha * sum;
                yp[c] = xp[c] * self.inverse_power(sp[c]);
            }
        }
    }

    /// `dx` from `dy`, with `x`, `y` and `s` of [`Lrn::forward`]; `t` is
    /// scratch of one position's `channels` values.
    #[allow(clippy::too_many_arguments)]
    pub fn backward(
        &self,
        dy: &[f32],
        x: &[f32],
        y: &[f32],
        s: &[f32],
        channels: usize,
        t: &mut [f32],
        dx: &mut [f32],
    ) {
        let r = self.radius;
        let k = 2.0 * self.alpha * self.beta;
        let t = &mut t[..channels];
        for i in 0..dy.len() / channels.max(1) {
            let at = i * channels..(i + 1) * channels;
            let (dyp, xp, yp, sp) = (
                &dy[at.clone()],
                &x[at.clone()],
                &y[at.clone()],
                &s[at.clone()],
            );
            for c in 0..channels {
                t[c] = dyp[c] * yp[c] / sp[c];
            }
            let dxp = &mut dx[at];
            for j in 0..channels {
                let (lo, hi) = (j.saturating_sub(r), (j + r + 1).min(channels));
                let sum: f32 = t[lo..hi].iter().sum();
                dxp[j] = dyp[j] * self.inverse_power(sp[j]) - k * xp[j] * sum;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::{normal, rng};

    #[test]
    fn forward_matches_the_formula_and_backward_finite_differences() {
        // One channel: y = x / (1 + 0.5 x²)^0.6 (`powf`; the net's tests cover 0.75).
        let strong = Lrn {
            radius: 1,
            bias: 1.0,
            alpha: 0.5,
            beta: 0.6,
        };
        let (mut y, mut s) = ([0.0], [0.0]);
        strong.forward(&[2.0], 1, &mut y, &mut s);
        assert!((y[0] - 2.0 / 3f32.powf(0.6)).abs() < 1e-6, "{}", y[0]);
        for v in [1.0f32, 1.5, 3.0, 40.0] {
            let fast = TF_CIFAR.inverse_power(v);
            assert!(
                (fast - v.powf(-0.75)).abs() <= 4.0 * f32::EPSILON * fast,
                "{v}"
            );
        }
        // Two positions of 5 channels; L = Σ dy · y.
        let mut r = rng(3);
        let (x, dy) = (normal(&mut r, 10, 1.0), normal(&mut r, 10, 1.0));
        let loss = |x: &[f32]| {
            let (mut y, mut s) = (vec![0.0; 10], vec![0.0; 10]);
            strong.forward(x, 5, &mut y, &mut s);
            y.iter()
                .zip(&dy)
                .map(|(a, b)| f64::from(a * b))
                .sum::<f64>()
        };
        let (mut y, mut s, mut t, mut dx) = (vec![0.0; 10], vec![0.0; 10], [0.0; 5], [0.0; 10]);
        strong.forward(&x, 5, &mut y, &mut s);
        strong.backward(&dy, &x, &y, &s, 5, &mut t, &mut dx);
        for i in 0..10 {
            let (mut up, mut down) = (x.clone(), x.clone());
            up[i] += 1e-2;
            down[i] -= 1e-2;
            let fd = (loss(&up) - loss(&down)) / f64::from(up[i] - down[i]);
            assert!(
                (fd - f64::from(dx[i])).abs() < 1e-3,
                "{i}: {fd} vs {}",
                dx[i]
            );
        }
    }
}
