//! How an algorithm draws its initial models.

use rand::Rng as _;
use rand_distr::{Distribution, StandardNormal};
use serde::{Deserialize, Serialize};

use fedcluster_core::{Model, Rng};

use super::checked::{FieldError, positive};

/// Initialisation scheme of cluster models.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case", deny_unknown_fields, tag = "kind")]
pub enum InitScheme {
    /// The model's own initialisation (PyTorch-style uniform for linear layers).
    #[default]
    Model,
    /// Coordinate-wise Bernoulli(0.5) entries in {0, 1} (the IFCA paper's
    /// synthetic experiments), optionally rescaled to the ℓ2 norm `norm`, which
    /// draws from the same distribution as the synthetic θ*.
    Bernoulli {
        /// Rescale to this ℓ2 norm (the 0/1 vector as is when absent).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        norm: Option<f32>,
    },
    /// Independent N(0, std²) entries.
    Gaussian {
        /// Standard deviation of each entry.
        std: f32,
    },
    /// All zeros.
    Zeros,
}

/// Overwrites `models` (models of `p` values, back to back) with `given`,
/// the models a run starts from (`fedcluster run --init-from`): exactly as
/// many models, each of `p` values. Errors name `field`.
pub fn start_from(
    models: &mut [f32],
    p: usize,
    given: &[Vec<f32>],
    field: &str,
) -> Result<(), FieldError> {
    let want = models.len() / p.max(1);
    if given.len() != want {
        return Err(FieldError::new(
            field,
            format!(
                "starts from {want} model(s), the init_from file holds {}",
                given.len()
            ),
        ));
    }
    if let Some(j) = given.iter().position(|g| g.len() != p) {
        return Err(FieldError::new(
            field,
            format!(
                "init_from model {j} has {} values, the model has {p}",
                given[j].len()
            ),
        ));
    }
    for (m, g) in models.chunks_exact_mut(p).zip(given) {
        m.copy_from_slice(g);
    }
    Ok(())
}

impl InitScheme {
    /// Checks the scheme's parameters; `field` is its path in the config.
    pub fn validate(&self, field: &str) -> Result<(), FieldError> {
        match *self {
            InitScheme::Gaussian { std } => positive(&format!("{field}.std"), f64::from(std)),
            InitScheme::Bernoulli { norm: Some(n) } => {
                positive(&format!("{field}.norm"), f64::from(n))
            }
            _ => Ok(()),
        }
    }

    /// Writes one initial parameter vector into `out`.
    pub fn fill(&self, model: &dyn Model, rng: &mut Rng, out: &mut [f32]) {
        match *self {
            InitScheme::Model => model.init(rng, out),
            InitScheme::Bernoulli { norm } => {
                for v in out.iter_mut() {
                    *v = if rng.random::<bool>() { 1.0 } else { 0.0 };
                }
                let ones = out.iter().filter(|v| **v != 0.0).count();
                if let (Some(norm), true) = (norm, ones > 0) {
                    let s = norm / (ones as f32).sqrt();
                    out.iter_mut().for_each(|v| *v *= s);
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
