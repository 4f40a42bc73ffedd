//! IFCA client half: cluster identity estimation and the local update
//! (Algorithm 2, lines 6-10 and 18-21), run by [`super::local_step`].

use fedcluster_core::{AlgoError, ClientEnv, ClientHalf, RoundCtx};

use super::local_step::{LocalStep, RoundModels, client_round};
use super::messages::{Down, Up};
use crate::common::trainer::{LocalTrainer, Optimizer};

/// The client half of IFCA. It keeps only its optimizer's state (Adam's
/// moments, one per replica) between rounds.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct IfcaClient {
    step: LocalStep,
    trainers: Vec<LocalTrainer>,
}

impl IfcaClient {
    /// A client taking `step` from its chosen model; step sizes come with
    /// each message.
    pub fn new(step: LocalStep) -> Self {
        Self {
            step,
            trainers: Vec::new(),
        }
    }
}

impl ClientHalf for IfcaClient {
    type Down = Down;
    type Up = Up;

    fn handle(
        &mut self,
        ctx: &RoundCtx,
        msg: &Down,
        env: &mut ClientEnv<'_>,
    ) -> Result<Up, AlgoError> {
        if msg.lrs.len() != msg.replicas {
            return Err(AlgoError::Protocol(format!(
                "round {}: {} step sizes for {} replicas",
                ctx.round,
                msg.lrs.len(),
                msg.replicas
            )));
        }
        // One optimizer state per active replica, fresh when replicas drop out.
        if self.trainers.len() != msg.replicas {
            let optimizer = match self.step {
                LocalStep::Train { optimizer, .. } => optimizer,
                _ => Optimizer::default(),
            };
            self.trainers = vec![LocalTrainer::new(optimizer); msg.replicas];
        }
        let sent = RoundModels {
            models: &msg.models,
            k: msg.k,
            lrs: &msg.lrs,
            velocities: msg.velocities.as_deref().map(Vec::as_slice),
            own: msg.own.as_deref(),
        };
        let out = client_round(self.step, &mut self.trainers, &sent, env)?;
        Ok(Up {
            chosen: out.chosen,
            losses: out.losses,
            payload: out.payload,
            velocity: out.velocity,
            samples: env.data.len(),
        })
    }
}
