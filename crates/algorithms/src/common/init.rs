//! How an algorithm draws its initial models.

use rand::Rng as _;
use rand_distr::{Distribution, StandardNormal};
use serde::{Deserialize, Serialize};

use fedcluster_core::{Model, Rng};

/// Initialisation scheme of cluster models.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case", deny_unknown_fields, tag = "kind")]
pub enum InitScheme {
    /// The model's own initialisation (PyTorch-style uniform for linear layers).
    #[default]
    Model,
    /// Coordinate-wise Bernoulli(0.5) entries in {0, 1}, as in the IFCA
    /// paper's synthetic experiments and their public code.
    Bernoulli,
    /// Independent N(0, std²) entries.
    Gaussian {
        /// Standard deviation of each entry.
        std: f32,
    },
    /// All zeros.
    Zeros,
}

impl InitScheme {
    /// Writes one initial parameter vector into `out`.
    pub fn fill(&self, model: &dyn Model, rng: &mut Rng, out: &mut [f32]) {
        match *self {
            InitScheme::Model => model.init(rng, out),
            InitScheme::Bernoulli => {
                for v in out.iter_mut() {
                    *v = if rng.random::<bool>() { 1.0 } else { 0.0 };
                }
            }
            InitScheme::Gaussian { std } => {
                for v in out.iter_mut() {
                    let z: f32 = StandardNormal.sample(rng);
                    *v = std * z;
                }
            }
            InitScheme::Zeros => out.fill(0.0),
        }
    }
}
