//! Cross-entropy against label-smoothed targets (Szegedy et al., "Rethinking
//! the Inception Architecture for Computer Vision", 2016, Section 7; PyTorch's
//! `CrossEntropyLoss(label_smoothing=ε)`, the loss of the SR-FCA public code
//! with `ε = 0.1`): the target of a sample of class `y` among `C` classes is
//! `q = (1 − ε) · onehot(y) + ε / C`, the loss `−Σ_c q_c log softmax(z)_c`,
//! and its gradient with respect to the logits `softmax(z) − q`.

/// The mean label-smoothed cross-entropy of `n` samples' logits (`logits`,
/// `n x classes`, row-major) against `labels`, with its gradient with respect
/// to the logits written into `grad` (same shape, already divided by `n`).
/// A label outside `0..classes` gives NaN.
pub fn smoothed_cross_entropy(
    logits: &[f32],
    labels: &[u32],
    classes: usize,
    eps: f32,
    grad: &mut [f32],
) -> f64 {
    let n = labels.len();
    if classes == 0 || logits.len() != n * classes || grad.len() != logits.len() {
        return f64::NAN;
    }
    let (eps, c) = (eps as f64, classes as f64);
    let mut total = 0.0;
    for ((z, g), &y) in logits
        .chunks_exact(classes)
        .zip(grad.chunks_exact_mut(classes))
        .zip(labels)
    {
        let y = y as usize;
        if y >= classes {
            return f64::NAN;
        }
        let max = z.iter().fold(f64::NEG_INFINITY, |m, &v| m.max(v as f64));
        let sum: f64 = z.iter().map(|&v| (v as f64 - max).exp()).sum();
        let log_sum = max + sum.ln();
        for (k, (gk, &zk)) in g.iter_mut().zip(z).enumerate() {
            let q = eps / c + if k == y { 1.0 - eps } else { 0.0 };
            let log_p = zk as f64 - log_sum;
            total -= q * log_p;
            *gk = ((log_p.exp() - q) / n.max(1) as f64) as f32;
        }
    }
    total / n.max(1) as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_gradient_matches_finite_differences_and_eps_zero_is_cross_entropy() {
        let logits = [0.3f32, -1.2, 2.0, 0.5, 0.1, -0.4, 1.5, 1.4, -2.0];
        let labels = [2u32, 0, 1];
        let mut grad = [0.0f32; 9];
        let mut scratch = [0.0f32; 9];
        for eps in [0.0f32, 0.1, 0.5] {
            let loss = smoothed_cross_entropy(&logits, &labels, 3, eps, &mut grad);
            assert!(loss.is_finite());
            for i in 0..logits.len() {
                let h = 1e-2f32;
                let (mut plus, mut minus) = (logits, logits);
                plus[i] += h;
                minus[i] -= h;
                let lp = smoothed_cross_entropy(&plus, &labels, 3, eps, &mut scratch);
                let lm = smoothed_cross_entropy(&minus, &labels, 3, eps, &mut scratch);
                let fd = (lp - lm) / (plus[i] - minus[i]) as f64;
                assert!(
                    (fd - grad[i] as f64).abs() < 1e-5,
                    "eps {eps}, logit {i}: {fd} vs {}",
                    grad[i]
                );
            }
        }
        // ε = 0: the plain cross-entropy −log softmax(z)_y.
        let plain = smoothed_cross_entropy(&logits[..3], &[2], 3, 0.0, &mut grad[..3]);
        let want = -(2.0f64 - (0.3f64.exp() + (-1.2f64).exp() + 2.0f64.exp()).ln());
        assert!((plain - want).abs() < 1e-6, "{plain} vs {want}");
    }

    #[test]
    fn a_hand_computed_case_and_bad_labels_give_nan() {
        // Equal logits over 2 classes: p = ½, so the loss is ln 2 whatever ε,
        // and the gradient ½ − q: q = (0.95, 0.05) for ε = 0.1, class 0.
        let mut grad = [0.0f32; 2];
        let loss = smoothed_cross_entropy(&[1.0, 1.0], &[0], 2, 0.1, &mut grad);
        assert!((loss - 2f64.ln()).abs() < 1e-12);
        assert!((grad[0] + 0.45).abs() < 1e-7 && (grad[1] - 0.45).abs() < 1e-7);
        assert!(smoothed_cross_entropy(&[1.0, 1.0], &[2], 2, 0.1, &mut grad).is_nan());
        assert!(smoothed_cross_entropy(&[1.0], &[0], 2, 0.1, &mut grad).is_nan());
    }
}
