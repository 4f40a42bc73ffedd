//! Per-cluster aggregation at the server. Contributions are applied in the order
//! given (client-id order), so results do not depend on thread scheduling.

use fedcluster_core::params::add_scaled_f64;
use serde::{Deserialize, Serialize};

/// How the server combines what clients send (IFCA Algorithm 2, options I and II).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Aggregation {
    /// Option I: clients send one gradient, the server takes a step.
    Gradient,
    /// Option II: clients run local steps, the server averages models (FedAvg).
    Model,
}

/// How a model average weighs the clients' models.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Weighting {
    /// By each client's number of samples (FedAvg).
    #[default]
    Samples,
    /// Every client alike: the plain mean of the models (the SR-FCA public
    /// code's `average_model`).
    Uniform,
}

impl Weighting {
    /// The weight of a client with `samples` points.
    pub fn weight(self, samples: usize) -> f64 {
        match self {
            Weighting::Samples => samples as f64,
            Weighting::Uniform => 1.0,
        }
    }

    /// Whether this is the default (configs leave it unwritten).
    pub fn is_samples(&self) -> bool {
        *self == Weighting::Samples
    }
}

/// Running sums for model averaging over a stream of replies: add each
/// contribution as it arrives, then [`ModelSums::finish`] into the models.
#[derive(Debug, Default, serde::Serialize, serde::Deserialize)]
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
        add_scaled_f64(
            weight,
            model,
            &mut self.sums[cluster * p..(cluster + 1) * p],
        );
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

/// The sample-weighted mean training loss of a round: each client's loss at
/// its starting model, weighted by its number of samples.
#[derive(Debug, Default, Clone, Copy, serde::Serialize, serde::Deserialize)]
pub struct LossMeter {
    sum: f64,
    samples: usize,
}

impl LossMeter {
    /// Adds one client's loss over `samples` points.
    pub fn add(&mut self, loss: f64, samples: usize) {
        self.sum += loss * samples as f64;
        self.samples += samples;
    }

    /// The weighted mean so far; `None` before any sample.
    pub fn mean(&self) -> Option<f64> {
        (self.samples > 0).then(|| self.sum / self.samples as f64)
    }

    /// The weighted mean, and a fresh meter for the next round.
    pub fn take_mean(&mut self) -> Option<f64> {
        std::mem::take(self).mean()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn average_keeps_empty_clusters() {
        let mut models = vec![0.0, 0.0, 7.0, 7.0];
        let mut sums = ModelSums::default();
        sums.reset(2, 2);
        sums.add(0, &[1.0, 2.0], 1.0);
        sums.add(0, &[3.0, 6.0], 3.0);
        sums.finish(&mut models);
        assert_eq!(models, vec![2.5, 5.0, 7.0, 7.0]);
    }

    #[test]
    fn the_loss_meter_weights_by_samples_and_resets() {
        let mut meter = LossMeter::default();
        assert_eq!(meter.mean(), None);
        meter.add(1.0, 1);
        meter.add(4.0, 3);
        assert_eq!(meter.take_mean(), Some(3.25));
        assert_eq!(meter.mean(), None);
    }
}
