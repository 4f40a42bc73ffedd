//! Per-cluster aggregation at the server. Contributions are applied in the order
//! given (client-id order), so results do not depend on thread scheduling.

use serde::{Deserialize, Serialize};

use fedcluster_core::params::axpy;

/// How the server combines what clients send (IFCA Algorithm 2, options I and II).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Aggregation {
    /// Option I: clients send one gradient, the server takes a step.
    Gradient,
    /// Option II: clients run local steps, the server averages models (FedAvg).
    Model,
}

/// Gradient averaging (IFCA option I): `θ_j <- θ_j - scale · Σ_{i in S_j} g_i`
/// for every cluster `j`, where `models` holds `k` models of `p` parameters back
/// to back and each contribution is `(cluster, gradient)`.
pub fn apply_gradients<'a>(
    models: &mut [f32],
    p: usize,
    scale: f32,
    contributions: impl IntoIterator<Item = (usize, &'a [f32])>,
) {
    for (cluster, grad) in contributions {
        axpy(-scale, grad, &mut models[cluster * p..(cluster + 1) * p]);
    }
}

/// Model averaging (IFCA option II, FedAvg): every cluster model that receives at
/// least one contribution `(cluster, model, weight)` becomes the weighted mean of
/// them; a cluster that receives none keeps its model. `sums` is scratch space of
/// `models.len()` values.
pub fn average_models<'a>(
    models: &mut [f32],
    p: usize,
    sums: &mut Vec<f64>,
    contributions: impl IntoIterator<Item = (usize, &'a [f32], f64)>,
) {
    let k = models.len() / p;
    sums.clear();
    sums.resize(models.len(), 0.0);
    let mut weight = vec![0.0f64; k];
    for (cluster, model, w) in contributions {
        weight[cluster] += w;
        for (s, v) in sums[cluster * p..(cluster + 1) * p].iter_mut().zip(model) {
            *s += w * f64::from(*v);
        }
    }
    for (j, w) in weight.iter().enumerate() {
        if *w > 0.0 {
            for (m, s) in models[j * p..(j + 1) * p]
                .iter_mut()
                .zip(&sums[j * p..(j + 1) * p])
            {
                *m = (s / w) as f32;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gradient_step_per_cluster() {
        let mut models = vec![1.0, 1.0, 5.0, 5.0];
        let g1 = [1.0, 0.0];
        let g2 = [0.0, 2.0];
        apply_gradients(
            &mut models,
            2,
            0.5,
            [(0, &g1[..]), (0, &g2[..]), (1, &g1[..])],
        );
        assert_eq!(models, vec![0.5, 0.0, 4.5, 5.0]);
    }

    #[test]
    fn average_keeps_empty_clusters() {
        let mut models = vec![0.0, 0.0, 7.0, 7.0];
        let a = [1.0, 2.0];
        let b = [3.0, 6.0];
        let mut sums = Vec::new();
        average_models(
            &mut models,
            2,
            &mut sums,
            [(0, &a[..], 1.0), (0, &b[..], 3.0)],
        );
        assert_eq!(models, vec![2.5, 5.0, 7.0, 7.0]);
    }
}
