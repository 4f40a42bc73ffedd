//! The SR-FCA client: local training, model evaluation and gradients. It keeps
//! only its cluster-training optimizer's state (Adam's moments).

use fedcluster_core::{AlgoError, ClientEnv, ClientHalf, RoundCtx};

use super::config::{Config, LossScale};
use super::messages::{Down, Up};
use super::resample::DataSplit;
use super::schedule::RefineLr;
use crate::common::messages::ModelReply;
use crate::common::trainer::{LocalTrainer, Optimizer};
use crate::ifca::local_step::{LocalStep, RoundModels, client_round};

/// The client half of SR-FCA.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct SrFcaClient {
    local_steps: usize,
    local_lr: f32,
    local_optimizer: Optimizer,
    lr: f32,
    optimizer: Optimizer,
    trainer: LocalTrainer,
    /// The scale its reported losses are on.
    #[serde(default)]
    loss_scale: LossScale,
    /// With `resample`: the block of its data each round uses.
    #[serde(default)]
    split: Option<DataSplit>,
    /// With `refine_schedule`: the factor of `lr` each round.
    #[serde(default)]
    refine_lr: Option<RefineLr>,
    /// With `local_rounds`: the local model and its optimizer between the
    /// parts of ONE_SHOT's training.
    #[serde(default)]
    kept: Option<(Vec<f32>, LocalTrainer)>,
}

impl SrFcaClient {
    /// A client for `config`.
    pub fn new(config: &Config) -> Self {
        Self {
            local_steps: config.local_steps,
            local_lr: config.local_lr,
            local_optimizer: config.local_optimizer,
            lr: config.lr,
            optimizer: config.optimizer,
            trainer: LocalTrainer::new(config.optimizer),
            loss_scale: config.loss_scale,
            split: DataSplit::new(config),
            refine_lr: RefineLr::new(config),
            kept: None,
        }
    }

    /// The rows of the client's data that `round` uses, as a range.
    fn rows(&self, round: usize, n: usize) -> Result<std::ops::Range<usize>, AlgoError> {
        let Some((split, part)) = self.split.and_then(|s| Some((s, s.part(round)?))) else {
            return Ok(0..n);
        };
        let rows = split.rows(part, n);
        if rows.is_empty() {
            return Err(AlgoError::Protocol(format!(
                "resample: this client holds {n} samples, fewer than the {} blocks its data is cut into (ONE_SHOT and one per REFINE step)",
                split.parts()
            )));
        }
        Ok(rows)
    }
}

impl ClientHalf for SrFcaClient {
    type Down = Down;
    type Up = Up;

    fn handle(
        &mut self,
        ctx: &RoundCtx,
        msg: &Down,
        env: &mut ClientEnv<'_>,
    ) -> Result<Up, AlgoError> {
        let full = env.data;
        let rows = self.rows(ctx.round, full.len())?;
        env.data = full.rows(rows.start, rows.end);
        let reply = self.reply(ctx.round, msg, env);
        env.data = full;
        reply
    }
}

impl SrFcaClient {
    /// The reply to `msg` at `round` on `env.data` (this round's block with
    /// `resample`).
    fn reply(
        &mut self,
        round: usize,
        msg: &Down,
        env: &mut ClientEnv<'_>,
    ) -> Result<Up, AlgoError> {
        let samples = env.data.len();
        Ok(match msg {
            Down::TrainLocal(w0) => {
                let mut params = w0.to_vec();
                // ONE_SHOT trains once, from fresh optimizer state.
                let mut trainer = LocalTrainer::new(self.local_optimizer);
                let loss = trainer.train(&mut params, self.local_lr, self.local_steps, env);
                // Report the loss of the trained model: ONE_SHOT's local fit.
                let fit = if loss.is_finite() {
                    env.model.loss(&params, env.data, env.ws)
                } else {
                    loss
                };
                Up::Local(ModelReply::checked(params, fit, samples))
            }
            Down::TrainLocalPart { w0, steps, keep } => {
                let (mut params, mut trainer) = match w0 {
                    Some(w0) => (w0.to_vec(), LocalTrainer::new(self.local_optimizer)),
                    None => self.kept.take().ok_or_else(|| {
                        AlgoError::Protocol(
                            "ONE_SHOT asked to train on a local model this client does not hold"
                                .into(),
                        )
                    })?,
                };
                let loss = trainer.train(&mut params, self.local_lr, *steps, env);
                if *keep {
                    self.kept = Some((params, trainer));
                    return Ok(Up::Progress {
                        loss: loss.is_finite().then_some(loss),
                        samples,
                    });
                }
                let fit = if loss.is_finite() {
                    env.model.loss(&params, env.data, env.ws)
                } else {
                    loss
                };
                Up::Local(ModelReply::checked(params, fit, samples))
            }
            Down::Evaluate { models, p } => {
                let mut losses = vec![0.0f64; models.len() / (*p).max(1)];
                env.model.losses(models, env.data, &mut losses, env.ws);
                let factor = self.loss_scale.factor(samples);
                // A model that overflows on this client's data is infinitely far.
                losses
                    .iter_mut()
                    .for_each(|l| *l = if l.is_finite() { *l * factor } else { f64::MAX });
                Up::Losses(losses)
            }
            Down::Ifca {
                models,
                p,
                local_steps,
            } => {
                // ONE_SHOT-IFCA: IFCA's model-averaging round, one replica.
                let step = LocalStep::Train {
                    steps: *local_steps,
                    optimizer: self.optimizer,
                };
                let sent = RoundModels {
                    models,
                    k: models.len() / (*p).max(1),
                    lrs: &[self.lr],
                    velocities: None,
                    own: None,
                    frozen: 0,
                };
                let out = client_round(step, std::slice::from_mut(&mut self.trainer), &sent, env)?;
                Up::Trained {
                    cluster: out.chosen[0],
                    reply: ModelReply::new(out.payload, out.losses[0], samples),
                }
            }
            Down::Gradient {
                models,
                cluster,
                p,
                local_steps,
            } => {
                let c = *cluster as usize;
                let start = models.get(c * p..(c + 1) * p).ok_or_else(|| {
                    AlgoError::Protocol(format!("cluster {c} is not among the models"))
                })?;
                let mut grad = vec![0.0f32; *p];
                // REFINE's schedule (1 without one): the server steps lr
                // along the trimmed mean of what the members send.
                let factor = self.refine_lr.map_or(1.0, |s| s.factor(round));
                let loss = if *local_steps == 1 && self.optimizer.is_gd() {
                    let loss = env.model.loss_grad(start, env.data, &mut grad, env.ws);
                    if factor != 1.0 {
                        grad.iter_mut().for_each(|g| *g *= factor);
                    }
                    loss
                } else {
                    grad.copy_from_slice(start);
                    let lr = self.lr * factor;
                    let loss = self.trainer.train(&mut grad, lr, *local_steps, env);
                    // (start − end) / lr, so that the server's step of lr
                    // along the trimmed mean is the trimmed mean of updates.
                    let scale = 1.0 / self.lr;
                    for (g, s) in grad.iter_mut().zip(start) {
                        *g = (s - *g) * scale;
                    }
                    loss
                };
                Up::Gradient(ModelReply::checked(grad, loss, samples))
            }
        })
    }
}
