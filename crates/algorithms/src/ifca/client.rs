//! IFCA client half: cluster identity estimation and the local update
//! (Algorithm 2, lines 6-10 and 18-21).

use fedcluster_core::params::all_finite;
use fedcluster_core::{AlgoError, ClientEnv, ClientHalf, RoundCtx};
use fedcluster_models::local::gd_steps;

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
        match &msg.own {
            None => {
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
            Some(own) => {
                for (rep, g) in payload.chunks_exact_mut(p).enumerate() {
                    let j = own[rep] as usize;
                    chosen[rep] = j;
                    let m = &msg.models[(rep * k + j) * p..(rep * k + j + 1) * p];
                    losses[rep] = env.model.loss_grad(m, env.data, g, env.ws);
                }
            }
        }
        if self.aggregation == Aggregation::Model {
            // LocalUpdate: the gradient already computed at θ_ĵ is the first step.
            let mut grad = std::mem::take(&mut env.ws.grad);
            grad.resize(p, 0.0);
            for (rep, slot) in payload.chunks_exact_mut(p).enumerate() {
                grad.copy_from_slice(slot);
                let j = chosen[rep];
                slot.copy_from_slice(&msg.models[(rep * k + j) * p..(rep * k + j + 1) * p]);
                let lr = msg.lrs[rep];
                fedcluster_core::params::axpy(-lr, &grad, slot);
                if self.local_steps > 1 {
                    gd_steps(
                        env.model,
                        slot,
                        env.data,
                        lr,
                        self.local_steps - 1,
                        &mut grad,
                        env.ws,
                    );
                }
            }
            env.ws.grad = grad;
        }
        let mut reported = Vec::with_capacity(r);
        for (loss, slot) in losses.iter().zip(payload.chunks_exact_mut(p)) {
            if loss.is_finite() && all_finite(slot) {
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
