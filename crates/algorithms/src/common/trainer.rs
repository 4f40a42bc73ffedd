//! A client's local trainer: full-batch gradient descent (through
//! [`fedcluster_core::Model::train`], so a model's exact shortcut applies) or
//! Adam on shuffled minibatches, whose moments the client keeps between rounds
//! as the SR-FCA paper's public code does; either optionally with a proximal
//! pull towards a centre (FedSoft).

use serde::{Deserialize, Serialize};

use fedcluster_core::ClientEnv;
use fedcluster_core::params::{all_finite, axpy};
use fedcluster_models::adam::{AdamConfig, AdamState, Pull, adam_steps};

use super::checked::{FieldError, at_least_one};

/// The local optimizer, as written in configs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields, tag = "kind")]
pub enum Optimizer {
    /// Full-batch gradient descent.
    #[default]
    Gd,
    /// Adam (PyTorch's β and ε) on shuffled minibatches of `batch_size`.
    Adam {
        /// Points per minibatch.
        batch_size: usize,
    },
}

impl Optimizer {
    /// Checks the optimizer's parameters; `field` is its path in the config.
    pub fn validate(&self, field: &str) -> Result<(), FieldError> {
        match *self {
            Optimizer::Gd => Ok(()),
            Optimizer::Adam { batch_size } => {
                at_least_one(&format!("{field}.batch_size"), batch_size)
            }
        }
    }
}

/// An optimizer and its state.
#[derive(Debug, Clone, Default)]
pub struct LocalTrainer {
    optimizer: Optimizer,
    adam: AdamState,
}

impl LocalTrainer {
    /// A trainer with fresh state.
    pub fn new(optimizer: Optimizer) -> Self {
        Self {
            optimizer,
            adam: AdamState::default(),
        }
    }

    /// `steps` local steps of size `lr` from `params` on the client's data;
    /// returns the loss at the start (of the first minibatch for Adam),
    /// non-finite if training diverged.
    pub fn train(
        &mut self,
        params: &mut [f32],
        lr: f32,
        steps: usize,
        env: &mut ClientEnv<'_>,
    ) -> f64 {
        self.steps(params, None, lr, steps, env)
    }

    /// `steps` local steps of size `lr` from `params` on the client's loss plus
    /// `(mu/2)‖w − centre‖²`; returns the model's loss at the start (of the
    /// first minibatch for Adam), non-finite if training diverged.
    pub fn train_towards(
        &mut self,
        params: &mut [f32],
        centre: &[f32],
        mu: f32,
        lr: f32,
        steps: usize,
        env: &mut ClientEnv<'_>,
    ) -> f64 {
        self.steps(params, Some(Pull { mu, centre }), lr, steps, env)
    }

    fn steps(
        &mut self,
        params: &mut [f32],
        pull: Option<Pull<'_>>,
        lr: f32,
        steps: usize,
        env: &mut ClientEnv<'_>,
    ) -> f64 {
        match (self.optimizer, pull) {
            (Optimizer::Gd, None) => env.model.train(params, env.data, lr, steps, env.ws),
            (Optimizer::Gd, Some(pull)) => prox_gd_steps(params, pull, lr, steps, env),
            (Optimizer::Adam { batch_size }, pull) => adam_steps(
                env.model,
                params,
                env.data,
                AdamConfig::new(lr, batch_size),
                steps,
                &mut self.adam,
                &mut env.rng,
                env.ws,
                pull,
            ),
        }
    }
}

/// Full-batch gradient steps on the loss plus `pull`.
fn prox_gd_steps(
    params: &mut [f32],
    pull: Pull<'_>,
    lr: f32,
    steps: usize,
    env: &mut ClientEnv<'_>,
) -> f64 {
    let mut grad = std::mem::take(&mut env.ws.grad);
    grad.resize(params.len(), 0.0);
    let mut start_loss = f64::NAN;
    for step in 0..steps {
        let loss = env.model.loss_grad(params, env.data, &mut grad, env.ws);
        if step == 0 {
            start_loss = loss;
        }
        if !loss.is_finite() || !all_finite(&grad) {
            start_loss = f64::NAN;
            break;
        }
        for ((g, w), c) in grad.iter_mut().zip(params.iter()).zip(pull.centre) {
            *g += pull.mu * (w - c);
        }
        axpy(-lr, &grad, params);
    }
    env.ws.grad = grad;
    start_loss
}

#[cfg(test)]
mod tests {
    use super::*;
    use fedcluster_core::{Batch, Model, Purpose, Targets, Workspace, stream};
    use fedcluster_models::LinearRegression;

    #[test]
    fn gd_is_the_models_own_training_and_adam_keeps_its_moments() {
        let model = LinearRegression::new(2).unwrap();
        let x = [1.0, 0.0, 0.0, 1.0, 1.0, 1.0, 2.0, -1.0];
        let y = [1.0, 2.0, 3.0, 0.0];
        let data = Batch::new(&x, Targets::Real(&y), 2).unwrap();
        let mut ws = Workspace::default();
        let mut env = ClientEnv {
            id: 0,
            data,
            model: &model,
            rng: stream(1, Purpose::Client, 0, 0),
            ws: &mut ws,
        };
        let mut gd = LocalTrainer::new(Optimizer::Gd);
        let (mut a, mut b) = ([0.0f32; 2], [0.0f32; 2]);
        let la = gd.train(&mut a, 0.1, 5, &mut env);
        let lb = model.train(&mut b, data, 0.1, 5, env.ws);
        assert_eq!((la, a), (lb, b));
        // Adam: two calls of 3 steps continue one run of moments, so they differ
        // from one call of 3 steps repeated from scratch.
        let mut adam = LocalTrainer::new(Optimizer::Adam { batch_size: 2 });
        let mut w = [0.0f32; 2];
        adam.train(&mut w, 0.1, 3, &mut env);
        adam.train(&mut w, 0.1, 3, &mut env);
        let mut fresh = [0.0f32; 2];
        let mut again = LocalTrainer::new(Optimizer::Adam { batch_size: 2 });
        again.train(&mut fresh, 0.1, 3, &mut env);
        let mut again2 = LocalTrainer::new(Optimizer::Adam { batch_size: 2 });
        again2.train(&mut fresh, 0.1, 3, &mut env);
        assert_ne!(w, fresh);
        assert!(model.loss(&w, data, env.ws) < model.loss(&[0.0, 0.0], data, env.ws));
    }
}
