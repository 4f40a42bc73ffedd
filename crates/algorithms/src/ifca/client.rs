//! IFCA client half: cluster identity estimation and the local update
//! (Algorithm 2, lines 6-10 and 18-21).

use fedcluster_core::model::argmin_f64;
use fedcluster_core::params::all_finite;
use fedcluster_core::{AlgoError, ClientEnv, ClientHalf, RoundCtx};

use super::messages::{Down, Up};
use crate::common::aggregate::Aggregation;
use crate::common::trainer::{LocalTrainer, Optimizer};

/// The client half of IFCA. It keeps only its optimizer's state (Adam's
/// moments, one per restart) between rounds.
#[derive(Debug, Clone)]
pub struct IfcaClient {
    aggregation: Aggregation,
    local_steps: usize,
    momentum: f32,
    optimizer: Optimizer,
    trainers: Vec<LocalTrainer>,
}

impl IfcaClient {
    /// A client for the given option and local steps; step sizes come with
    /// each message.
    pub fn new(aggregation: Aggregation, local_steps: usize) -> Self {
        Self {
            aggregation,
            local_steps,
            momentum: 0.0,
            optimizer: Optimizer::Gd,
            trainers: Vec::new(),
        }
    }

    /// The same client with another local optimizer (model averaging).
    pub fn with_optimizer(mut self, optimizer: Optimizer) -> Self {
        self.optimizer = optimizer;
        self
    }

    /// The same client with Polyak momentum `beta` in its updates (CFL-MGD).
    pub fn with_momentum(mut self, beta: f32) -> Self {
        self.momentum = beta;
        self
    }
}

impl ClientHalf for IfcaClient {
    type Down = Down;
    type Up = Up;

    fn handle(
        &mut self,
        ctx: &RoundCtx,
        msg: &Down,
        env: &mut ClientEnv<'_>,
    ) -> Result<Up, AlgoError> {
        let p = env.model.num_params();
        let (r, k) = (msg.replicas, msg.k);
        if msg.models.len() != r * k * p || msg.lrs.len() != r {
            return Err(AlgoError::Protocol(format!(
                "round {}: expected {r} x {k} models of {p} parameters, got {} values",
                ctx.round,
                msg.models.len()
            )));
        }
        let velocities = msg.velocities.as_deref();
        if (self.momentum > 0.0) != velocities.is_some() {
            return Err(AlgoError::Protocol(format!(
                "round {}: momentum buffers expected iff momentum is on",
                ctx.round
            )));
        }
        let mut payload = vec![0.0f32; r * p];
        let mut velocity = Vec::new();
        let mut chosen = vec![0usize; r];
        let mut losses = vec![0.0f64; r];
        // A replica whose local training diverged reports a non-finite value.
        let mut trained_ok = vec![true; r];
        let model_of = |rep: usize, j: usize| &msg.models[(rep * k + j) * p..(rep * k + j + 1) * p];
        let mut all = vec![0.0f64; r * k];
        // 1. Cluster identity (and, where a model shares the pass, the update).
        let mut done = false;
        match (&msg.own, self.aggregation) {
            (Some(own), _) => {
                for (c, o) in chosen.iter_mut().zip(own) {
                    *c = *o as usize;
                }
            }
            (None, Aggregation::Gradient) => {
                env.model.assign_and_grad(
                    &msg.models,
                    k,
                    env.data,
                    &mut all,
                    &mut chosen,
                    &mut payload,
                    env.ws,
                );
            }
            (None, Aggregation::Model)
                if velocities.is_none() && self.optimizer == Optimizer::Gd =>
            {
                // LocalUpdate from θ_ĵ; models with a shortcut reuse the
                // assignment's forward pass as the start of training.
                let trained = env.model.assign_and_train(
                    &msg.models,
                    k,
                    env.data,
                    &msg.lrs,
                    self.local_steps,
                    &mut all,
                    &mut chosen,
                    &mut payload,
                    env.ws,
                );
                for (ok, t) in trained_ok.iter_mut().zip(&trained) {
                    *ok = t.is_finite();
                }
                done = true;
            }
            (None, Aggregation::Model) => {
                env.model.losses(&msg.models, env.data, &mut all, env.ws);
                for (c, row) in chosen.iter_mut().zip(all.chunks_exact(k)) {
                    *c = argmin_f64(row);
                }
            }
        }
        if msg.own.is_none() {
            for (l, (c, row)) in losses
                .iter_mut()
                .zip(chosen.iter().zip(all.chunks_exact(k)))
            {
                *l = row[*c];
            }
        }
        // 2. The rest of the update, from the chosen model (and its momentum).
        if !done {
            if velocities.is_some() && self.aggregation == Aggregation::Model {
                velocity = vec![0.0f32; r * p];
            }
            for (rep, slot) in payload.chunks_exact_mut(p).enumerate() {
                let j = chosen[rep];
                let v_start = velocities.map(|v| &v[(rep * k + j) * p..(rep * k + j + 1) * p]);
                match (self.aggregation, v_start) {
                    (Aggregation::Gradient, v) => {
                        if msg.own.is_some() {
                            losses[rep] =
                                env.model
                                    .loss_grad(model_of(rep, j), env.data, slot, env.ws);
                        }
                        // CFL-MGD option I: the reply is u = β u_ĵ + g.
                        if let Some(v) = v {
                            for (g, u) in slot.iter_mut().zip(v) {
                                *g += self.momentum * u;
                            }
                        }
                    }
                    (Aggregation::Model, None) => {
                        slot.copy_from_slice(model_of(rep, j));
                        if self.trainers.len() != r {
                            self.trainers = vec![LocalTrainer::new(self.optimizer); r];
                        }
                        let t = self.trainers[rep].train(slot, msg.lrs[rep], self.local_steps, env);
                        trained_ok[rep] = t.is_finite();
                        if msg.own.is_some() || self.optimizer == Optimizer::Gd {
                            losses[rep] = t;
                        }
                    }
                    (Aggregation::Model, Some(v)) => {
                        slot.copy_from_slice(model_of(rep, j));
                        let u = &mut velocity[rep * p..(rep + 1) * p];
                        u.copy_from_slice(v);
                        let t = env.model.train_momentum(
                            slot,
                            u,
                            env.data,
                            msg.lrs[rep],
                            self.momentum,
                            self.local_steps,
                            env.ws,
                        );
                        trained_ok[rep] = t.is_finite() && all_finite(u);
                        if msg.own.is_some() {
                            losses[rep] = t;
                        }
                    }
                }
            }
        }
        let mut reported = Vec::with_capacity(r);
        for ((loss, ok), slot) in losses
            .iter()
            .zip(&trained_ok)
            .zip(payload.chunks_exact_mut(p))
        {
            if loss.is_finite() && *ok && all_finite(slot) {
                reported.push(Some(*loss));
            } else {
                slot.fill(0.0);
                reported.push(None);
            }
        }
        Ok(Up {
            chosen: chosen.into_iter().map(|c| c as u32).collect(),
            losses: reported,
            payload,
            velocity,
            samples: env.data.len(),
        })
    }
}
