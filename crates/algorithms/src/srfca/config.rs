//! SR-FCA configuration.

use serde::{Deserialize, Serialize};

use crate::common::checked::{FieldError, Validate, at_least_one, positive};
use crate::common::init::InitScheme;
use crate::common::trainer::Optimizer;

/// How distances between models are measured.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Distance {
    /// Euclidean distance between parameter vectors (Section 4).
    L2,
    /// The cross-cluster loss of Definition 5.1, `½(f_i(w_j) + f_j(w_i))`.
    #[default]
    CrossLoss,
}

/// The threshold `λ` of ONE_SHOT and MERGE.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields, tag = "kind")]
pub enum Threshold {
    /// `λ` itself.
    Absolute {
        /// The distance below which two models are linked.
        value: f64,
    },
    /// `λ` as this quantile of the pairwise distances between the clients'
    /// local models (the public code's `dist_fraction`).
    Quantile {
        /// A fraction in `(0, 1)`.
        value: f64,
    },
}

/// The scale of the cross-cluster loss's terms, which an absolute `λ` is
/// read on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields, tag = "kind")]
pub enum LossScale {
    /// Definition 5.1's: each client's mean loss, and a cluster's loss the
    /// sample-weighted mean over its members (the loss on their pooled data).
    #[default]
    Mean,
    /// The public code's (`src/utils.py`: `compute_metric`, `compute_dist`):
    /// a client's loss is the sum of its minibatch means over its samples,
    /// the minibatches of `batch` drawn by a shuffled loader, here its
    /// expectation over the shuffle, `mean x ceil(n / batch) / n`; a
    /// cluster's loss is the unweighted mean over its members.
    BatchSums {
        /// The code's training-loader batch size (`batch.train`).
        batch: usize,
    },
}

impl LossScale {
    /// The factor of a client's mean loss over its `samples`.
    pub fn factor(self, samples: usize) -> f64 {
        match self {
            LossScale::Mean => 1.0,
            LossScale::BatchSums { batch } if samples > 0 => {
                samples.div_ceil(batch.max(1)) as f64 / samples as f64
            }
            LossScale::BatchSums { .. } => 1.0,
        }
    }

    /// The weight of a member with `samples` in a cluster's loss.
    pub fn weight(self, samples: usize) -> f64 {
        match self {
            LossScale::Mean => samples as f64,
            LossScale::BatchSums { .. } => 1.0,
        }
    }
}

/// How ONE_SHOT and MERGE cut their threshold graph into clusters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Clustering {
    /// Connected components (the paper's Algorithms 1 and 4).
    #[default]
    Components,
    /// Correlation clustering of the signed graph (linked within `λ`, apart
    /// beyond) by the pivot algorithm, pivots drawn from the stream
    /// `(seed, Clustering, round)`: the public code's `correlation_clustering`.
    Correlation,
}

/// What follows ONE_SHOT.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields, tag = "kind")]
pub enum AfterOneShot {
    /// SR-FCA: `refine_steps` REFINE steps, then TrimmedMeanGD.
    #[default]
    Refine,
    /// ONE_SHOT-IFCA (the SR-FCA paper's baseline): IFCA with model averaging
    /// from ONE_SHOT's clusters, each cluster model starting at the mean of its
    /// members' local models; clients pick the lowest-loss model and run
    /// `local_steps` gradient steps of size `lr`.
    Ifca {
        /// Local steps per round.
        local_steps: usize,
    },
}

/// `refine_schedule`: the step size over a REFINE step's TrimmedMeanGD rounds
/// (`super::schedule`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields, tag = "kind")]
pub enum RefineSchedule {
    /// `np.interp(r, [0, warmup_rounds, refine_rounds], [0, 1, 0])`: 0 at
    /// the first round (as `LambdaLR`'s first step), the full step at
    /// `warmup_rounds`, then linear towards 0 at `refine_rounds`. With
    /// `refine_rounds <= warmup_rounds` (no round after the warm-up) the
    /// rounds run at the full step, as `local_optimizer.schedule` does.
    Triangular {
        /// Rounds of the linear warm-up from 0.
        warmup_rounds: usize,
    },
}

/// SR-FCA parameters.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// `λ`.
    pub threshold: Threshold,
    /// `t`: clusters (components) with fewer clients are dropped.
    #[serde(default = "default_min_size")]
    pub min_size: usize,
    /// ℓ2 or cross-cluster loss.
    #[serde(default)]
    pub distance: Distance,
    /// The cross-cluster loss's scale: Definition 5.1's mean (default) or
    /// the public code's sums of minibatch means.
    #[serde(default, skip_serializing_if = "is_default")]
    pub loss_scale: LossScale,
    /// ONE_SHOT: full-batch gradient steps of each client's local model.
    #[serde(default = "default_local_steps")]
    pub local_steps: usize,
    /// ONE_SHOT: step size of the local training.
    pub local_lr: f32,
    /// ONE_SHOT's local training spread over this many rounds (default 1),
    /// `local_steps` split as evenly as they go: each client keeps its model
    /// and optimizer between them, so a run checkpoints between the parts of
    /// a long local training (the parts' minibatches are drawn from each
    /// round's stream, so the models differ from one round's).
    #[serde(default = "one", skip_serializing_if = "is_one")]
    pub local_rounds: usize,
    /// ONE_SHOT: full-batch GD (default) or Adam on minibatches, as the
    /// paper's public code trains.
    #[serde(default)]
    pub local_optimizer: Optimizer,
    /// `R`: REFINE steps.
    #[serde(default = "default_refine_steps")]
    pub refine_steps: usize,
    /// TrimmedMeanGD rounds per REFINE step.
    #[serde(default = "default_refine_rounds")]
    pub refine_rounds: usize,
    /// `β`: the trimmed mean drops this fraction at each end, in `[0, 0.5)`.
    #[serde(default = "default_trim")]
    pub trim: f64,
    /// TrimmedMeanGD step size.
    pub lr: f32,
    /// Cluster training (TrimmedMeanGD, and ONE_SHOT-IFCA's local steps):
    /// full-batch GD (default) or Adam on minibatches, as the public code
    /// trains.
    #[serde(default)]
    pub optimizer: Optimizer,
    /// TrimmedMeanGD: local steps per round. With 1 step of GD (the default)
    /// a member sends its gradient (Algorithm 3); otherwise it runs this many
    /// steps of `optimizer` from the cluster model and sends its update
    /// divided by `lr`, as the public code's REFINE does.
    #[serde(default = "default_refine_local_steps")]
    pub refine_local_steps: usize,
    /// TrimmedMeanGD's step size over each REFINE step's rounds, as the
    /// public code's `ClusterTrainer` schedules it (absent, the default: `lr`
    /// throughout); the final training keeps `lr`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refine_schedule: Option<RefineSchedule>,
    /// `w_0`, the start of every local and cluster model.
    #[serde(default)]
    pub init: InitScheme,
    /// REFINE (SR-FCA) or IFCA (ONE_SHOT-IFCA) after ONE_SHOT.
    #[serde(default)]
    pub then: AfterOneShot,
    /// Connected components (default) or correlation clustering.
    #[serde(default, skip_serializing_if = "is_default")]
    pub clustering: Clustering,
    /// Theorem 4.11's resampling: each client's data is cut into
    /// `refine_steps + 1` disjoint blocks of rows; ONE_SHOT uses block 0 and
    /// REFINE `r` block `r`, which recomputes the local models `w_i` on it
    /// before its TrimmedMeanGD. The final training uses all the data.
    #[serde(default, skip_serializing_if = "is_default")]
    pub resample: bool,
    /// Partial participation in REFINE's TrimmedMeanGD and the final training:
    /// each round every cluster sends its model to this many of its members,
    /// drawn uniformly without replacement (all of them when it has no more),
    /// as the public code's `ClusterTrainer` does (`num_clients_per_round`);
    /// absent (default): every member every round.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clients_per_round: Option<usize>,
}

fn one() -> usize {
    1
}

fn is_one(value: &usize) -> bool {
    *value == 1
}

fn is_default<T: Default + PartialEq>(value: &T) -> bool {
    *value == T::default()
}

fn default_min_size() -> usize {
    2
}
fn default_local_steps() -> usize {
    100
}
fn default_refine_steps() -> usize {
    2
}
fn default_refine_rounds() -> usize {
    20
}
fn default_refine_local_steps() -> usize {
    1
}
fn default_trim() -> f64 {
    0.1
}

impl Config {
    /// Rounds the clustering takes: the local models, the pairwise losses
    /// (cross-loss only), then per REFINE step (with `resample`, the local
    /// models and pairwise losses again on the step's block) its TrimmedMeanGD
    /// rounds and an evaluation round (cross-loss only). Later rounds keep
    /// training the final clusters' models with TrimmedMeanGD (or run IFCA,
    /// after ONE_SHOT alone).
    pub fn clustering_rounds(&self) -> usize {
        match self.then {
            AfterOneShot::Refine => self.one_shot_rounds() + self.refine_steps * self.refine_span(),
            AfterOneShot::Ifca { .. } => self.one_shot_rounds(),
        }
    }

    /// Rounds of ONE_SHOT: the local models (`local_rounds` of them), then
    /// the pairwise losses (cross-loss only).
    pub fn one_shot_rounds(&self) -> usize {
        self.local_rounds + usize::from(self.distance == Distance::CrossLoss)
    }

    /// Rounds of a REFINE step's new local models with `resample` (one
    /// round of training, then the pairwise losses with cross-loss).
    pub fn relocal_rounds(&self) -> usize {
        1 + usize::from(self.distance == Distance::CrossLoss)
    }

    /// The local steps of ONE_SHOT's part `part` of `local_rounds`.
    pub fn local_part_steps(&self, part: usize) -> usize {
        let (steps, parts) = (self.local_steps, self.local_rounds.max(1));
        steps * (part + 1) / parts - steps * part / parts
    }

    /// Rounds of one REFINE step.
    pub fn refine_span(&self) -> usize {
        let eval = usize::from(self.distance == Distance::CrossLoss);
        let relocal = if self.resample {
            self.relocal_rounds()
        } else {
            0
        };
        relocal + self.refine_rounds + eval
    }
}

impl Validate for Config {
    fn validate(&self) -> Result<(), FieldError> {
        match self.threshold {
            Threshold::Absolute { value } => positive("threshold.value", value)?,
            Threshold::Quantile { value } => {
                if !(value > 0.0 && value < 1.0) {
                    return Err(FieldError::new(
                        "threshold.value",
                        format!("a quantile must lie in (0, 1), got {value}"),
                    ));
                }
            }
        }
        at_least_one("min_size", self.min_size)?;
        if let LossScale::BatchSums { batch } = self.loss_scale {
            at_least_one("loss_scale.batch", batch)?;
            if self.distance != Distance::CrossLoss {
                return Err(FieldError::new(
                    "loss_scale",
                    "scales the cross-cluster loss: it needs distance = \"cross-loss\"",
                ));
            }
        }
        at_least_one("local_steps", self.local_steps)?;
        at_least_one("local_rounds", self.local_rounds)?;
        if self.local_rounds > self.local_steps {
            return Err(FieldError::new(
                "local_rounds",
                format!(
                    "splits local_steps = {} over rounds: at most that many, got {}",
                    self.local_steps, self.local_rounds
                ),
            ));
        }
        if self.local_rounds > 1 && self.resample {
            return Err(FieldError::new(
                "local_rounds",
                "resample cuts each client's data by round; split ONE_SHOT without it",
            ));
        }
        positive("local_lr", f64::from(self.local_lr))?;
        self.local_optimizer.validate("local_optimizer")?;
        at_least_one("refine_rounds", self.refine_rounds)?;
        if !(0.0..0.5).contains(&self.trim) {
            return Err(FieldError::new(
                "trim",
                format!("must lie in [0, 0.5), got {}", self.trim),
            ));
        }
        positive("lr", f64::from(self.lr))?;
        self.optimizer.validate("optimizer")?;
        at_least_one("refine_local_steps", self.refine_local_steps)?;
        if let Some(count) = self.clients_per_round {
            at_least_one("clients_per_round", count)?;
        }
        if let AfterOneShot::Ifca { local_steps } = self.then {
            at_least_one("then.local_steps", local_steps)?;
            if self.refine_schedule.is_some() {
                return Err(FieldError::new(
                    "refine_schedule",
                    "schedules REFINE's rounds; then.kind = \"ifca\" runs no REFINE",
                ));
            }
            if self.resample {
                return Err(FieldError::new(
                    "resample",
                    "resamples per REFINE step; then.kind = \"ifca\" runs no REFINE",
                ));
            }
        }
        self.init.validate("init")
    }
}
