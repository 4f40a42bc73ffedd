//! The local optimizer as configs name it ([`Optimizer`], in
//! [`super::optimizer`]) and a client's
//! trainer ([`LocalTrainer`]), which maps it onto the loops of
//! [`fedcluster_core::train`]: full-batch gradient descent (through
//! [`fedcluster_core::Model::train`], so a model's exact shortcut applies), or
//! SGD or Adam on shuffled minibatches ([`fedcluster_core::train::minibatch`],
//! or the model's own device loop), whose state the client keeps between rounds
//! (`keep_state = true`, the default) or starts afresh at every local training
//! (`keep_state = false`: the SR-FCA paper's public code builds a new torch
//! optimizer at every call); any of them optionally with a proximal pull
//! towards a centre (FedSoft), or on a per-sample weighted loss (FedEM,
//! FedRC: `train_weighted`), and with a per-round step-size decay, a
//! schedule within each local training and weight decay on chosen tensors
//! ([`super::recipe`]). The trainer adds no loop of its own.

use fedcluster_core::ClientEnv;
use fedcluster_core::train::full_batch::pulled_descent;
use fedcluster_core::train::{
    LayerDecay, MinibatchOptimizer, MinibatchSpec, OptimizerState, Pull, minibatch, weighted,
};

use super::optimizer::DecayedTensors;
pub use super::optimizer::Optimizer;

/// An optimizer and its state.
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
pub struct LocalTrainer {
    optimizer: Optimizer,
    state: OptimizerState,
}

impl LocalTrainer {
    /// A trainer with fresh state.
    pub fn new(optimizer: Optimizer) -> Self {
        Self {
            optimizer,
            state: OptimizerState::default(),
        }
    }

    /// `steps` local steps of size `lr` (decayed for the round) from `params`
    /// on the client's data; returns the loss at the start (of the first
    /// minibatch for SGD and Adam), non-finite if training diverged. From
    /// finite `params`, a finite loss vouches for every trained parameter
    /// being finite (every [`fedcluster_core::Model::train`] and minibatch
    /// loop ends with that check), which
    /// [`crate::common::messages::ModelReply::trained`] relies on.
    pub fn train(
        &mut self,
        params: &mut [f32],
        lr: f32,
        steps: usize,
        env: &mut ClientEnv<'_>,
    ) -> f64 {
        self.steps(params, None, lr, steps, env)
    }

    /// `steps` local steps of size `lr` (decayed for the round) from `params`
    /// on the client's loss plus `(mu/2)‖w − centre‖²`; returns the model's
    /// loss at the start (of the first minibatch for SGD and Adam), non-finite
    /// if training diverged.
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

    /// `steps` local steps of size `lr` (decayed for the round) from `params`
    /// on the per-sample weighted loss `(1/n) Σ_i w_i ℓ_i` (`weights`, one per
    /// sample, finite and `>= 0`): full-batch GD summed sample by sample, or
    /// SGD or Adam on minibatches drawn in proportion to the weights
    /// ([`fedcluster_core::train::weighted`]). Returns the weighted loss at
    /// the start (an estimate of it for SGD and Adam), non-finite if training
    /// diverged.
    pub fn train_weighted(
        &mut self,
        params: &mut [f32],
        weights: &[f32],
        lr: f32,
        steps: usize,
        env: &mut ClientEnv<'_>,
    ) -> f64 {
        let lr = self.optimizer.lr_at(lr, env.round);
        match self.optimizer.minibatch() {
            None => env.ws.with_grad(params.len(), |grad, ws| {
                weighted::descent(env.model, params, env.data, weights, lr, steps, grad, ws)
            }),
            Some((optimizer, batch_size)) => {
                if !self.optimizer.keeps_state() {
                    self.state.restart();
                }
                let Ok(layers) = self.optimizer.layer_decay(env.model) else {
                    return f64::NAN; // `check_layer_names` rejects the config first
                };
                let spec = MinibatchSpec {
                    optimizer,
                    lr,
                    batch_size,
                    pull: None,
                    schedule: self.optimizer.schedule(env.data.len(), steps),
                    decay: layer_decay(&layers),
                };
                weighted::minibatch_steps(
                    env.model,
                    params,
                    env.data,
                    weights,
                    &spec,
                    steps,
                    &mut self.state,
                    &mut env.rng,
                    env.ws,
                )
            }
        }
    }

    fn steps(
        &mut self,
        params: &mut [f32],
        pull: Option<Pull<'_>>,
        lr: f32,
        steps: usize,
        env: &mut ClientEnv<'_>,
    ) -> f64 {
        let lr = self.optimizer.lr_at(lr, env.round);
        match (self.optimizer.minibatch(), pull) {
            (None, None) => env.model.train(params, env.data, lr, steps, env.ws),
            (None, Some(pull)) => env.ws.with_grad(params.len(), |grad, ws| {
                pulled_descent(env.model, params, env.data, pull, lr, steps, grad, ws)
            }),
            (Some((optimizer, batch_size)), pull) => {
                if !self.optimizer.keeps_state() {
                    self.state.restart();
                }
                let Ok(layers) = self.optimizer.layer_decay(env.model) else {
                    return f64::NAN; // `check_layer_names` rejects the config first
                };
                let spec = MinibatchSpec {
                    optimizer,
                    lr,
                    batch_size,
                    pull,
                    schedule: self.optimizer.schedule(env.data.len(), steps),
                    decay: layer_decay(&layers),
                };
                minibatch::steps(
                    env.model,
                    params,
                    env.data,
                    &spec,
                    steps,
                    &mut self.state,
                    &mut env.rng,
                    env.ws,
                )
            }
        }
    }
}

/// CFL-MGD's local update: `steps` heavy-ball steps `u <- β u + ∇`,
/// `θ <- θ − lr u` from `params` and the momentum buffer `velocity` (both
/// updated in place), with the step size decayed for the round; full-batch
/// under `Gd` ([`fedcluster_core::Model::train_momentum`]), on shuffled
/// minibatches under `Sgd` (its `weight_decay` applied; its own `momentum`
/// and `keep_state` are the config's to reject, `β` and the buffer standing
/// in for them). Returns the loss at the start (of the first minibatch), non-finite
/// if training diverged; Adam, which has no such buffer, returns NaN
/// (configs reject it).
#[allow(clippy::too_many_arguments)]
pub fn momentum_steps(
    optimizer: Optimizer,
    params: &mut [f32],
    velocity: &mut [f32],
    lr: f32,
    beta: f32,
    steps: usize,
    env: &mut ClientEnv<'_>,
) -> f64 {
    let lr = optimizer.lr_at(lr, env.round);
    match optimizer {
        Optimizer::Gd { .. } => env
            .model
            .train_momentum(params, velocity, env.data, lr, beta, steps, env.ws),
        Optimizer::Sgd {
            batch_size,
            weight_decay,
            ..
        } => {
            let mut state = OptimizerState {
                first: velocity.to_vec(),
                second: Vec::new(),
                t: 0,
            };
            let Ok(layers) = optimizer.layer_decay(env.model) else {
                return f64::NAN; // `check_layer_names` rejects the config first
            };
            let spec = MinibatchSpec {
                optimizer: MinibatchOptimizer::Sgd {
                    momentum: beta,
                    weight_decay: if layers.is_some() { 0.0 } else { weight_decay },
                },
                lr,
                batch_size,
                pull: None,
                schedule: optimizer.schedule(env.data.len(), steps),
                decay: layer_decay(&layers),
            };
            let loss = minibatch::steps(
                env.model,
                params,
                env.data,
                &spec,
                steps,
                &mut state,
                &mut env.rng,
                env.ws,
            );
            if state.first.len() == velocity.len() {
                velocity.copy_from_slice(&state.first);
                loss
            } else {
                f64::NAN
            }
        }
        Optimizer::Adam { .. } => f64::NAN,
    }
}

/// The spec's view of [`Optimizer::layer_decay`]'s ranges and weight.
fn layer_decay(layers: &Option<DecayedTensors>) -> Option<LayerDecay<'_>> {
    layers.as_ref().map(|(ranges, weight)| LayerDecay {
        ranges,
        weight: *weight,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use fedcluster_core::{Batch, Model, Purpose, Targets, Workspace, stream};
    use fedcluster_models::LinearRegression;

    #[test]
    fn gd_is_the_models_own_training_and_adam_keeps_its_moments_unless_told_not_to() {
        let model = LinearRegression::new(2).unwrap();
        let x = [1.0, 0.0, 0.0, 1.0, 1.0, 1.0, 2.0, -1.0];
        let y = [1.0, 2.0, 3.0, 0.0];
        let data = Batch::new(&x, Targets::Real(&y), 2).unwrap();
        let mut ws = Workspace::default();
        let mut env = ClientEnv {
            id: 0,
            round: 0,
            data,
            model: &model,
            rng: stream(1, Purpose::Client, 0, 0),
            ws: &mut ws,
        };
        let mut gd = LocalTrainer::new(Optimizer::default());
        let (mut a, mut b) = ([0.0f32; 2], [0.0f32; 2]);
        let la = gd.train(&mut a, 0.1, 5, &mut env);
        let lb = model.train(&mut b, data, 0.1, 5, env.ws);
        assert_eq!((la, a), (lb, b));
        // Adam keeps its moments from one local training to the next unless
        // `keep_state = false`, which starts each training afresh.
        let adam = |keep_state| Optimizer::Adam {
            batch_size: 2,
            keep_state,
            lr_decay: 1.0,
            schedule: None,
        };
        // Two local trainings of 3 steps each, by one trainer or by a new
        // trainer each time, over the same minibatch draws.
        let mut two_trainings = |first: &mut LocalTrainer, second: Option<LocalTrainer>| {
            env.rng = stream(1, Purpose::Client, 0, 0);
            let mut w = [0.0f32; 2];
            first.train(&mut w, 0.1, 3, &mut env);
            match second {
                Some(mut other) => other.train(&mut w, 0.1, 3, &mut env),
                None => first.train(&mut w, 0.1, 3, &mut env),
            };
            w
        };
        let afresh = two_trainings(&mut LocalTrainer::new(adam(false)), None);
        let new_trainers = two_trainings(
            &mut LocalTrainer::new(adam(true)),
            Some(LocalTrainer::new(adam(true))),
        );
        let kept = two_trainings(&mut LocalTrainer::new(adam(true)), None);
        assert_eq!(afresh, new_trainers);
        assert_ne!(afresh, kept);
        assert!(model.loss(&kept, data, env.ws) < model.loss(&[0.0, 0.0], data, env.ws));
        let toml = |o: Optimizer| toml::to_string(&o).unwrap();
        assert!(
            !toml(adam(true)).contains("keep_state"),
            "the default is not written"
        );
        assert!(toml(adam(false)).contains("keep_state = false"));
    }

    #[test]
    fn a_finite_loss_vouches_for_finite_parameters() {
        let models: [Box<dyn Model>; 2] = [
            Box::new(LinearRegression::new(2).unwrap()),
            Box::new(fedcluster_models::LogisticRegression::new(2, 2).unwrap()),
        ];
        let x = [1.0, 0.0, 0.0, 1.0, 3.0, 1.0, 2.0, -1.0];
        let (real, class) = ([1.0, 2.0, 3.0, 0.0], [0, 1, 1, 0]);
        let optimizers = [
            Optimizer::default(),
            Optimizer::Sgd {
                batch_size: 2,
                keep_state: true,
                momentum: 0.5,
                weight_decay: 0.0,
                lr_decay: 1.0,
                schedule: None,
                decay_layers: None,
            },
            Optimizer::Adam {
                batch_size: 2,
                keep_state: true,
                lr_decay: 1.0,
                schedule: None,
            },
        ];
        let (mut diverged, mut finite) = (0, 0);
        for (model, targets) in models
            .iter()
            .zip([Targets::Real(&real), Targets::Class(&class)])
        {
            let data = Batch::new(&x, targets, 2).unwrap();
            for optimizer in optimizers {
                // One step of 3e38 overflows the parameters with a finite start.
                for (lr, steps) in [(0.01, 20), (1e30, 20), (3e38, 1)] {
                    for pull in [false, true] {
                        let mut ws = Workspace::default();
                        let mut env = ClientEnv {
                            id: 0,
                            round: 0,
                            data,
                            model: model.as_ref(),
                            rng: stream(1, Purpose::Client, 0, 0),
                            ws: &mut ws,
                        };
                        let mut params = vec![0.5f32; model.num_params()];
                        let centre = vec![0.0f32; model.num_params()];
                        let mut trainer = LocalTrainer::new(optimizer);
                        let loss = if pull {
                            trainer.train_towards(&mut params, &centre, 0.1, lr, steps, &mut env)
                        } else {
                            trainer.train(&mut params, lr, steps, &mut env)
                        };
                        let all = params.iter().all(|v| v.is_finite());
                        assert!(
                            !loss.is_finite() || all,
                            "{} {optimizer:?} lr {lr} pull {pull}: loss {loss} with {params:?}",
                            model.name()
                        );
                        if all { finite += 1 } else { diverged += 1 }
                    }
                }
            }
        }
        assert!(
            diverged > 0 && finite > 0,
            "{diverged} diverged, {finite} finite"
        );
    }

    #[test]
    fn layer_decay_moves_only_the_named_tensor_in_a_training_step() {
        let model = fedcluster_models::LogisticRegression::new(2, 2).unwrap();
        let x = [1.0, 0.0, 0.0, 1.0, 3.0, 1.0, 2.0, -1.0];
        let y = [0u32, 1, 1, 0];
        let data = Batch::new(&x, Targets::Class(&y), 2).unwrap();
        let sgd = |weight_decay, decay_layers| Optimizer::Sgd {
            batch_size: 2,
            keep_state: true,
            momentum: 0.0,
            weight_decay,
            lr_decay: 1.0,
            schedule: None,
            decay_layers,
        };
        let names = crate::common::recipe::LayerNames::new(vec!["weight".into()]);
        let start = [0.5f32, -1.0, 2.0, 0.25, 0.75, -0.5];
        let trained = |optimizer| {
            let mut ws = Workspace::default();
            let mut env = ClientEnv {
                id: 0,
                round: 0,
                data,
                model: &model,
                rng: stream(1, Purpose::Client, 0, 0),
                ws: &mut ws,
            };
            let mut w = start;
            assert!(
                LocalTrainer::new(optimizer)
                    .train(&mut w, 0.1, 1, &mut env)
                    .is_finite()
            );
            w
        };
        let plain = trained(sgd(0.0, None));
        let decayed = trained(sgd(0.5, Some(names)));
        for i in 0..4 {
            let want = plain[i] - 0.1 * 0.5 * start[i];
            assert!((decayed[i] - want).abs() < 1e-6, "weight {i}");
        }
        assert_eq!(decayed[4..], plain[4..], "the bias is not decayed");
        let everything = trained(sgd(0.5, None));
        assert_ne!(
            everything[4..],
            plain[4..],
            "without decay_layers all decay"
        );
    }
}
