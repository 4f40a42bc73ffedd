//! CFL-MGD: clustered federated learning based on momentum gradient descent.
//!
//! Zhao, Zhang, Qian, Li, Wang, "Clustered Federated Learning Based on Momentum
//! Gradient Descent" (IFCA with Polyak momentum), Algorithm 1.
//!
//! Round protocol (Algorithm 1, lines 2-16):
//! 1. The server broadcasts the `P` cluster models `χ_p` and their momentum
//!    buffers `u_p` (initially zero) to the participating clients `M_t`.
//! 2. Each participant picks `p̂ = argmin_p φ_i(χ_p)` (line 5).
//! 3. Option I (gradient averaging): it computes `g_i = ∇φ_i(χ_p̂)` and the
//!    momentum `u_i = β u_p̂ + g_i` and sends `p̂` and `u_i` (lines 8-10).
//!    Option II (model averaging): LocalUpdate runs `H` steps of
//!    `u <- β u + ∇φ_i(χ̃)`, `χ̃ <- χ̃ − η u` from `(χ_p̂, u_p̂)` and sends `p̂`, `χ̃_i`
//!    and `u_i` (lines 12, 19-22).
//! 4. Option I: `χ_p <- χ_p − (η/|M_t|) Σ_{i in S_p} u_i`; option II: `χ_p <-` the mean
//!    of the `χ̃_i` of `S_p`. Either way `u_p <-` the mean of the `u_i` of `S_p`,
//!    sent back with the model next round (lines 15-16). Means are
//!    sample-weighted (equal to the paper's plain means for equal client sizes).
//!
//! Where a client's momentum starts (`buffer`): Algorithm 1's LocalUpdate
//! takes `(χ_p̂, u_p̂)`, the chosen cluster's averaged buffer (line 12), and
//! option I's line 9 writes `u_i(t) = β u_i(t−1) + g_i` with `u_i` reset to its
//! cluster's `u_p` after each round (line 15): the default, `"cluster"`, starts
//! from `u_p̂` under both options (the same as line 9 for a client that stays in
//! its cluster). `"own"` starts from the client's own `u_i(t−1)`, the buffer it
//! sent last round (zero at first), whichever cluster it picks now.
//!
//! Local steps (`optimizer`): Algorithm 1's LocalUpdate takes full-batch
//! gradients; the paper's CIFAR-10 protocol ("step size decay 0.99",
//! participation 0.1) trains on minibatches, which `optimizer = { kind =
//! "sgd", batch_size, lr_decay }` selects: the same heavy-ball steps on
//! shuffled minibatches from the client's stream, the step size of round `t`
//! being `η · lr_decay^t` (`{ kind = "gd", lr_decay }` decays full-batch steps).
//!
//! The machinery is IFCA's ([`crate::ifca`], with `momentum = β`); this module is
//! the algorithm's configuration. With `clusters = 1` it is FedAvg with momentum,
//! the paper's FedAvg baseline.

use serde::{Deserialize, Serialize};

use crate::common::aggregate::Aggregation;
use crate::common::checked::{Checked, FieldError, Validate};
use crate::common::init::InitScheme;
use crate::common::trainer::Optimizer;
use crate::ifca;
use crate::table::{Algorithm, Setup};

/// CFL-MGD parameters.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// Number of clusters `P`.
    pub clusters: usize,
    /// Option I (`gradient`) or option II (`model`).
    #[serde(default = "default_aggregation")]
    pub aggregation: Aggregation,
    /// Step size `η`.
    pub lr: f32,
    /// Momentum coefficient `β`.
    #[serde(default = "default_momentum")]
    pub momentum: f32,
    /// Local steps `H` (model averaging).
    #[serde(default = "default_local_steps")]
    pub local_steps: usize,
    /// Fraction of clients per round.
    #[serde(default = "default_participation")]
    pub participation: f64,
    /// Independent random initialisations run side by side.
    #[serde(default = "default_restarts")]
    pub restarts: usize,
    /// How the initial models are drawn.
    #[serde(default)]
    pub init: InitScheme,
    /// Where a client's momentum starts each round: its chosen cluster's
    /// buffer (`"cluster"`, Algorithm 1) or its own (`"own"`).
    #[serde(default, skip_serializing_if = "MomentumBuffer::is_cluster")]
    pub buffer: MomentumBuffer,
    /// Local steps (option II): full-batch (default, `{ kind = "gd" }`) or on
    /// minibatches (`{ kind = "sgd", batch_size }`, its own `momentum` left
    /// 0: `β` is `momentum`), either with a per-round step-size decay
    /// `lr_decay` (the paper's CIFAR-10 protocol: minibatches, decay 0.99).
    #[serde(default, skip_serializing_if = "Optimizer::is_plain_gd")]
    pub optimizer: Optimizer,
}

/// Where a client's momentum starts each round (see the module doc).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum MomentumBuffer {
    /// The chosen cluster's averaged buffer `u_p̂` (Algorithm 1, line 12).
    #[default]
    Cluster,
    /// The client's own buffer `u_i(t−1)` from its last round.
    Own,
}

impl MomentumBuffer {
    fn is_cluster(&self) -> bool {
        *self == MomentumBuffer::Cluster
    }
}

fn default_aggregation() -> Aggregation {
    Aggregation::Model
}
fn default_momentum() -> f32 {
    0.9
}
fn default_local_steps() -> usize {
    10
}
fn default_participation() -> f64 {
    1.0
}
fn default_restarts() -> usize {
    1
}

impl Config {
    /// The IFCA configuration that carries CFL-MGD out.
    pub fn ifca(&self) -> ifca::Config {
        ifca::Config {
            clusters: self.clusters,
            aggregation: self.aggregation,
            lr: self.lr.into(),
            local_steps: self.local_steps,
            participation: self.participation,
            restarts: self.restarts,
            init: self.init,
            stable_rounds: 0,
            min_share: 0.0,
            weight_sharing: false,
            momentum: self.momentum,
            optimizer: self.optimizer,
            pretrain_rounds: 0,
            freeze_trunk: false,
            weighting: Default::default(),
            clients: Default::default(),
            clients_per_round: None,
            round_schedule: None,
        }
    }
}

impl Validate for Config {
    fn validate(&self) -> Result<(), FieldError> {
        if !(self.momentum > 0.0 && self.momentum < 1.0) {
            return Err(FieldError::new(
                "momentum",
                format!("must lie in (0, 1), got {}", self.momentum),
            ));
        }
        self.ifca().validate()
    }
}

/// CFL-MGD in the algorithm table: IFCA's halves for [`Config::ifca`].
pub struct CflMgd;

impl Algorithm for CflMgd {
    const STARTS_FROM_MODELS: bool = true;
    type Config = Config;
    type Down = ifca::Down;
    type Up = ifca::Up;
    type Server = ifca::IfcaServer;
    type Client = ifca::IfcaClient;

    fn server(config: Checked<Config>, setup: &Setup<'_>) -> Result<Self::Server, FieldError> {
        ifca::Ifca::server(Checked::new(config.ifca())?, setup)
    }

    fn client(config: &Checked<Config>) -> Self::Client {
        let client = ifca::Ifca::client(
            &Checked::new(config.ifca()).expect("checked with CFL-MGD's config"),
        );
        match config.buffer {
            MomentumBuffer::Cluster => client,
            MomentumBuffer::Own => client.with_own_momentum(),
        }
    }
}

#[cfg(test)]
mod tests;
