//! The two-phase server: Phase 1 until it is done, then Phase 2 from its centres.

use fedcluster_core::{
    AlgoError, ClientId, Model, Purpose, Rng, RoundCtx, ServerHalf, Snapshot, stream,
};

use super::config::{Config, Start};
use super::messages::{Down, Up};
use super::phase1::MomentDescent;
use super::phase2::Refinement;
use crate::common::checked::Checked;

/// The server half of the two-phase method.
#[derive(Debug, serde::Serialize, serde::Deserialize)]
pub struct TwoPhaseServer {
    /// Parameters per model.
    p: usize,
    /// Phase 1 (kept after it ends, for its anchors' estimates).
    phase1: Option<MomentDescent>,
    /// Whether Phase 1 is still running.
    phase1_running: bool,
    /// Phase 2 (its models are Phase 1's centres once Phase 1 is done).
    phase2: Refinement,
    /// Phase 1's view of the clients: anchors mapped to their centre.
    phase1_assignment: Vec<Option<usize>>,
}

impl TwoPhaseServer {
    /// A server for clients holding `sizes[i]` points each (FedAvg servers learn
    /// these from the weights; the anchors are chosen among the largest). The
    /// starting point comes from the stream `(seed, Init, 0)`: one `θ₀` for
    /// every anchor, or `k` models when Phase 1 is skipped.
    pub fn new(
        config: Checked<Config>,
        model: &dyn Model,
        sizes: Vec<usize>,
        seed: u64,
    ) -> Result<Self, AlgoError> {
        let p = model.num_params();
        let k = config.clusters;
        let mut rng = stream(seed, Purpose::Init, 0, 0);
        let mut models = vec![0.0; k * p];
        for m in models.chunks_exact_mut(p) {
            config.init.fill(model, &mut rng, m);
        }
        let phase1 = match (&config.phase1, config.start) {
            (Some(cfg), Start::Phase1) => Some(MomentDescent::new(
                cfg.clone(),
                k,
                sizes.clone(),
                &models[..p],
                seed,
            )?),
            _ => None,
        };
        let mut server = Self::with_models(config, models, p, sizes.len());
        server.phase1_running = phase1.is_some();
        server.phase1 = phase1;
        server.sync_phase1_view();
        Ok(server)
    }

    /// Phase 2 alone from the given `k x p` models (the oracle of Su, Xu, Yang
    /// starts from the true parameters).
    pub fn with_models(
        config: Checked<Config>,
        models: Vec<f32>,
        p: usize,
        clients: usize,
    ) -> Self {
        Self {
            p,
            phase1: None,
            phase1_running: false,
            phase2: Refinement::new(models, p, clients, config.participation),
            phase1_assignment: vec![None; clients],
        }
    }

    /// Phase 2 alone with known labels (the oracle of Su, Xu, Yang's Section
    /// V-D): `k` models from `init` (stream `(seed, Init, 0)`), client `i`
    /// refines model `labels[i]`, which must be below `k`.
    pub fn with_labels(
        config: Checked<Config>,
        model: &dyn Model,
        labels: Vec<usize>,
        seed: u64,
    ) -> Result<Self, AlgoError> {
        let (p, k) = (model.num_params(), config.clusters);
        if let Some(bad) = labels.iter().find(|&&l| l >= k) {
            return Err(AlgoError::Protocol(format!(
                "label {bad} names a cluster beyond the {k} models"
            )));
        }
        let mut rng = stream(seed, Purpose::Init, 0, 0);
        let mut models = vec![0.0; k * p];
        for m in models.chunks_exact_mut(p) {
            config.init.fill(model, &mut rng, m);
        }
        let clients = labels.len();
        let mut server = Self::with_models(config, models, p, clients);
        server.phase2.set_labels(labels);
        Ok(server)
    }

    /// Phase 1's anchors and their estimates (final once Phase 1 is over; empty
    /// without Phase 1).
    pub fn anchor_estimates(&self) -> Vec<(ClientId, &[f32])> {
        self.phase1.iter().flat_map(|p| p.anchors()).collect()
    }

    /// Whether Phase 1 is still running.
    pub fn in_phase1(&self) -> bool {
        self.phase1_running
    }

    /// Copies Phase 1's grouping into the snapshot's view; hands the centres to
    /// Phase 2 when Phase 1 is done.
    fn sync_phase1_view(&mut self) {
        let Some(p1) = self.phase1.as_ref().filter(|_| self.phase1_running) else {
            return;
        };
        self.phase1_assignment.fill(None);
        for ((id, _), c) in p1.anchors().zip(&p1.grouping.member_of) {
            self.phase1_assignment[id] = *c;
        }
        if p1.done() {
            self.phase2.models.clone_from(&p1.grouping.centres);
            self.phase1_running = false;
        }
    }

    #[cfg(test)]
    pub(super) fn phase1(&self) -> Option<&MomentDescent> {
        self.phase1.as_ref()
    }
}

impl ServerHalf for TwoPhaseServer {
    type Down = Down;
    type Up = Up;

    fn plan(&mut self, _ctx: &RoundCtx, rng: &mut Rng) -> Result<Vec<(ClientId, Down)>, AlgoError> {
        match self.phase1.as_mut().filter(|_| self.phase1_running) {
            Some(p1) => p1.plan(rng),
            None => Ok(self.phase2.plan(rng)),
        }
    }

    fn receive(&mut self, ctx: &RoundCtx, client: ClientId, reply: Up) -> Result<(), AlgoError> {
        match self.phase1.as_mut().filter(|_| self.phase1_running) {
            Some(p1) => p1.receive(ctx, client, reply),
            None => self.phase2.receive(ctx, client, reply),
        }
    }

    fn finish(&mut self, ctx: &RoundCtx) -> Result<(), AlgoError> {
        match self.phase1.as_mut().filter(|_| self.phase1_running) {
            Some(p1) => {
                p1.finish(ctx)?;
                self.sync_phase1_view();
                Ok(())
            }
            None => self.phase2.finish(ctx),
        }
    }

    fn snapshot(&self) -> Snapshot<'_> {
        let (models, assignment, train_loss) =
            match self.phase1.as_ref().filter(|_| self.phase1_running) {
                Some(p1) => (&p1.grouping.centres, &self.phase1_assignment, None),
                None => (
                    &self.phase2.models,
                    &self.phase2.assignment,
                    self.phase2.train_loss,
                ),
            };
        Snapshot::single(models, self.p, assignment, train_loss)
    }
}
