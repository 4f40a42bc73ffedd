//! The two-phase client: residual moments and anchor steps in Phase 1, cluster
//! estimation and FedAvg/FedProx refinement in Phase 2. It keeps no state.

use fedcluster_core::model::argmin_f64;
use fedcluster_core::train::prox::{ProxSolve, prox_descent};
use fedcluster_core::{AlgoError, ClientEnv, ClientHalf, RoundCtx};

use super::config::{Config, LocalUpdate, Start};
use super::messages::{Down, MomentRequest, Up};
use super::moments::{
    StepRule, add_moment, add_moment_product, anchor_points, anchor_step, residuals,
};
use crate::common::messages::ModelReply;

/// The client half of the two-phase method.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct TwoPhaseClient {
    k: usize,
    lr: f32,
    local_update: LocalUpdate,
    /// Phase 1's step constants (unused when Phase 1 is skipped).
    rule: StepRule,
    /// `Some(T)` in the exact mode: anchors use fresh points each iteration.
    fresh_over: Option<usize>,
}

impl TwoPhaseClient {
    /// A client for `config`.
    pub fn new(config: &Config) -> Self {
        let (rule, fresh_over) = match config
            .phase1
            .as_ref()
            .filter(|_| config.start == Start::Phase1)
        {
            Some(p) => (
                StepRule {
                    power_steps: p.power_steps,
                    scale: f64::from(p.alpha) / (2.0 * f64::from(p.beta).powi(2)),
                    stop_below: f64::from(p.epsilon) * f64::from(p.alpha) * f64::from(p.separation)
                        / 2f64.sqrt(),
                },
                p.fresh_data.then_some(p.iterations),
            ),
            None => (
                StepRule {
                    power_steps: 0,
                    scale: 0.0,
                    stop_below: 0.0,
                },
                None,
            ),
        };
        Self {
            k: config.clusters,
            lr: config.lr,
            local_update: config.local_update,
            rule,
            fresh_over,
        }
    }

    /// Step 9 at a subspace client: one matrix per anchor estimate from the
    /// residuals of all its points.
    fn moments(&self, estimates: &[f32], request: &MomentRequest, env: &mut ClientEnv<'_>) -> Up {
        let d = env.model.num_params();
        let n = env.data.len();
        let per = match request {
            MomentRequest::Full => d * d,
            MomentRequest::Apply { .. } => d * self.k,
        };
        let anchors = estimates.len() / d;
        let mut values = vec![0.0f32; anchors * per];
        let mut eps = vec![0.0f32; n * d];
        for (a, theta) in estimates.chunks_exact(d).enumerate() {
            residuals(env.model, theta, env.data, 0..n, &mut eps, env.ws);
            let out = &mut values[a * per..(a + 1) * per];
            match request {
                MomentRequest::Full => add_moment(&eps, d, out),
                MomentRequest::Apply { bases } => {
                    let dk = d * self.k;
                    add_moment_product(&eps, d, &bases[a * dk..(a + 1) * dk], self.k, out);
                }
            }
        }
        Up::Moments {
            values,
            samples: if n >= 2 { env.data.len() } else { 0 },
        }
    }

    /// Steps 11-15 at an anchor.
    fn anchor(
        &self,
        mut estimate: Vec<f32>,
        basis: &[f32],
        iteration: usize,
        env: &mut ClientEnv<'_>,
    ) -> Result<Up, AlgoError> {
        let n = env.data.len();
        let points = anchor_points(n, iteration, self.fresh_over).ok_or_else(|| {
            AlgoError::Protocol(format!(
                "anchor {} holds {n} points, fewer than two per iteration (phase1.fresh_data)",
                env.id
            ))
        })?;
        let d = estimate.len();
        let mut eps = vec![0.0f32; points.len() * d];
        residuals(env.model, &estimate, env.data, points, &mut eps, env.ws);
        let mv = anchor_step(&mut estimate, basis, self.k, &eps, self.rule);
        Ok(Up::AnchorStep {
            estimate,
            sigma: mv.sigma,
            stopped: mv.stopped,
        })
    }

    /// Phase 2, steps 6-8: the lowest-loss model, refined.
    fn refine(&self, models: &[f32], told: Option<usize>, env: &mut ClientEnv<'_>) -> Up {
        let p = env.model.num_params();
        let samples = env.data.len();
        let mut out = vec![0.0f32; p];
        let (cluster, loss) = match (told, self.local_update) {
            // The fast path: the assignment's forward pass is the first step's.
            (None, LocalUpdate::Fedavg { steps }) => {
                let (mut losses, mut chosen) = (vec![0.0f64; self.k], [0usize]);
                let trained = env.model.assign_and_train(
                    models,
                    self.k,
                    env.data,
                    &[self.lr],
                    steps,
                    &mut losses,
                    &mut chosen,
                    &mut out,
                    env.ws,
                );
                (chosen[0], trained[0])
            }
            _ => {
                let z = told.unwrap_or_else(|| {
                    let mut losses = vec![0.0f64; self.k];
                    env.model.losses(models, env.data, &mut losses, env.ws);
                    argmin_f64(&losses)
                });
                out.copy_from_slice(&models[z * p..(z + 1) * p]);
                (z, self.local_solve(&mut out, env))
            }
        };
        Up::Refined {
            cluster: cluster as u32,
            reply: ModelReply::checked(out, loss, samples),
        }
    }

    /// Step 8 from `params`: `s` gradient steps or the proximal problem; returns
    /// the loss at the start (non-finite if training diverged).
    fn local_solve(&self, params: &mut [f32], env: &mut ClientEnv<'_>) -> f64 {
        match self.local_update {
            LocalUpdate::Fedavg { steps } => {
                env.model.train(params, env.data, self.lr, steps, env.ws)
            }
            LocalUpdate::Fedprox { tol, max_steps } => {
                let solve = ProxSolve {
                    lr: self.lr,
                    mu: 1.0 / self.lr,
                    tol,
                    max_steps,
                };
                let mut grad = std::mem::take(&mut env.ws.grad);
                grad.resize(params.len(), 0.0);
                let mut origin = vec![0.0f32; params.len()];
                let outcome = prox_descent(
                    env.model,
                    params,
                    env.data,
                    solve,
                    &mut grad,
                    &mut origin,
                    env.ws,
                );
                env.ws.grad = grad;
                outcome.start_loss
            }
        }
    }
}

impl ClientHalf for TwoPhaseClient {
    type Down = Down;
    type Up = Up;

    fn handle(
        &mut self,
        _ctx: &RoundCtx,
        msg: &Down,
        env: &mut ClientEnv<'_>,
    ) -> Result<Up, AlgoError> {
        match msg {
            Down::Moments { estimates, request } => Ok(self.moments(estimates, request, env)),
            Down::AnchorStep {
                estimate,
                basis,
                iteration,
            } => self.anchor(estimate.clone(), basis, *iteration, env),
            Down::Models(models) => Ok(self.refine(models, None, env)),
            Down::Assigned {
                models, cluster, ..
            } => {
                if *cluster as usize >= self.k {
                    return Err(AlgoError::Protocol(format!(
                        "cluster {cluster} of {} models",
                        self.k
                    )));
                }
                Ok(self.refine(models, Some(*cluster as usize), env))
            }
        }
    }
}
