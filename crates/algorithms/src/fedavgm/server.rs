//! The FedAvgM server: the sample-weighted mean of the replies, then a
//! momentum step along `w_t − mean` (step 3 of the protocol).

use std::sync::Arc;

use fedcluster_core::params::all_finite;
use fedcluster_core::{
    AlgoError, ClientId, Model, Purpose, Rng, RoundCtx, ServerHalf, Snapshot, stream,
};

use super::config::Config;
use crate::common::aggregate::{LossMeter, ModelSums};
use crate::common::checked::{Checked, FieldError};
use crate::common::messages::{ClusterModel, ModelReply};
use crate::common::sampling::participants;

/// The server half of FedAvgM.
#[derive(Debug, serde::Serialize, serde::Deserialize)]
pub struct FedAvgMServer {
    config: Checked<Config>,
    /// The global model `w_t`.
    model: Vec<f32>,
    /// The server momentum `v_t`.
    velocity: Vec<f32>,
    /// Every client trains the one model.
    assignment: Vec<Option<usize>>,
    /// The round's sample-weighted sum of the replies.
    sums: ModelSums,
    loss: LossMeter,
    train_loss: Option<f64>,
}

impl FedAvgMServer {
    /// Starts from `given` instead of the drawn models (`--init-from`).
    pub fn start_from(&mut self, given: &[Vec<f32>]) -> Result<(), FieldError> {
        let p = self.model.len();
        crate::common::init::start_from(&mut self.model, p, given, "name")
    }

    /// `w_0` drawn from the stream `(seed, Init, 0)`, for `m` clients.
    pub fn new(config: Checked<Config>, model: &dyn Model, m: usize, seed: u64) -> Self {
        let p = model.num_params();
        let mut w = vec![0.0; p];
        config
            .init
            .fill(model, &mut stream(seed, Purpose::Init, 0, 0), &mut w);
        Self {
            config,
            velocity: vec![0.0; p],
            model: w,
            assignment: vec![Some(0); m],
            sums: ModelSums::default(),
            loss: LossMeter::default(),
            train_loss: None,
        }
    }

    /// The global model.
    pub fn model(&self) -> &[f32] {
        &self.model
    }
}

impl ServerHalf for FedAvgMServer {
    type Down = ClusterModel;
    type Up = ModelReply;

    fn plan(
        &mut self,
        _ctx: &RoundCtx,
        rng: &mut Rng,
    ) -> Result<Vec<(ClientId, ClusterModel)>, AlgoError> {
        let p = self.model.len();
        self.sums.reset(1, p);
        let models = Arc::new(self.model.clone());
        let chosen = participants(self.assignment.len(), self.config.participation, rng);
        Ok(chosen
            .into_iter()
            .map(|id| {
                (
                    id,
                    ClusterModel {
                        models: Arc::clone(&models),
                        cluster: 0,
                        p,
                    },
                )
            })
            .collect())
    }

    fn receive(&mut self, ctx: &RoundCtx, id: ClientId, up: ModelReply) -> Result<(), AlgoError> {
        if up.payload.len() != self.model.len() {
            return Err(AlgoError::malformed(ctx.round, id));
        }
        let Some(loss) = up.loss else {
            return Err(AlgoError::client_diverged(ctx.round, id));
        };
        self.sums.add(0, &up.payload, up.samples as f64);
        self.loss.add(loss, up.samples);
        Ok(())
    }

    fn finish(&mut self, ctx: &RoundCtx) -> Result<(), AlgoError> {
        self.train_loss = self.loss.take_mean();
        if self.train_loss.is_none() {
            return Ok(()); // nobody replied: the model and momentum stay
        }
        let mut mean = self.model.clone();
        self.sums.finish(&mut mean);
        let (beta, eta) = (self.config.server_momentum, self.config.server_lr);
        for ((w, v), m) in self.model.iter_mut().zip(&mut self.velocity).zip(&mean) {
            *v = beta * *v + (*w - m);
            *w -= eta * *v;
        }
        if !all_finite(&self.model) {
            return Err(AlgoError::models_diverged(ctx.round));
        }
        Ok(())
    }

    fn snapshot(&self) -> Snapshot<'_> {
        Snapshot::single(
            &self.model,
            self.model.len(),
            &self.assignment,
            self.train_loss,
        )
    }
}
