//! TrimmedMeanGD (Algorithm 3) on the SR-FCA server: the clients that train a
//! round and the message each gets, then the step of every cluster model
//! along the coordinate-wise trimmed mean of its members' gradients.

use std::sync::Arc;

use fedcluster_core::params::{axpy, trimmed_mean_into};
use fedcluster_core::{AlgoError, ClientId, Rng};

use super::messages::Down;
use super::server::{SrFcaServer, Stage};
use crate::common::sampling::members_for_round;

impl SrFcaServer {
    /// A TrimmedMeanGD round: each training member gets its cluster's model
    /// (the cluster models reset to `w_0` on a REFINE step's first round).
    pub(super) fn gradient_plan(&mut self, rng: &mut Rng) -> Vec<(ClientId, Down)> {
        if let Stage::Train { round: 0, .. } = self.stage {
            self.models = self.w0.repeat(self.clusters());
        }
        self.gradients = vec![Vec::new(); self.clusters()];
        let models = Arc::new(self.models.clone());
        self.training_members(rng)
            .into_iter()
            .map(|i| {
                let c = self.assignment[i].expect("a member is assigned") as u32;
                (
                    i,
                    Down::Gradient {
                        models: Arc::clone(&models),
                        cluster: c,
                        p: self.p,
                        local_steps: self.config.refine_local_steps,
                    },
                )
            })
            .collect()
    }

    /// The clients that train this round, in client-id order: every assigned
    /// client, or `clients_per_round` members of each cluster drawn from `rng`.
    fn training_members(&self, rng: &mut Rng) -> Vec<ClientId> {
        let mut chosen: Vec<ClientId> = match self.config.clients_per_round {
            None => (0..self.m)
                .filter(|&i| self.assignment[i].is_some())
                .collect(),
            Some(count) => self
                .members(self.clusters())
                .iter()
                .flat_map(|members| members_for_round(members, count, rng))
                .collect(),
        };
        chosen.sort_unstable();
        chosen
    }

    /// TrimmedMeanGD's step (Algorithm 3): `ω_c -= lr · TrMean_β(gradients)`.
    pub(super) fn trimmed_mean_step(&mut self) -> Result<(), AlgoError> {
        let p = self.p;
        let mut g = vec![0.0f32; p];
        for (c, grads) in self.gradients.iter().enumerate() {
            if grads.is_empty() {
                continue;
            }
            let refs: Vec<&[f32]> = grads.iter().map(Vec::as_slice).collect();
            trimmed_mean_into(&refs, self.config.trim, &mut g)?;
            axpy(-self.config.lr, &g, &mut self.models[c * p..(c + 1) * p]);
        }
        Ok(())
    }
}
