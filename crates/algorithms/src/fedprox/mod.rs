//! FedProx: one global model, each client solving a proximal local problem.
//!
//! Li, Sahu, Zaheer, Sanjabi, Talwalkar, Smith, "Federated Optimization in
//! Heterogeneous Networks", MLSys 2020; in the form Su, Xu, Yang (IEEE Trans.
//! Inf. Theory 2024, Phase 2) compare with, the proximal weight is `μ = 1/lr`.
//!
//! Round protocol:
//! 1. The server samples the participants and sends them the global model `w_t`.
//! 2. Each participant solves `argmin_w L_i(w) + ‖w − w_t‖² / (2 lr)` by gradient
//!    descent with step `lr` until the proximal gradient has shrunk by `tol`
//!    (at most `max_steps` steps) and returns `w_i`.
//! 3. The server sets `w_{t+1} = Σ_i (n_i / N_t) w_i`.
//!
//! This is Phase 2 of [`crate::twophase`] with one cluster, started from `init`,
//! so the halves are [`crate::twophase::TwoPhaseServer`] and
//! [`crate::twophase::TwoPhaseClient`] for [`Config::two_phase`].

use serde::{Deserialize, Serialize};

use crate::common::checked::{Checked, FieldError, Validate};
use crate::common::init::InitScheme;
use crate::table::{Algorithm, Setup};
use crate::twophase::{self, LocalUpdate, Start, TwoPhase};

/// FedProx parameters.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// Step size of the inner gradient descent; the proximal weight is `1/lr`.
    pub lr: f32,
    /// Relative tolerance on the proximal gradient's norm.
    #[serde(default = "default_tol")]
    pub tol: f64,
    /// Cap on the inner gradient steps.
    #[serde(default = "default_max_steps")]
    pub max_steps: usize,
    /// Fraction of clients taking part in each round.
    #[serde(default = "default_participation")]
    pub participation: f64,
    /// How the global model is drawn.
    #[serde(default)]
    pub init: InitScheme,
}

fn default_tol() -> f64 {
    1e-4
}
fn default_max_steps() -> usize {
    200
}
fn default_participation() -> f64 {
    1.0
}

impl Config {
    /// The equivalent two-phase config: Phase 2 alone, one cluster, FedProx steps.
    pub fn two_phase(&self) -> twophase::Config {
        twophase::Config {
            clusters: 1,
            lr: self.lr,
            local_update: LocalUpdate::Fedprox {
                tol: self.tol,
                max_steps: self.max_steps,
            },
            participation: self.participation,
            init: self.init,
            start: Start::Init,
            phase1: None,
        }
    }
}

impl Validate for Config {
    fn validate(&self) -> Result<(), FieldError> {
        self.two_phase()
            .validate()
            .map_err(|e| match e.field.as_str() {
                "local_update.tol" => FieldError::new("tol", e.message),
                "local_update.max_steps" => FieldError::new("max_steps", e.message),
                _ => e,
            })
    }
}

/// FedProx in the algorithm table: the two-phase method's halves for
/// [`Config::two_phase`].
pub struct FedProx;

impl Algorithm for FedProx {
    type Config = Config;
    type Down = twophase::Down;
    type Up = twophase::Up;
    type Server = twophase::TwoPhaseServer;
    type Client = twophase::TwoPhaseClient;

    fn server(config: Checked<Config>, setup: &Setup<'_>) -> Result<Self::Server, FieldError> {
        TwoPhase::server(Checked::new(config.two_phase())?, setup)
    }

    fn client(config: &Checked<Config>) -> Self::Client {
        TwoPhase::client(&Checked::new(config.two_phase()).expect("checked with FedProx's config"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::common::checked::Checked;

    #[test]
    fn bad_fields_are_named_as_written() {
        let c = Config {
            lr: 0.1,
            tol: 0.0,
            max_steps: 10,
            participation: 1.0,
            init: InitScheme::Zeros,
        };
        assert_eq!(Checked::new(c.clone()).unwrap_err().field, "tol");
        let c = Config {
            tol: 1e-3,
            lr: -1.0,
            ..c
        };
        assert_eq!(Checked::new(c).unwrap_err().field, "lr");
    }
}
