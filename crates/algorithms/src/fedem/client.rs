//! The FedEM client (FedRC's too): the E-step on the received components, the
//! mixture weights it keeps between rounds, and each component trained on its
//! responsibility-weighted loss.

use serde::{Deserialize, Serialize};

use fedcluster_core::{AlgoError, ClientEnv, ClientHalf, RoundCtx, Targets};

use super::{Components, Config, MixtureReply, Objective};
use crate::common::mixture::{
    column, label_mass, mixture_weights, responsibilities, sample_losses,
};
use crate::common::trainer::{LocalTrainer, Optimizer};

/// The client half of FedEM and FedRC.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct MixtureClient {
    objective: Objective,
    lr: f32,
    local_steps: usize,
    optimizer: Optimizer,
    /// `π`, empty until the first round (then uniform).
    weights: Vec<f64>,
    /// One optimizer per component, as the public codes keep one per learner.
    trainers: Vec<LocalTrainer>,
}

impl MixtureClient {
    /// A client for `config` under `objective`.
    pub fn new(config: &Config, objective: Objective) -> Self {
        Self {
            objective,
            lr: config.lr,
            local_steps: config.local_steps,
            optimizer: config.optimizer,
            weights: Vec::new(),
            trainers: Vec::new(),
        }
    }

    /// The mixture weights `π` (empty before the first round).
    pub fn weights(&self) -> &[f64] {
        &self.weights
    }
}

impl ClientHalf for MixtureClient {
    type Down = Components;
    type Up = MixtureReply;

    fn handle(
        &mut self,
        ctx: &RoundCtx,
        msg: &Components,
        env: &mut ClientEnv<'_>,
    ) -> Result<MixtureReply, AlgoError> {
        let p = env.model.num_params().max(1);
        let k = msg.models.len() / p;
        if k == 0 || msg.models.len() != k * p {
            return Err(AlgoError::Protocol(format!(
                "round {}: {} component values for models of {p}",
                ctx.round,
                msg.models.len()
            )));
        }
        if self.weights.len() != k {
            self.weights = vec![1.0 / k as f64; k];
            self.trainers = vec![LocalTrainer::new(self.optimizer); k];
        }
        // Step 2: every sample's loss under every component.
        let losses = sample_losses(env.model, &msg.models, k, env.data, env.ws);
        let labels = match (self.objective, env.data.y) {
            (Objective::Likelihood, _) => None,
            (Objective::Robust, Targets::Class(y)) => Some(y),
            (Objective::Robust, Targets::Real(_)) => {
                return Err(AlgoError::Protocol(
                    "fedrc needs class labels (its P(y) term): this data set's targets are real \
                     values; use fedem"
                        .into(),
                ));
            }
        };
        // FedRC divides each score by the component's label prior P_k(y).
        let prior = &msg.label_prior;
        let classes = prior.len() / k;
        let log_prior = |i: usize, j: usize| match labels {
            Some(y) if (y[i] as usize) < classes => prior[j * classes + y[i] as usize].ln(),
            _ => 0.0,
        };
        let e = responsibilities(&losses, &self.weights, log_prior);
        let samples = env.data.len();
        let diverged = |weights: &[f64]| MixtureReply {
            models: vec![0.0; msg.models.len()],
            weights: weights.to_vec(),
            label_mass: Vec::new(),
            loss: None,
            samples,
        };
        if !e.nll.is_finite() {
            return Ok(diverged(&self.weights));
        }
        // Step 3: the new mixture weights (and FedRC's label counts).
        if !env.data.is_empty() {
            self.weights = mixture_weights(&e.q, k);
        }
        let mass = labels.map_or_else(Vec::new, |y| label_mass(&e.q, k, y));
        // Step 4: each component on its responsibility-weighted loss.
        let mut models = msg.models.to_vec();
        let mut ok = true;
        for (j, (component, trainer)) in models
            .chunks_exact_mut(p)
            .zip(&mut self.trainers)
            .enumerate()
        {
            if self.weights[j] > 0.0 {
                let w = column(&e.q, k, j);
                let loss = trainer.train_weighted(component, &w, self.lr, self.local_steps, env);
                ok &= loss.is_finite();
            }
        }
        if !ok {
            return Ok(diverged(&self.weights));
        }
        Ok(MixtureReply {
            models,
            weights: self.weights.clone(),
            label_mass: mass,
            loss: Some(e.nll),
            samples,
        })
    }
}
