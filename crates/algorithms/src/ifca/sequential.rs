//! Clients in sequence (`clients = "sequential"`), emulating the SR-FCA
//! public code's IFCA (github.com/harshv834/sr-fca at commit a1b418f,
//! `src/clustering/ifca.py`, `IFCA.cluster`). Each of its rounds
//! 1. places every client on the cluster model of lowest loss on its whole
//!    training split (`min_loss_clustering`); the first round instead deals
//!    the clients out at random, the `i`-th of a shuffled order to cluster
//!    `i mod k` (`init_cluster_map`);
//! 2. draws each cluster's participants (`ClusterTrainer.train`:
//!    `num_clients_per_round` of its members, all when it has no more; here
//!    `clients_per_round`, else the round's `participation` share of all
//!    clients, each in its cluster);
//! 3. trains them one after another, each from the model the previous one
//!    returned, and averages the checkpoints (`weighting`; the code's plain
//!    mean is `"uniform"`).
//!
//! Here step 1 is one engine round in which every client sends only the
//! argmin of its losses ([`super::Down::assign_only`]), step 3 one engine
//! round per link of the chains ([`crate::fedavg::chain::Chain`], shared with
//! FedAvg's `clients = "sequential"`): a paper round of at most `c`
//! participants per cluster takes `c` engine rounds, plus one for the
//! assignment after the first round (`rounds = c x R + R - 1` for `R` paper
//! rounds). One replica only (no restarts, step-size sweeps, momentum,
//! weight sharing, pretraining, `min_share` or `stable_rounds`).

use std::sync::Arc;

use rand::seq::SliceRandom;
use serde::{Deserialize, Serialize};

use fedcluster_core::model::argmin_f64;
use fedcluster_core::params::all_finite;
use fedcluster_core::{AlgoError, ClientEnv, ClientId, Rng, RoundCtx};

use super::config::Config;
use super::messages::{Down, Up};
use crate::common::aggregate::{LossMeter, ModelSums};
use crate::common::sampling::{members_for_round, participants};
use crate::fedavg::Clients;
use crate::fedavg::chain::Chain;

/// Where the sequential rounds stand (the server's side).
#[derive(Debug, Default, Serialize, Deserialize)]
pub(crate) struct Sequential {
    /// Paper rounds done (chains ended).
    rounds_done: usize,
    /// Whether every client holds a cluster for the next chains (dealt out or
    /// assigned since the last chains ended).
    assigned: bool,
    /// Whether this engine round asks the clients for their clusters.
    assigning: bool,
    /// The round's chains while they run.
    chain: Option<Chain>,
    /// Running sums of the chains' checkpoints.
    sums: ModelSums,
    /// The paper round's training loss (or the assignment's).
    loss: LossMeter,
}

/// The one replica's state that the sequential rounds read and change.
pub(super) struct ReplicaState<'a> {
    /// `k x p` cluster models.
    pub models: &'a mut [f32],
    /// Each client's cluster.
    pub assignment: &'a mut [Option<usize>],
    /// The training loss of the last chains (or assignment).
    pub train_loss: &'a mut Option<f64>,
}

impl Sequential {
    /// The sequential state when `config` asks for it.
    pub(super) fn for_config(config: &Config) -> Option<Self> {
        (config.clients == Clients::Sequential).then(Self::default)
    }

    /// This engine round's messages: every client's assignment, or the next
    /// link of the chains (started when none runs).
    pub(super) fn plan(
        &mut self,
        config: &Config,
        round: usize,
        replica: ReplicaState<'_>,
        rng: &mut Rng,
    ) -> Vec<(ClientId, Down)> {
        let k = config.clusters;
        let p = replica.models.len() / k;
        let message = |models: &Arc<Vec<f32>>, own: Option<u32>| Down {
            models: Arc::clone(models),
            replicas: 1,
            k,
            lrs: Arc::new(vec![config.round_lr(0, round)]),
            shared: 0,
            velocities: None,
            own: own.map(|c| vec![c]),
            assign_only: own.is_none(),
        };
        if self.chain.is_none() {
            if self.rounds_done == 0 {
                deal(replica.assignment, k, rng);
            } else if !self.assigned {
                self.assigning = true;
                self.loss = LossMeter::default();
                let models = Arc::new(replica.models.to_vec());
                let all = 0..replica.assignment.len();
                return all.map(|id| (id, message(&models, None))).collect();
            }
            let chosen = self.participants(config, replica.assignment, rng);
            self.sums.reset(k, p);
            self.loss = LossMeter::default();
            self.chain = Some(Chain::new(
                &chosen,
                replica.assignment,
                replica.models,
                k,
                rng,
            ));
        }
        let chain = self.chain.as_ref().expect("started above");
        let models = Arc::new(chain.current.clone());
        chain
            .link()
            .into_iter()
            .map(|(id, c)| (id, message(&models, Some(c as u32))))
            .collect()
    }

    /// The paper round's participants: `clients_per_round` of each cluster's
    /// members, else the `participation` share of all clients.
    fn participants(
        &self,
        config: &Config,
        assignment: &[Option<usize>],
        rng: &mut Rng,
    ) -> Vec<ClientId> {
        let Some(count) = config.clients_per_round else {
            return participants(assignment.len(), config.participation, rng);
        };
        let mut chosen = Vec::new();
        for c in 0..config.clusters {
            let members: Vec<ClientId> = (0..assignment.len())
                .filter(|&i| assignment[i] == Some(c))
                .collect();
            chosen.extend(members_for_round(&members, count, rng));
        }
        chosen.sort_unstable();
        chosen
    }

    /// One client's reply: its cluster, or its link's trained model.
    pub(super) fn receive(
        &mut self,
        ctx: &RoundCtx,
        id: ClientId,
        up: Up,
        config: &Config,
        replica: ReplicaState<'_>,
    ) -> Result<(), AlgoError> {
        let k = config.clusters;
        let p = replica.models.len() / k;
        let expected = if self.assigning { 0 } else { p };
        if up.chosen.len() != 1
            || up.losses.len() != 1
            || up.payload.len() != expected
            || up.chosen[0] as usize >= k
        {
            return Err(AlgoError::malformed(ctx.round, id));
        }
        let Some(loss) = up.losses[0] else {
            return Err(AlgoError::client_diverged(ctx.round, id));
        };
        let c = up.chosen[0] as usize;
        self.loss.add(loss, up.samples);
        if self.assigning {
            replica.assignment[id] = Some(c);
            return Ok(());
        }
        let chain = self
            .chain
            .as_mut()
            .ok_or_else(|| AlgoError::malformed(ctx.round, id))?;
        if replica.assignment[id] != Some(c) {
            return Err(AlgoError::malformed(ctx.round, id));
        }
        self.sums
            .add(c, &up.payload, config.weighting.weight(up.samples));
        chain.current[c * p..(c + 1) * p].copy_from_slice(&up.payload);
        Ok(())
    }

    /// Ends an assignment or a link; the cluster models change when the
    /// chains end, to the mean of their checkpoints.
    pub(super) fn finish(
        &mut self,
        ctx: &RoundCtx,
        replica: ReplicaState<'_>,
    ) -> Result<(), AlgoError> {
        if std::mem::take(&mut self.assigning) {
            self.assigned = true;
            *replica.train_loss = self.loss.take_mean();
            return Ok(());
        }
        let Some(chain) = &mut self.chain else {
            return Ok(());
        };
        if !chain.advance() {
            return Ok(());
        }
        self.chain = None;
        self.sums.finish(replica.models);
        *replica.train_loss = self.loss.take_mean();
        self.rounds_done += 1;
        self.assigned = false;
        if !all_finite(replica.models) {
            return Err(AlgoError::models_diverged(ctx.round));
        }
        Ok(())
    }
}

/// The code's first round (`init_cluster_map`): the clients in an order
/// drawn from `rng`, the `i`-th to cluster `i mod k`.
fn deal(assignment: &mut [Option<usize>], k: usize, rng: &mut Rng) {
    let mut order: Vec<ClientId> = (0..assignment.len()).collect();
    order.shuffle(rng);
    for (i, id) in order.into_iter().enumerate() {
        assignment[id] = Some(i % k);
    }
}

/// The client's answer to an assignment message: per replica the cluster of
/// lowest loss on its data and that loss (`None` where not finite), no model.
pub(super) fn assignment_reply(msg: &Down, env: &mut ClientEnv<'_>) -> Result<Up, AlgoError> {
    let (r, k) = (msg.replicas, msg.k);
    if msg.models.len() != r * k * env.model.num_params() || k == 0 {
        return Err(AlgoError::Protocol(format!(
            "assignment: {} values for {r} x {k} models of {} parameters",
            msg.models.len(),
            env.model.num_params()
        )));
    }
    let mut all = vec![0.0f64; r * k];
    env.model.losses(&msg.models, env.data, &mut all, env.ws);
    let chosen: Vec<usize> = all.chunks_exact(k).map(argmin_f64).collect();
    let losses = chosen
        .iter()
        .zip(all.chunks_exact(k))
        .map(|(&c, row)| row[c].is_finite().then_some(row[c]))
        .collect();
    Ok(Up {
        chosen: chosen.into_iter().map(|c| c as u32).collect(),
        losses,
        payload: Vec::new(),
        velocity: Vec::new(),
        samples: env.data.len(),
    })
}
