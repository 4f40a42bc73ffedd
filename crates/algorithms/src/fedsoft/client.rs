//! The FedSoft client: importance weights (kept between rounds) and the
//! proximal local update.

use fedcluster_core::model::argmin_f64;
use fedcluster_core::params::{all_finite, axpy};
use fedcluster_core::{AlgoError, ClientEnv, ClientHalf, RoundCtx};

use super::{Centres, Config, SoftReply};
use crate::common::trainer::LocalTrainer;

/// The client half of FedSoft.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct FedSoftClient {
    lr: f32,
    mu: f32,
    local_steps: usize,
    smoothing: f64,
    trainer: LocalTrainer,
    /// `u_k`, empty until first estimated.
    importance: Vec<f64>,
}

impl FedSoftClient {
    /// A client for `config`.
    pub fn new(config: &Config) -> Self {
        Self {
            lr: config.lr,
            mu: config.mu,
            local_steps: config.local_steps,
            smoothing: config.smoothing,
            trainer: LocalTrainer::new(config.optimizer),
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
        let start_loss =
            self.trainer
                .train_towards(&mut w, &mixture, self.mu, self.lr, self.local_steps, env);
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
