//! The SR-FCA server's round plans: which message each client gets in each
//! stage (local training, the evaluation rounds, ONE_SHOT-IFCA; the
//! TrimmedMeanGD rounds' plan is in `trimmed_mean_gd`).

use std::sync::Arc;

use fedcluster_core::{ClientId, Rng};

use super::config::AfterOneShot;
use super::messages::Down;
use super::server::{SrFcaServer, Stage};

impl SrFcaServer {
    /// This round's plan, by stage.
    pub(super) fn plan_stage(&mut self, rng: &mut Rng) -> Vec<(ClientId, Down)> {
        match self.stage {
            Stage::Local if self.config.local_rounds > 1 => self.local_part_plan(),
            Stage::Local | Stage::RefineLocal { .. } => (0..self.m)
                .map(|i| (i, Down::TrainLocal(Arc::clone(&self.w0))))
                .collect(),
            Stage::PairLosses | Stage::RefinePairLosses { .. } => {
                self.evaluate_plan(self.local.clone())
            }
            Stage::Evaluate { .. } => {
                self.cluster_losses = vec![f64::INFINITY; self.m * self.clusters()];
                self.evaluate_plan(self.models.clone())
            }
            Stage::Ifca => self.ifca_plan(),
            Stage::Train { .. } | Stage::Final => self.gradient_plan(rng),
        }
    }

    /// A part of ONE_SHOT's local training spread over `local_rounds`: the
    /// first sends `w_0` (and the server's view of every local model is
    /// `w_0` until the last part returns them), the others only the steps.
    fn local_part_plan(&mut self) -> Vec<(ClientId, Down)> {
        let part = self.local_part;
        let w0 = (part == 0).then(|| {
            for local in self.local.chunks_exact_mut(self.p) {
                local.copy_from_slice(&self.w0);
            }
            Arc::clone(&self.w0)
        });
        let steps = self.config.local_part_steps(part);
        let keep = part + 1 < self.config.local_rounds;
        (0..self.m)
            .map(|i| {
                let w0 = w0.clone();
                (i, Down::TrainLocalPart { w0, steps, keep })
            })
            .collect()
    }

    /// Every client scores every one of `models` (`p` values each) on its data.
    fn evaluate_plan(&self, models: Vec<f32>) -> Vec<(ClientId, Down)> {
        let (models, p) = (Arc::new(models), self.p);
        (0..self.m)
            .map(|i| {
                let models = Arc::clone(&models);
                (i, Down::Evaluate { models, p })
            })
            .collect()
    }

    /// An IFCA round from the cluster models, the model sums reset.
    fn ifca_plan(&mut self) -> Vec<(ClientId, Down)> {
        let AfterOneShot::Ifca { local_steps } = self.config.then else {
            unreachable!("the IFCA stage follows ONE_SHOT only when configured");
        };
        let p = self.p;
        self.sums.reset(self.clusters(), p);
        let models = Arc::new(self.models.clone());
        (0..self.m)
            .map(|i| {
                let models = Arc::clone(&models);
                (
                    i,
                    Down::Ifca {
                        models,
                        p,
                        local_steps,
                    },
                )
            })
            .collect()
    }
}
