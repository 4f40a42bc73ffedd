//! Configuration of the two-phase method (and of Phase 2 alone, which is IFCA
//! in Su, Xu, Yang's sense, and the oracle when started from the truth).

use serde::{Deserialize, Serialize};

use crate::common::checked::{FieldError, Validate, at_least_one, at_most, fraction, positive};
use crate::common::init::InitScheme;

/// How each client refines its cluster's model in Phase 2 (step 8).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields, tag = "kind")]
pub enum LocalUpdate {
    /// FedAvg-based: `steps` full-batch gradient steps of size `lr`.
    Fedavg {
        /// Local steps `s`.
        steps: usize,
    },
    /// FedProx-based: `argmin L_i(θ) + ‖θ − θ_{t−1}‖² / (2 lr)`, solved by
    /// gradient descent with step `lr` until the proximal gradient has shrunk by
    /// `tol`, or for at most `max_steps` steps.
    Fedprox {
        /// Relative tolerance on the proximal gradient's norm.
        #[serde(default = "default_prox_tol")]
        tol: f64,
        /// Cap on the inner gradient steps.
        #[serde(default = "default_prox_steps")]
        max_steps: usize,
    },
}

fn default_prox_tol() -> f64 {
    1e-4
}
fn default_prox_steps() -> usize {
    200
}

/// How the top-k subspace of the residual moment `Y_{i,t}` is computed
/// (Phase 1, step 9).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields, tag = "kind")]
pub enum SubspaceSolver {
    /// Clients send their `d x d` moment; the server takes a direct SVD
    /// (the simplification of Section V).
    Svd,
    /// The federated orthogonal iteration (Algorithm 3): `steps` exchanges of
    /// `d x k` products, a QR at the server after every second one.
    Orthogonal {
        /// `T₁`, even.
        steps: usize,
    },
}

/// Phase 1, federated moment descent on anchor clients.
///
/// `alpha` and `beta` bound the curvature `E[∇²ℓ]` of the per-sample loss
/// `ℓ`, and the moment uses `ε = −∇ℓ` (the paper's Remark 3). fedcluster's
/// squared loss is not halved, so for features with covariance `Σ` its curvature
/// is `2Σ`: the paper's `α = β = 1` for `x ~ N(0, I)` are `alpha = beta = 2`
/// here, which gives the same steps as the paper's `ε = (y − ⟨x, θ⟩)x`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Phase1 {
    /// Moment-descent iterations `T`.
    #[serde(default = "default_iterations")]
    pub iterations: usize,
    /// Anchor clients `m_H` (default `⌈3 k ln k⌉`, at least `k`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub anchors: Option<usize>,
    /// Clients with at least this many points may be anchors (default: the
    /// `m_H` clients holding the most points and every client tied with them).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub anchor_min_points: Option<usize>,
    /// Clients sampled for each subspace estimate `m` (default: every client,
    /// anchors included, as in Section V).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subspace_clients: Option<usize>,
    /// The exact mode of the Phase 1 box: subspace clients are never reused and
    /// each anchor draws fresh points every iteration. Default: data are reused.
    #[serde(default)]
    pub fresh_data: bool,
    /// Direct SVD (default) or the federated orthogonal iteration.
    #[serde(default = "default_subspace")]
    pub subspace: SubspaceSolver,
    /// Power-iteration steps `T₂` at each anchor.
    #[serde(default = "default_power_steps")]
    pub power_steps: usize,
    /// Lower curvature bound `α`.
    pub alpha: f32,
    /// Upper curvature bound `β >= α`.
    pub beta: f32,
    /// An anchor stops once `σ̂ <= epsilon · alpha · separation / √2`.
    #[serde(default = "default_epsilon")]
    pub epsilon: f32,
    /// Minimum distance `Δ` between the true cluster models; anchors closer than
    /// `Δ/2` are grouped into one cluster (step 16).
    pub separation: f32,
}

fn default_iterations() -> usize {
    5
}
fn default_subspace() -> SubspaceSolver {
    SubspaceSolver::Svd
}
fn default_power_steps() -> usize {
    50
}
fn default_epsilon() -> f32 {
    0.1
}

impl Phase1 {
    /// `m_H` for `k` clusters.
    pub fn anchor_count(&self, k: usize) -> usize {
        self.anchors.unwrap_or_else(|| {
            let k = k as f64;
            ((3.0 * k * k.ln()).ceil() as usize).max(k as usize)
        })
    }

    /// Exchanges per iteration: the subspace exchanges, then the anchor step.
    pub fn rounds_per_iteration(&self) -> usize {
        match self.subspace {
            SubspaceSolver::Svd => 2,
            SubspaceSolver::Orthogonal { steps } => steps + 1,
        }
    }
}

impl Validate for Phase1 {
    fn validate(&self) -> Result<(), FieldError> {
        at_least_one("iterations", self.iterations)?;
        if let Some(a) = self.anchors {
            at_least_one("anchors", a)?;
        }
        if let Some(m) = self.subspace_clients {
            at_least_one("subspace_clients", m)?;
        }
        if let SubspaceSolver::Orthogonal { steps } = self.subspace
            && (steps == 0 || steps % 2 == 1)
        {
            return Err(FieldError::new(
                "subspace.steps",
                format!("must be even and at least 2, got {steps}"),
            ));
        }
        at_least_one("power_steps", self.power_steps)?;
        positive("alpha", f64::from(self.alpha))?;
        positive("beta", f64::from(self.beta))?;
        if self.beta < self.alpha {
            return Err(FieldError::new(
                "beta",
                format!("must be at least alpha = {}, got {}", self.alpha, self.beta),
            ));
        }
        positive("epsilon", f64::from(self.epsilon))?;
        positive("separation", f64::from(self.separation))
    }
}

/// The two-phase method: FedMD on anchors, then FedX + clustering.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// Number of clusters `k`.
    pub clusters: usize,
    /// Step size `η` of Phase 2's local update.
    pub lr: f32,
    /// Phase 2's local update (FedAvg with `s` steps, or FedProx).
    #[serde(default = "default_local_update")]
    pub local_update: LocalUpdate,
    /// Fraction of clients taking part in each Phase 2 round.
    #[serde(default = "default_participation")]
    pub participation: f64,
    /// Phase 1's starting point `θ₀` (shared by all anchors), or Phase 2's `k`
    /// starting models when Phase 1 is skipped.
    #[serde(default)]
    pub init: InitScheme,
    /// Where Phase 2 starts: Phase 1's centres (default), `init`, or the truth.
    #[serde(default)]
    pub start: Start,
    /// Phase 1; required when `start = "phase1"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase1: Option<Phase1>,
}

/// Where Phase 2 starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Start {
    /// The centres of Phase 1: the two-phase method.
    #[default]
    Phase1,
    /// `k` models drawn from `init`: IFCA as Su, Xu, Yang compare with it.
    Init,
    /// The true cluster parameters, which the caller hands in: their oracle.
    Truth,
    /// `k` models from `init`, and every client told its true cluster, which
    /// the caller hands in: their oracle where no true parameters exist (MNIST).
    Labels,
}

fn default_local_update() -> LocalUpdate {
    LocalUpdate::Fedavg { steps: 5 }
}
fn default_participation() -> f64 {
    1.0
}

impl Config {
    /// The rounds Phase 1 takes at most (it ends early once every anchor stopped).
    pub fn phase1_rounds(&self) -> usize {
        match (&self.phase1, self.start) {
            (Some(p), Start::Phase1) => p.iterations * p.rounds_per_iteration(),
            _ => 0,
        }
    }
}

impl Validate for Config {
    fn validate(&self) -> Result<(), FieldError> {
        at_least_one("clusters", self.clusters)?;
        at_most(
            "clusters",
            self.clusters,
            fedcluster_core::limits::MAX_CLUSTERS,
        )?;
        positive("lr", f64::from(self.lr))?;
        match self.local_update {
            LocalUpdate::Fedavg { steps } => at_least_one("local_update.steps", steps)?,
            LocalUpdate::Fedprox { tol, max_steps } => {
                positive("local_update.tol", tol)?;
                at_least_one("local_update.max_steps", max_steps)?;
            }
        }
        fraction("participation", self.participation)?;
        self.init.validate("init")?;
        match (&self.phase1, self.start) {
            (Some(p), Start::Phase1) => p.validate().map_err(|e| e.within("phase1")),
            (None, Start::Phase1) => Err(FieldError::new(
                "phase1",
                "missing: give the Phase 1 table, or set start = \"init\" to run \
                 Phase 2 alone from `init`",
            )),
            _ => Ok(()),
        }
    }
}
