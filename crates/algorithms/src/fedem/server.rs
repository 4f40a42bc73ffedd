//! The FedEM server (FedRC's too): components averaged over the round's
//! participants by sample count, and, for FedRC, the components' label priors.

use std::sync::Arc;

use serde::{Deserialize, Serialize};

use fedcluster_core::params::all_finite;
use fedcluster_core::{
    AlgoError, ClientId, Model, Purpose, Rng, RoundCtx, ServerHalf, Snapshot, stream,
};

use super::{Components, Config, MixtureReply, Objective};
use crate::common::aggregate::{LossMeter, ModelSums};
use crate::common::checked::{Checked, FieldError};
use crate::common::mixture::LabelSums;
use crate::common::sampling::participants;

/// The server half of FedEM and FedRC.
#[derive(Debug, Serialize, Deserialize)]
pub struct MixtureServer {
    config: Checked<Config>,
    objective: Objective,
    p: usize,
    models: Vec<f32>,
    /// Each client's largest mixture weight.
    assignment: Vec<Option<usize>>,
    sums: ModelSums,
    /// FedRC: this round's soft label counts.
    labels: LabelSums,
    /// FedRC: `P_k(y)` from the last round's counts.
    label_prior: Arc<Vec<f64>>,
    loss: LossMeter,
    train_loss: Option<f64>,
}

impl MixtureServer {
    /// `M` components drawn from the stream `(seed, Init, 0)` for `m`
    /// clients, under `objective`.
    pub fn new(
        config: Checked<Config>,
        objective: Objective,
        model: &dyn Model,
        m: usize,
        seed: u64,
    ) -> Self {
        let p = model.num_params();
        let mut rng = stream(seed, Purpose::Init, 0, 0);
        let mut models = vec![0.0; config.clusters * p];
        for c in models.chunks_exact_mut(p.max(1)) {
            config.init.fill(model, &mut rng, c);
        }
        Self {
            config,
            objective,
            p,
            models,
            assignment: vec![None; m],
            sums: ModelSums::default(),
            labels: LabelSums::default(),
            label_prior: Arc::new(Vec::new()),
            loss: LossMeter::default(),
            train_loss: None,
        }
    }

    /// Starts from `given` (one model per component) instead of the drawn ones.
    pub fn start_from(&mut self, given: &[Vec<f32>]) -> Result<(), FieldError> {
        crate::common::init::start_from(&mut self.models, self.p, given, "clusters")
    }

    /// FedRC's current `P_k(y)`, `M × C` (empty before its first round).
    pub fn label_prior(&self) -> &[f64] {
        &self.label_prior
    }
}

impl ServerHalf for MixtureServer {
    type Down = Components;
    type Up = MixtureReply;

    fn plan(
        &mut self,
        _ctx: &RoundCtx,
        rng: &mut Rng,
    ) -> Result<Vec<(ClientId, Components)>, AlgoError> {
        let k = self.config.clusters;
        self.sums.reset(k, self.p);
        self.labels.reset(k);
        let msg = Components {
            models: Arc::new(self.models.clone()),
            label_prior: Arc::clone(&self.label_prior),
        };
        let chosen = participants(self.assignment.len(), self.config.participation, rng);
        Ok(chosen.into_iter().map(|i| (i, msg.clone())).collect())
    }

    fn receive(&mut self, ctx: &RoundCtx, id: ClientId, up: MixtureReply) -> Result<(), AlgoError> {
        let (p, k) = (self.p, self.config.clusters);
        let labels_fit = match self.objective {
            Objective::Likelihood => up.label_mass.is_empty(),
            Objective::Robust => up.label_mass.len().is_multiple_of(k),
        };
        if up.models.len() != k * p || up.weights.len() != k || !labels_fit {
            return Err(AlgoError::malformed(ctx.round, id));
        }
        let Some(loss) = up.loss else {
            return Err(AlgoError::client_diverged(ctx.round, id));
        };
        let n = up.samples as f64;
        for (j, component) in up.models.chunks_exact(p.max(1)).enumerate() {
            self.sums.add(j, component, n);
        }
        self.labels.add(&up.label_mass);
        let best = (0..k)
            .max_by(|&a, &b| up.weights[a].total_cmp(&up.weights[b]).then(b.cmp(&a)))
            .unwrap_or(0);
        self.assignment[id] = Some(best);
        self.loss.add(loss, up.samples);
        Ok(())
    }

    fn finish(&mut self, ctx: &RoundCtx) -> Result<(), AlgoError> {
        self.sums.finish(&mut self.models);
        self.train_loss = self.loss.take_mean();
        if self.objective == Objective::Robust {
            let prior = self.labels.prior();
            if !prior.is_empty() {
                self.label_prior = Arc::new(prior);
            }
        }
        if !all_finite(&self.models) {
            return Err(AlgoError::models_diverged(ctx.round));
        }
        Ok(())
    }

    fn snapshot(&self) -> Snapshot<'_> {
        Snapshot::single(&self.models, self.p, &self.assignment, self.train_loss)
    }
}
