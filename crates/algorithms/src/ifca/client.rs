//! IFCA client half: cluster identity estimation and the local update
//! (Algorithm 2, lines 6-10 and 18-21).

use fedcluster_core::params::all_finite;
use fedcluster_core::{AlgoError, ClientEnv, ClientHalf, RoundCtx};

use super::messages::{Down, Up};
use crate::common::aggregate::Aggregation;

/// The client half of IFCA. It keeps no state between rounds.
#[derive(Debug, Clone)]
pub struct IfcaClient {
    aggregation: Aggregation,
    local_steps: usize,
}

impl IfcaClient {
    /// A client for the given option and local steps; step sizes come with
    /// each message.
    pub fn new(aggregation: Aggregation, local_steps: usize) -> Self {
        Self {
            aggregation,
            local_steps,
        }
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
        let mut payload = vec![0.0f32; r * p];
        let mut chosen = vec![0usize; r];
        let mut losses = vec![0.0f64; r];
        // A replica whose local training diverged reports a non-finite value.
        let mut trained_ok = vec![true; r];
        let model_of = |rep: usize, j: usize| &msg.models[(rep * k + j) * p..(rep * k + j + 1) * p];
        match (&msg.own, self.aggregation) {
            (None, Aggregation::Gradient) => {
                let mut all = vec![0.0f64; r * k];
                env.model.assign_and_grad(
                    &msg.models,
                    k,
                    env.data,
                    &mut all,
                    &mut chosen,
                    &mut payload,
                    env.ws,
                );
                for (l, (c, row)) in losses
                    .iter_mut()
                    .zip(chosen.iter().zip(all.chunks_exact(k)))
                {
                    *l = row[*c];
                }
            }
            (None, Aggregation::Model) => {
                // LocalUpdate from θ_ĵ; models with a shortcut reuse the
                // assignment's forward pass as the start of training.
                let mut all = vec![0.0f64; r * k];
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
                for (rep, (l, row)) in losses.iter_mut().zip(all.chunks_exact(k)).enumerate() {
                    *l = row[chosen[rep]];
                    trained_ok[rep] = trained[rep].is_finite();
                }
            }
            (Some(own), aggregation) => {
                for (rep, slot) in payload.chunks_exact_mut(p).enumerate() {
                    let j = own[rep] as usize;
                    chosen[rep] = j;
                    if aggregation == Aggregation::Gradient {
                        losses[rep] = env
                            .model
                            .loss_grad(model_of(rep, j), env.data, slot, env.ws);
                    } else {
                        slot.copy_from_slice(model_of(rep, j));
                        losses[rep] =
                            env.model
                                .train(slot, env.data, msg.lrs[rep], self.local_steps, env.ws);
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
            samples: env.data.len(),
        })
    }
}
