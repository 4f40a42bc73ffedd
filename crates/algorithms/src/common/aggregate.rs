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
/// them; a cluster that receives none keeps its model.
pub fn average_models<'a>(
    models: &mut [f32],
    p: usize,
    sums: &mut ModelSums,
    contributions: impl IntoIterator<Item = (usize, &'a [f32], f64)>,
) {
    sums.reset(models.len() / p, p);
    for (cluster, model, w) in contributions {
        sums.add(cluster, model, w);
    }
    sums.finish(models);
}

/// Running sums for model averaging over a stream of replies: add each
/// contribution as it arrives, then [`ModelSums::finish`] into the models.
#[derive(Debug, Default)]
pub struct ModelSums {
    sums: Vec<f64>,
    weights: Vec<f64>,
}

impl ModelSums {
    /// Starts a round for `k` models of `p` parameters.
    pub fn reset(&mut self, k: usize, p: usize) {
        self.sums.clear();
        self.sums.resize(k * p, 0.0);
        self.weights.clear();
        self.weights.resize(k, 0.0);
    }

    /// Adds `weight · model` to cluster `cluster`.
    pub fn add(&mut self, cluster: usize, model: &[f32], weight: f64) {
        let p = model.len();
        self.weights[cluster] += weight;
        for (s, v) in self.sums[cluster * p..(cluster + 1) * p]
            .iter_mut()
            .zip(model)
        {
            *s += weight * f64::from(*v);
        }
    }

    /// Every cluster that received a contribution becomes the weighted mean of
    /// them; the others keep their model.
    pub fn finish(&self, models: &mut [f32]) {
        let p = models.len() / self.weights.len().max(1);
        for (j, w) in self.weights.iter().enumerate() {
            if *w > 0.0 {
                for (m, s) in models[j * p..(j + 1) * p]
                    .iter_mut()
                    .zip(&self.sums[j * p..(j + 1) * p])
                {
                    *m = (s / w) as f32;
                }
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
        let mut sums = ModelSums::default();
        average_models(
            &mut models,
            2,
            &mut sums,
            [(0, &a[..], 1.0), (0, &b[..], 3.0)],
        );
        assert_eq!(models, vec![2.5, 5.0, 7.0, 7.0]);
    }
}
