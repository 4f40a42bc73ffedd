//! The IFCA client's round, for every replica at once: the cluster identity
//! estimate (Algorithm 2, line 6) and the local step from the chosen model
//! (lines 9-10, LocalUpdate lines 18-21, and CFL-MGD's momentum variants).
//! SR-FCA's ONE_SHOT-IFCA runs the same round with one replica.

use fedcluster_core::model::argmin_f64;
use fedcluster_core::params::all_finite;
use fedcluster_core::{AlgoError, ClientEnv};

use crate::common::head_only::HeadOnly;
use crate::common::trainer::{LocalTrainer, Optimizer, momentum_steps};

/// What a client does from the model it picked: the algorithm's options, a
/// closed set (the config's `aggregation`, `momentum` and `optimizer` keys
/// select one, see [`super::Config::local_step`]).
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub enum LocalStep {
    /// Option I: send the gradient at the chosen model.
    Gradient,
    /// CFL-MGD option I: send `u = β u_ĵ + g`, the chosen cluster's momentum
    /// buffer scaled by `β` plus the gradient.
    GradientWithMomentum {
        /// Momentum `β`.
        beta: f32,
    },
    /// Option II: `steps` local steps with `optimizer` (its state kept by the
    /// client, one per replica), then send the model.
    Train {
        /// Local steps `τ`.
        steps: usize,
        /// Full-batch GD or minibatch Adam.
        optimizer: Optimizer,
    },
    /// CFL-MGD option II: `steps` heavy-ball steps `u <- β u + ∇`, `θ <- θ − γ u`
    /// from the chosen cluster's model and momentum buffer; send both.
    TrainWithMomentum {
        /// Local steps `H`.
        steps: usize,
        /// Momentum `β`.
        beta: f32,
        /// Full-batch (`Gd`) or minibatch (`Sgd`) steps, and the per-round
        /// step-size decay ([`crate::common::trainer::momentum_steps`]).
        #[serde(default)]
        optimizer: Optimizer,
    },
}

impl LocalStep {
    /// The momentum `β`, for the steps that carry momentum buffers.
    pub fn momentum(&self) -> Option<f32> {
        match *self {
            LocalStep::GradientWithMomentum { beta }
            | LocalStep::TrainWithMomentum { beta, .. } => Some(beta),
            LocalStep::Gradient | LocalStep::Train { .. } => None,
        }
    }
}

/// What the server sent for one round: `replicas x k` models back to back.
pub(crate) struct RoundModels<'a> {
    /// The models, replica-major.
    pub models: &'a [f32],
    /// Models per replica.
    pub k: usize,
    /// Step size of each replica.
    pub lrs: &'a [f32],
    /// The clusters' momentum buffers, laid out like `models`.
    pub velocities: Option<&'a [f32]>,
    /// Stable identity: each replica's cluster, known without an assignment.
    pub own: Option<&'a [u32]>,
    /// A frozen trunk: the first `frozen` parameters stay as sent (0: none).
    pub frozen: usize,
}

/// The client's answer for every replica.
pub(crate) struct StepOutcome {
    /// Chosen cluster per replica.
    pub chosen: Vec<u32>,
    /// Loss at the chosen model; `None` where it or the update was not finite.
    pub losses: Vec<Option<f64>>,
    /// Gradient, momentum or model per replica (zeros where `losses` is `None`).
    pub payload: Vec<f32>,
    /// Momentum buffers after the local update (`TrainWithMomentum`), else empty.
    pub velocity: Vec<f32>,
}

/// What the assignment pass already computed of the update.
#[derive(PartialEq)]
enum Fused {
    /// Only the losses.
    Nothing,
    /// The gradient at the chosen model, too.
    Gradient,
    /// The whole update.
    Update,
}

/// Runs one client round of `step`: `trainers` holds one optimizer state per
/// replica.
pub(crate) fn client_round(
    step: LocalStep,
    trainers: &mut [LocalTrainer],
    sent: &RoundModels<'_>,
    env: &mut ClientEnv<'_>,
) -> Result<StepOutcome, AlgoError> {
    let p = env.model.num_params();
    let (r, k) = (sent.lrs.len(), sent.k);
    if sent.models.len() != r * k * p
        || sent
            .velocities
            .is_some_and(|v| v.len() != sent.models.len())
        || sent
            .own
            .is_some_and(|o| o.len() != r || o.iter().any(|&c| c as usize >= k))
        || trainers.len() != r
    {
        return Err(AlgoError::Protocol(format!(
            "expected {r} x {k} models of {p} parameters, got {} values",
            sent.models.len()
        )));
    }
    if step.momentum().is_some() != sent.velocities.is_some() {
        return Err(AlgoError::Protocol(
            "momentum buffers expected iff momentum is on".into(),
        ));
    }
    let mut out = StepOutcome {
        chosen: vec![0; r],
        losses: vec![None; r],
        payload: vec![0.0; r * p],
        velocity: Vec::new(),
    };
    let mut losses = vec![f64::NAN; r];
    // A replica whose local training diverged reports a non-finite value.
    let mut trained_ok = vec![true; r];
    let fused = match sent.own {
        Some(own) => {
            out.chosen.copy_from_slice(own);
            Fused::Nothing
        }
        None => assign(step, sent, env, &mut out, &mut losses, &mut trained_ok),
    };
    if fused != Fused::Update {
        update(
            step,
            trainers,
            sent,
            env,
            &mut out,
            &mut losses,
            &mut trained_ok,
            fused,
        );
    }
    for (rep, slot) in out.payload.chunks_exact_mut(p).enumerate() {
        if losses[rep].is_finite() && trained_ok[rep] && all_finite(slot) {
            out.losses[rep] = Some(losses[rep]);
        } else {
            slot.fill(0.0);
        }
    }
    Ok(out)
}

/// Line 6: `ĵ = argmin_j F_i(θ_j)` per replica, with the loss at `θ_ĵ`; where the
/// model shares the forward pass, the update too (returned as [`Fused`]).
fn assign(
    step: LocalStep,
    sent: &RoundModels<'_>,
    env: &mut ClientEnv<'_>,
    out: &mut StepOutcome,
    losses: &mut [f64],
    trained_ok: &mut [bool],
) -> Fused {
    let k = sent.k;
    let mut all = vec![0.0f64; losses.len() * k];
    let mut chosen = vec![0usize; losses.len()];
    let fused = match step {
        LocalStep::Gradient | LocalStep::GradientWithMomentum { .. } => {
            env.model.assign_and_grad(
                sent.models,
                k,
                env.data,
                &mut all,
                &mut chosen,
                &mut out.payload,
                env.ws,
            );
            Fused::Gradient
        }
        LocalStep::Train {
            steps,
            optimizer: optimizer @ Optimizer::Gd { .. },
        } if sent.frozen == 0 => {
            // LocalUpdate from θ_ĵ; models with a shortcut reuse the
            // assignment's forward pass as the start of training.
            let lrs: Vec<f32> = sent
                .lrs
                .iter()
                .map(|&lr| optimizer.lr_at(lr, env.round))
                .collect();
            let trained = env.model.assign_and_train(
                sent.models,
                k,
                env.data,
                &lrs,
                steps,
                &mut all,
                &mut chosen,
                &mut out.payload,
                env.ws,
            );
            for (ok, t) in trained_ok.iter_mut().zip(&trained) {
                *ok = t.is_finite();
            }
            Fused::Update
        }
        LocalStep::Train { .. } | LocalStep::TrainWithMomentum { .. } => {
            env.model.losses(sent.models, env.data, &mut all, env.ws);
            for (c, row) in chosen.iter_mut().zip(all.chunks_exact(k)) {
                *c = argmin_f64(row);
            }
            Fused::Nothing
        }
    };
    for (rep, (c, row)) in chosen.iter().zip(all.chunks_exact(k)).enumerate() {
        out.chosen[rep] = *c as u32;
        losses[rep] = row[*c];
    }
    fused
}

/// Lines 9-10 and 18-21 from each replica's chosen model (and momentum). The
/// loss reported is the assignment's; without an assignment pass (stable
/// identity) it is the one the update computes at its start.
#[allow(clippy::too_many_arguments)]
fn update(
    step: LocalStep,
    trainers: &mut [LocalTrainer],
    sent: &RoundModels<'_>,
    env: &mut ClientEnv<'_>,
    out: &mut StepOutcome,
    losses: &mut [f64],
    trained_ok: &mut [bool],
    fused: Fused,
) {
    let p = env.model.num_params();
    let k = sent.k;
    let assigned = sent.own.is_none();
    let at = |rep: usize, j: usize| (rep * k + j) * p..(rep * k + j + 1) * p;
    if let LocalStep::TrainWithMomentum { .. } = step {
        out.velocity = vec![0.0; out.payload.len()];
    }
    for (rep, slot) in out.payload.chunks_exact_mut(p).enumerate() {
        let j = out.chosen[rep] as usize;
        let start = &sent.models[at(rep, j)];
        let v_start = sent.velocities.map(|v| &v[at(rep, j)]);
        match step {
            LocalStep::Gradient | LocalStep::GradientWithMomentum { .. } => {
                if fused != Fused::Gradient {
                    losses[rep] = env.model.loss_grad(start, env.data, slot, env.ws);
                }
                if let (LocalStep::GradientWithMomentum { beta }, Some(v)) = (step, v_start) {
                    for (g, u) in slot.iter_mut().zip(v) {
                        *g += beta * u;
                    }
                }
                slot[..sent.frozen].fill(0.0);
            }
            LocalStep::Train { steps, .. } => {
                slot.copy_from_slice(start);
                let t = if sent.frozen == 0 {
                    trainers[rep].train(slot, sent.lrs[rep], steps, env)
                } else {
                    train_head(
                        &mut trainers[rep],
                        slot,
                        &start[..sent.frozen],
                        sent.lrs[rep],
                        steps,
                        env,
                    )
                };
                trained_ok[rep] = t.is_finite();
                if !assigned {
                    losses[rep] = t;
                }
            }
            LocalStep::TrainWithMomentum {
                steps,
                beta,
                optimizer,
            } => {
                slot.copy_from_slice(start);
                let u = &mut out.velocity[rep * p..(rep + 1) * p];
                u.copy_from_slice(v_start.expect("checked: momentum buffers present"));
                let t = momentum_steps(optimizer, slot, u, sent.lrs[rep], beta, steps, env);
                trained_ok[rep] = t.is_finite() && all_finite(u);
                if !assigned {
                    losses[rep] = t;
                }
            }
        }
    }
}

/// Local training of the head alone, `params[trunk.len()..]`, behind the
/// frozen `trunk` ([`HeadOnly`]), on the client's data and stream.
fn train_head(
    trainer: &mut LocalTrainer,
    params: &mut [f32],
    trunk: &[f32],
    lr: f32,
    steps: usize,
    env: &mut ClientEnv<'_>,
) -> f64 {
    let head = HeadOnly::new(env.model, trunk);
    let mut head_env = ClientEnv {
        id: env.id,
        round: env.round,
        data: env.data,
        model: &head,
        rng: env.rng.clone(),
        ws: &mut *env.ws,
    };
    let loss = trainer.train(&mut params[trunk.len()..], lr, steps, &mut head_env);
    env.rng = head_env.rng;
    loss
}
