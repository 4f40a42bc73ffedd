//! The server's side of Phase 2, FedX + clustering: broadcast the `k` models,
//! then `θ_t = Σ_i w_i θ_{i,t}` with `w_i = n_i / Σ_{S_t} n_j` (step 9).
//!
//! Client `i` changes only the model of its cluster `z_i`; its other `k − 1`
//! entries are `θ_{t−1}` again, so the clients send just that one model and the
//! server computes, for every cluster `ℓ`,
//! `θ_ℓ <- (Σ_{z_i = ℓ} n_i θ_{i,ℓ} + (N_t − N_{t,ℓ}) θ_ℓ) / N_t`:
//! a cluster moves by the share of the round's data that chose it (unlike IFCA's
//! average over the cluster's own members).

use std::sync::Arc;

use fedcluster_core::params::{add_scaled_f64, all_finite};
use fedcluster_core::{AlgoError, ClientId, Rng, RoundCtx};

use super::messages::{Down, Up};
use crate::common::aggregate::LossMeter;
use crate::common::sampling::participants;

/// Phase 2's state at the server.
#[derive(Debug, serde::Serialize, serde::Deserialize)]
pub(super) struct Refinement {
    p: usize,
    participation: f64,
    /// `k x p` models `θ_t`.
    pub models: Vec<f32>,
    /// Each client's latest cluster estimate `z_{i,t}`.
    pub assignment: Vec<Option<usize>>,
    /// Sample-weighted training loss of the last round.
    pub train_loss: Option<f64>,
    /// Known labels (the oracle): each client refines its true cluster's model.
    labels: Option<Vec<usize>>,
    sums: Vec<f64>,
    cluster_weight: Vec<f64>,
    loss: LossMeter,
}

impl Refinement {
    /// Starts from `models` (`k x p`) for `num_clients` clients.
    pub fn new(models: Vec<f32>, p: usize, num_clients: usize, participation: f64) -> Self {
        Self {
            p,
            participation,
            models,
            assignment: vec![None; num_clients],
            train_loss: None,
            labels: None,
            sums: Vec::new(),
            cluster_weight: Vec::new(),
            loss: LossMeter::default(),
        }
    }

    /// Every client refines the model of `labels[i]` instead of choosing.
    pub fn set_labels(&mut self, labels: Vec<usize>) {
        self.labels = Some(labels);
    }

    fn k(&self) -> usize {
        self.models.len() / self.p
    }

    /// Steps 5-6: the round's participants and the broadcast models.
    pub fn plan(&mut self, rng: &mut Rng) -> Vec<(ClientId, Down)> {
        let models = Arc::new(self.models.clone());
        self.sums.clear();
        self.sums.resize(self.models.len(), 0.0);
        self.cluster_weight.clear();
        self.cluster_weight.resize(self.k(), 0.0);
        participants(self.assignment.len(), self.participation, rng)
            .into_iter()
            .map(|id| {
                let down = match &self.labels {
                    None => Down::Models(Arc::clone(&models)),
                    Some(labels) => Down::Assigned {
                        models: Arc::clone(&models),
                        cluster: labels[id] as u32,
                        p: self.p,
                    },
                };
                (id, down)
            })
            .collect()
    }

    /// Takes one client's refined model.
    pub fn receive(&mut self, ctx: &RoundCtx, id: ClientId, up: Up) -> Result<(), AlgoError> {
        let Up::Refined { cluster, reply } = up else {
            return Err(AlgoError::Protocol(format!(
                "round {}: client {id} sent a Phase 1 reply in Phase 2",
                ctx.round
            )));
        };
        let c = cluster as usize;
        if c >= self.k() || reply.payload.len() != self.p {
            return Err(AlgoError::malformed(ctx.round, id));
        }
        let Some(loss) = reply.loss else {
            return Err(AlgoError::client_diverged(ctx.round, id));
        };
        let w = reply.samples as f64;
        let p = self.p;
        add_scaled_f64(w, &reply.payload, &mut self.sums[c * p..(c + 1) * p]);
        self.cluster_weight[c] += w;
        self.loss.add(loss, reply.samples);
        self.assignment[id] = Some(c);
        Ok(())
    }

    /// Step 9: the data-weighted average over all participants.
    pub fn finish(&mut self, ctx: &RoundCtx) -> Result<(), AlgoError> {
        let total: f64 = self.cluster_weight.iter().sum();
        self.train_loss = self.loss.take_mean();
        if total <= 0.0 {
            return Ok(());
        }
        let p = self.p;
        for (c, w) in self.cluster_weight.iter().enumerate() {
            let keep = (total - w) / total;
            for (m, s) in self.models[c * p..(c + 1) * p]
                .iter_mut()
                .zip(&self.sums[c * p..(c + 1) * p])
            {
                *m = (s / total + keep * f64::from(*m)) as f32;
            }
        }
        if !all_finite(&self.models) {
            return Err(AlgoError::models_diverged(ctx.round));
        }
        Ok(())
    }
}
