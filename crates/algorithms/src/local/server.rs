//! Local-training server half: it only collects the clients' models.

use serde::{Deserialize, Serialize};

use fedcluster_core::{AlgoError, ClientId, Message, Model, Rng, RoundCtx, ServerHalf, Snapshot};

use crate::common::aggregate::LossMeter;
use crate::common::checked::{Checked, FieldError, Validate, at_least_one, fraction, positive};
use crate::common::init::InitScheme;
use crate::common::messages::ModelReply;
use crate::common::round_schedule::{self, RoundSchedule};
use crate::common::sampling::participants;
use crate::common::trainer::Optimizer;

/// Local-training parameters.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// Step size.
    pub lr: f32,
    /// Gradient steps per round.
    #[serde(default = "default_local_steps")]
    pub local_steps: usize,
    /// Fraction of clients training in each round.
    #[serde(default = "default_participation")]
    pub participation: f64,
    /// How each client draws its initial model.
    #[serde(default)]
    pub init: InitScheme,
    /// Local optimizer: full-batch GD (default) or Adam on minibatches.
    #[serde(default)]
    pub optimizer: Optimizer,
    /// The step size over the rounds (`crate::common::round_schedule`):
    /// absent (default), `lr` every round.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub round_schedule: Option<RoundSchedule>,
}

fn default_local_steps() -> usize {
    10
}
fn default_participation() -> f64 {
    1.0
}

impl Validate for Config {
    fn validate(&self) -> Result<(), FieldError> {
        positive("lr", f64::from(self.lr))?;
        at_least_one("local_steps", self.local_steps)?;
        fraction("participation", self.participation)?;
        self.optimizer.validate("optimizer")?;
        round_schedule::validate(self.round_schedule, "round_schedule")?;
        self.init.validate("init")
    }
}

/// Server to client: train your own model (carries no parameters).
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
pub struct TrainLocally;

impl Message for TrainLocally {
    fn wire_bytes(&self) -> u64 {
        4
    }
    fn is_finite(&self) -> bool {
        true
    }
}

/// The local-training server half.
#[derive(Debug, serde::Serialize, serde::Deserialize)]
pub struct LocalServer {
    config: Checked<Config>,
    p: usize,
    /// Latest model of every client, `m x p` values.
    models: Vec<f32>,
    assignment: Vec<Option<usize>>,
    train_loss: Option<f64>,
    /// The round's training loss.
    loss: LossMeter,
}

impl LocalServer {
    /// A server for `num_clients` clients.
    pub fn new(config: Checked<Config>, model: &dyn Model, num_clients: usize) -> Self {
        let p = model.num_params();
        Self {
            config,
            p,
            models: vec![0.0; num_clients * p],
            assignment: vec![None; num_clients],
            train_loss: None,
            loss: LossMeter::default(),
        }
    }
}

impl ServerHalf for LocalServer {
    type Down = TrainLocally;
    type Up = ModelReply;

    fn plan(
        &mut self,
        _ctx: &RoundCtx,
        rng: &mut Rng,
    ) -> Result<Vec<(ClientId, TrainLocally)>, AlgoError> {
        let chosen = participants(self.assignment.len(), self.config.participation, rng);
        Ok(chosen.into_iter().map(|id| (id, TrainLocally)).collect())
    }

    fn receive(&mut self, ctx: &RoundCtx, id: ClientId, up: ModelReply) -> Result<(), AlgoError> {
        let p = self.p;
        if up.payload.len() != p {
            return Err(AlgoError::malformed(ctx.round, id));
        }
        let Some(loss) = up.loss else {
            return Err(AlgoError::Diverged {
                round: ctx.round,
                client: Some(id),
                detail: "non-finite loss or local model".into(),
            });
        };
        self.models[id * p..(id + 1) * p].copy_from_slice(&up.payload);
        self.assignment[id] = Some(id);
        self.loss.add(loss, up.samples);
        Ok(())
    }

    fn finish(&mut self, _ctx: &RoundCtx) -> Result<(), AlgoError> {
        self.train_loss = self.loss.take_mean();
        Ok(())
    }

    fn snapshot(&self) -> Snapshot<'_> {
        Snapshot::single(&self.models, self.p, &self.assignment, self.train_loss)
    }
}
