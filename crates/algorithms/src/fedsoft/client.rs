//! The FedSoft client: importance weights (kept between rounds) and the
//! proximal local update.

use fedcluster_core::model::argmin_f64;
use fedcluster_core::params::{all_finite, axpy};
use fedcluster_core::{AlgoError, ClientEnv, ClientHalf, RoundCtx};

use super::{Centres, SoftReply};

/// The client half of FedSoft.
#[derive(Debug, Clone)]
pub struct FedSoftClient {
    lr: f32,
    mu: f32,
    local_steps: usize,
    smoothing: f64,
    /// `u_k`, empty until first estimated.
    importance: Vec<f64>,
}

impl FedSoftClient {
    /// A client with the given step size, proximal weight, local steps and
    /// importance floor.
    pub fn new(lr: f32, mu: f32, local_steps: usize, smoothing: f64) -> Self {
        Self {
            lr,
            mu,
            local_steps,
            smoothing,
            importance: Vec::new(),
        }
    }

    /// Step 2: the share of points best fit by each centre, floored and
    /// renormalised.
    fn estimate(&mut self, models: &[f32], k: usize, env: &mut ClientEnv<'_>) {
        let mut counts = vec![0.0f64; k];
        let mut losses = vec![0.0f64; k];
        for j in 0..env.data.len() {
            env.model
                .losses(models, env.data.rows(j, j + 1), &mut losses, env.ws);
            counts[argmin_f64(&losses)] += 1.0;
        }
        let n = env.data.len().max(1) as f64;
        let floored: Vec<f64> = counts.iter().map(|c| (c / n).max(self.smoothing)).collect();
        let total: f64 = floored.iter().sum();
        self.importance = floored.iter().map(|u| u / total).collect();
    }
}

impl ClientHalf for FedSoftClient {
    type Down = Centres;
    type Up = SoftReply;

    fn handle(
        &mut self,
        _ctx: &RoundCtx,
        msg: &Centres,
        env: &mut ClientEnv<'_>,
    ) -> Result<SoftReply, AlgoError> {
        let p = env.model.num_params();
        let k = msg.models.len() / p.max(1);
        if msg.estimate || self.importance.len() != k {
            self.estimate(&msg.models, k, env);
        }
        // Step 3: the mixture c_k = Σ_s u_ks θ_s is both the start and, since
        // Σ_s u_ks = 1, the point the proximal term pulls towards.
        let mut mixture = vec![0.0f32; p];
        for (u, centre) in self.importance.iter().zip(msg.models.chunks_exact(p)) {
            axpy(*u as f32, centre, &mut mixture);
        }
        let mut w = mixture.clone();
        let mut grad = std::mem::take(&mut env.ws.grad);
        grad.resize(p, 0.0);
        let mut start_loss = f64::NAN;
        for step in 0..self.local_steps {
            let loss = env.model.loss_grad(&w, env.data, &mut grad, env.ws);
            if step == 0 {
                start_loss = loss;
            }
            if !loss.is_finite() || !all_finite(&grad) {
                start_loss = f64::NAN;
                break;
            }
            for ((g, wi), ci) in grad.iter_mut().zip(&w).zip(&mixture) {
                *g += self.mu * (wi - ci);
            }
            axpy(-self.lr, &grad, &mut w);
        }
        env.ws.grad = grad;
        let ok = start_loss.is_finite() && all_finite(&w);
        if !ok {
            w.fill(0.0);
        }
        Ok(SoftReply {
            model: w,
            importance: self.importance.clone(),
            loss: ok.then_some(start_loss),
            samples: env.data.len(),
        })
    }
}
