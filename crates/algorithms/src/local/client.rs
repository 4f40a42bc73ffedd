//! Local-training client half: it owns its model across rounds.

use fedcluster_core::{AlgoError, ClientEnv, ClientHalf, RoundCtx};

use super::server::TrainLocally;
use crate::common::init::InitScheme;
use crate::common::messages::ModelReply;
use crate::common::round_schedule::{RoundSchedule, scheduled};
use crate::common::trainer::{LocalTrainer, Optimizer};

/// The client half of local training.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct LocalClient {
    lr: f32,
    local_steps: usize,
    init: InitScheme,
    params: Option<Vec<f32>>,
    trainer: LocalTrainer,
    /// The step size over the rounds (absent: `lr` every round).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    round_schedule: Option<RoundSchedule>,
}

impl LocalClient {
    /// A client with no model yet.
    pub fn new(lr: f32, local_steps: usize, init: InitScheme) -> Self {
        Self {
            lr,
            local_steps,
            init,
            params: None,
            trainer: LocalTrainer::default(),
            round_schedule: None,
        }
    }

    /// The same client training with `optimizer`.
    pub fn with_optimizer(mut self, optimizer: Optimizer) -> Self {
        self.trainer = LocalTrainer::new(optimizer);
        self
    }

    /// The same client training at `lr` scaled by `schedule`'s factor of the
    /// round.
    pub fn with_round_schedule(mut self, schedule: Option<RoundSchedule>) -> Self {
        self.round_schedule = schedule;
        self
    }
}

impl ClientHalf for LocalClient {
    type Down = TrainLocally;
    type Up = ModelReply;

    fn handle(
        &mut self,
        _ctx: &RoundCtx,
        _msg: &TrainLocally,
        env: &mut ClientEnv<'_>,
    ) -> Result<ModelReply, AlgoError> {
        let p = env.model.num_params();
        let params = self.params.get_or_insert_with(|| {
            let mut v = vec![0.0; p];
            self.init.fill(env.model, &mut env.rng, &mut v);
            v
        });
        let lr = scheduled(self.round_schedule, self.lr, env.round);
        let loss = self.trainer.train(params, lr, self.local_steps, env);
        Ok(ModelReply::checked(params.clone(), loss, env.data.len()))
    }
}
