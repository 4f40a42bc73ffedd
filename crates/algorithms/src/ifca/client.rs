//! IFCA client half: cluster identity estimation and the local update
//! (Algorithm 2, lines 6-10 and 18-21), run by [`super::local_step`].

use fedcluster_core::{AlgoError, ClientEnv, ClientHalf, RoundCtx};

use super::local_step::{LocalStep, RoundModels, client_round};
use super::messages::{Down, Up};
use crate::common::trainer::{LocalTrainer, Optimizer};

/// The client half of IFCA. It keeps only its optimizer's state (Adam's
/// moments, one per replica) between rounds, and under CFL-MGD's
/// `buffer = "own"` its own momentum buffers.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct IfcaClient {
    step: LocalStep,
    trainers: Vec<LocalTrainer>,
    /// Its own momentum buffers `u_i` (one per replica) from its last round,
    /// started from instead of the chosen cluster's; `None`: the cluster's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    own_momentum: Option<Vec<f32>>,
    /// `freeze_trunk`: the round from which it trains only the head.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    frozen_from: Option<usize>,
}

impl IfcaClient {
    /// A client taking `step` from its chosen model; step sizes come with
    /// each message.
    pub fn new(step: LocalStep) -> Self {
        Self {
            step,
            trainers: Vec::new(),
            own_momentum: None,
            frozen_from: None,
        }
    }

    /// The same client training only the head (the last layer, from
    /// [`fedcluster_core::Model::head_start`]) from round `round` on.
    pub fn with_trunk_frozen_from(mut self, round: usize) -> Self {
        self.frozen_from = Some(round);
        self
    }

    /// The same client starting its momentum from its own buffer `u_i(t−1)`
    /// (zero at first, and again when the replicas change) instead of the
    /// chosen cluster's `u_p̂`, which it still receives.
    pub fn with_own_momentum(mut self) -> Self {
        self.own_momentum = Some(Vec::new());
        self
    }

    /// The momentum buffers to start from, laid out like the message's
    /// models: the client's own, repeated for every cluster of a replica.
    fn own_starts(&mut self, msg: &Down, p: usize) -> Option<Vec<f32>> {
        let own = self.own_momentum.as_mut()?;
        msg.velocities.as_ref()?;
        if own.len() != msg.replicas * p {
            *own = vec![0.0; msg.replicas * p];
        }
        let per_replica = own.chunks_exact(p);
        Some(
            per_replica
                .flat_map(|u| std::iter::repeat_n(u, msg.k).flatten().copied())
                .collect(),
        )
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
        if msg.assign_only {
            return super::sequential::assignment_reply(msg, env);
        }
        // One optimizer state per active replica, fresh when replicas drop out.
        if self.trainers.len() != msg.replicas {
            let optimizer = match self.step {
                LocalStep::Train { optimizer, .. } => optimizer,
                _ => Optimizer::default(),
            };
            self.trainers = vec![LocalTrainer::new(optimizer); msg.replicas];
        }
        let starts = self.own_starts(msg, env.model.num_params());
        let sent = RoundModels {
            models: &msg.models,
            k: msg.k,
            lrs: &msg.lrs,
            velocities: match &starts {
                Some(own) => Some(own.as_slice()),
                None => msg.velocities.as_deref().map(Vec::as_slice),
            },
            own: msg.own.as_deref(),
            frozen: match self.frozen_from {
                Some(from) if ctx.round >= from => env.model.head_start(),
                _ => 0,
            },
        };
        let out = client_round(self.step, &mut self.trainers, &sent, env)?;
        if let Some(own) = &mut self.own_momentum {
            // The buffer after this round: option II's trained one, option I's
            // `β u + g` (the payload).
            let after = match self.step {
                LocalStep::TrainWithMomentum { .. } => &out.velocity,
                _ => &out.payload,
            };
            if own.len() == after.len() {
                own.copy_from_slice(after);
            }
        }
        Ok(Up {
            chosen: out.chosen,
            losses: out.losses,
            payload: out.payload,
            velocity: out.velocity,
            samples: env.data.len(),
        })
    }
}
