//! The server's side of Phase 1, federated moment descent: anchor choice, the
//! subspace exchanges (direct SVD or federated orthogonal iteration), the anchor
//! steps and the grouping of the anchors' estimates into `k` centres.

use std::sync::Arc;

use rand::seq::index::sample;

use fedcluster_core::params::add_scaled_f64;
use fedcluster_core::{AlgoError, ClientId, Purpose, Rng, RoundCtx, stream};

use super::config::{Phase1, SubspaceSolver};
use super::grouping::{Grouping, group_anchors};
use super::messages::{Down, MomentRequest, Up};
use super::subspace::{orthonormalize, random_orthonormal, top_left_singular};

/// The largest model size for the direct-SVD mode (its messages are `d x d`).
pub(super) const MAX_SVD_DIM: usize = 4096;

/// Phase 1's state at the server.
#[derive(Debug, serde::Serialize, serde::Deserialize)]
pub(super) struct MomentDescent {
    cfg: Phase1,
    k: usize,
    d: usize,
    sizes: Vec<usize>,
    /// The anchors `H`, in increasing id order.
    anchors: Vec<ClientId>,
    /// `θ_{i,t}` of every anchor, `d` values each.
    estimates: Vec<f32>,
    /// Anchors still moving.
    active: Vec<bool>,
    /// Iteration `t`.
    iteration: usize,
    /// Exchange within the iteration: the subspace exchanges, then the anchor step.
    exchange: usize,
    /// The anchors active at the start of this iteration, in anchor order: the
    /// order of the per-anchor matrices in messages.
    moving: Vec<usize>,
    /// Clients already used for a subspace estimate (exact mode).
    used: Vec<bool>,
    /// `S_t` of this iteration.
    subspace_clients: Vec<ClientId>,
    /// Each moving anchor's current `d x k` basis (`Q_t`, then `Ũ_{i,t}`).
    bases: Vec<f32>,
    /// Weighted sums of the clients' matrices and their total weight.
    sums: Vec<f64>,
    weight: f64,
    /// The latest `σ̂` of every anchor.
    pub sigmas: Vec<Option<f64>>,
    /// The centres the estimates give now.
    pub grouping: Grouping,
}

impl MomentDescent {
    /// Chooses the anchors among the clients with the most points (stream
    /// `(seed, Anchors)`); every anchor starts from `theta0`.
    pub fn new(
        cfg: Phase1,
        k: usize,
        sizes: Vec<usize>,
        theta0: &[f32],
        seed: u64,
    ) -> Result<Self, AlgoError> {
        let d = theta0.len();
        if cfg.subspace == SubspaceSolver::Svd && d > MAX_SVD_DIM {
            return Err(AlgoError::Protocol(format!(
                "phase1.subspace: the direct SVD needs a {d} x {d} moment per anchor and client; \
                 above d = {MAX_SVD_DIM} use {{ kind = \"orthogonal\", steps = T1 }}"
            )));
        }
        let m_h = cfg.anchor_count(k);
        let min_points = cfg.anchor_min_points.unwrap_or_else(|| {
            let mut sorted = sizes.clone();
            sorted.sort_unstable_by(|a, b| b.cmp(a));
            sorted.get(m_h.saturating_sub(1)).copied().unwrap_or(0)
        });
        let eligible: Vec<ClientId> = (0..sizes.len())
            .filter(|&i| sizes[i] >= min_points.max(2))
            .collect();
        if eligible.len() < m_h {
            return Err(AlgoError::Protocol(format!(
                "phase1.anchors: {m_h} anchors asked for, but only {} clients hold at least {} points",
                eligible.len(),
                min_points.max(2)
            )));
        }
        let mut rng = stream(seed, Purpose::Anchors, 0, 0);
        let mut anchors: Vec<ClientId> = sample(&mut rng, eligible.len(), m_h)
            .into_iter()
            .map(|i| eligible[i])
            .collect();
        anchors.sort_unstable();
        let estimates: Vec<f32> = anchors
            .iter()
            .flat_map(|_| theta0.iter().copied())
            .collect();
        let grouping = group_anchors(&estimates, d, f64::from(cfg.separation) / 2.0, k);
        Ok(Self {
            k,
            d,
            used: vec![false; sizes.len()],
            sizes,
            active: vec![true; anchors.len()],
            sigmas: vec![None; anchors.len()],
            anchors,
            estimates,
            iteration: 0,
            exchange: 0,
            moving: Vec::new(),
            subspace_clients: Vec::new(),
            bases: Vec::new(),
            sums: Vec::new(),
            weight: 0.0,
            grouping,
            cfg,
        })
    }

    /// The anchors and their current estimates.
    pub fn anchors(&self) -> impl Iterator<Item = (ClientId, &[f32])> {
        self.anchors
            .iter()
            .copied()
            .zip(self.estimates.chunks_exact(self.d))
    }

    /// Whether Phase 1 is over: `T` iterations done or every anchor stopped.
    pub fn done(&self) -> bool {
        self.iteration == self.cfg.iterations || !self.active.contains(&true)
    }

    fn subspace_exchanges(&self) -> usize {
        self.cfg.rounds_per_iteration() - 1
    }

    /// Values per anchor in a subspace reply.
    fn matrix_len(&self) -> usize {
        match self.cfg.subspace {
            SubspaceSolver::Svd => self.d * self.d,
            SubspaceSolver::Orthogonal { .. } => self.d * self.k,
        }
    }

    /// This exchange's messages.
    pub fn plan(&mut self, rng: &mut Rng) -> Result<Vec<(ClientId, Down)>, AlgoError> {
        if self.exchange == self.subspace_exchanges() {
            let dk = self.d * self.k;
            return Ok(self
                .moving
                .iter()
                .enumerate()
                .map(|(slot, &a)| {
                    let down = Down::AnchorStep {
                        estimate: self.estimates[a * self.d..(a + 1) * self.d].to_vec(),
                        basis: self.bases[slot * dk..(slot + 1) * dk].to_vec(),
                        iteration: self.iteration,
                    };
                    (self.anchors[a], down)
                })
                .collect());
        }
        if self.exchange == 0 {
            self.start_iteration(rng)?;
        }
        let estimates: Vec<f32> = self
            .moving
            .iter()
            .flat_map(|&a| self.estimates[a * self.d..(a + 1) * self.d].iter().copied())
            .collect();
        let request = match self.cfg.subspace {
            SubspaceSolver::Svd => MomentRequest::Full,
            // Algorithm 3: even steps apply Yᵀ, odd steps Y then a QR; the pair
            // moment is symmetric, so both are `Y Q`.
            SubspaceSolver::Orthogonal { .. } => MomentRequest::Apply {
                bases: Arc::new(self.bases.clone()),
            },
        };
        self.sums.clear();
        self.sums.resize(self.moving.len() * self.matrix_len(), 0.0);
        self.weight = 0.0;
        let down = Down::Moments {
            estimates: Arc::new(estimates),
            request,
        };
        Ok(self
            .subspace_clients
            .iter()
            .map(|&c| (c, down.clone()))
            .collect())
    }

    /// Step 7: the moving anchors and `S_t`; `Q_0` for the orthogonal iteration.
    fn start_iteration(&mut self, rng: &mut Rng) -> Result<(), AlgoError> {
        self.moving = (0..self.anchors.len())
            .filter(|&a| self.active[a])
            .collect();
        let m = self.sizes.len();
        self.subspace_clients = match self.cfg.subspace_clients {
            None => (0..m).collect(),
            Some(count) => {
                let candidates: Vec<ClientId> = (0..m)
                    .filter(|&c| self.anchors.binary_search(&c).is_err())
                    .filter(|&c| !(self.cfg.fresh_data && self.used[c]))
                    .collect();
                if candidates.len() < count {
                    return Err(AlgoError::Protocol(format!(
                        "phase1.subspace_clients: iteration {} needs {count} clients but only {} are left{}",
                        self.iteration,
                        candidates.len(),
                        if self.cfg.fresh_data {
                            " unused (fresh_data)"
                        } else {
                            ""
                        }
                    )));
                }
                let mut chosen: Vec<ClientId> = sample(rng, candidates.len(), count)
                    .into_iter()
                    .map(|i| candidates[i])
                    .collect();
                chosen.sort_unstable();
                chosen
            }
        };
        for &c in &self.subspace_clients {
            self.used[c] = true;
        }
        if let SubspaceSolver::Orthogonal { .. } = self.cfg.subspace {
            self.bases = self
                .moving
                .iter()
                .flat_map(|_| random_orthonormal(self.d, self.k, rng))
                .collect();
        }
        Ok(())
    }

    /// Takes one reply of the current exchange.
    pub fn receive(&mut self, ctx: &RoundCtx, id: ClientId, up: Up) -> Result<(), AlgoError> {
        let malformed = || AlgoError::malformed(ctx.round, id);
        match up {
            Up::Moments { values, samples } if self.exchange < self.subspace_exchanges() => {
                if values.len() != self.sums.len() {
                    return Err(malformed());
                }
                let w = samples as f64;
                add_scaled_f64(w, &values, &mut self.sums);
                self.weight += w;
                Ok(())
            }
            Up::AnchorStep {
                estimate,
                sigma,
                stopped,
            } if self.exchange == self.subspace_exchanges() => {
                let a = self.anchors.binary_search(&id).map_err(|_| malformed())?;
                if estimate.len() != self.d || !self.active[a] {
                    return Err(malformed());
                }
                self.estimates[a * self.d..(a + 1) * self.d].copy_from_slice(&estimate);
                self.sigmas[a] = Some(sigma);
                self.active[a] = !stopped;
                Ok(())
            }
            _ => Err(malformed()),
        }
    }

    /// Ends the exchange: a subspace estimate, or the iteration.
    pub fn finish(&mut self, ctx: &RoundCtx) -> Result<(), AlgoError> {
        if self.exchange == self.subspace_exchanges() {
            self.grouping = group_anchors(
                &self.estimates,
                self.d,
                f64::from(self.cfg.separation) / 2.0,
                self.k,
            );
            self.iteration += 1;
            self.exchange = 0;
            return Ok(());
        }
        if self.weight <= 0.0 {
            return Err(AlgoError::Protocol(format!(
                "round {}: no subspace client with two or more points replied",
                ctx.round
            )));
        }
        let len = self.matrix_len();
        let (d, k) = (self.d, self.k);
        let avg: Vec<f64> = self.sums.iter().map(|s| s / self.weight).collect();
        self.bases = match self.cfg.subspace {
            SubspaceSolver::Svd => avg
                .chunks_exact(len)
                .flat_map(|y| top_left_singular(y, d, k))
                .collect(),
            SubspaceSolver::Orthogonal { .. } if self.exchange % 2 == 1 => avg
                .chunks_exact(len)
                .flat_map(|q| orthonormalize(q, d, k))
                .collect(),
            SubspaceSolver::Orthogonal { .. } => avg.iter().map(|v| *v as f32).collect(),
        };
        self.exchange += 1;
        Ok(())
    }

    /// The basis `Ũ_{i,t}` the last subspace estimate gave anchor slot `a`.
    #[cfg(test)]
    pub fn basis(&self, slot: usize) -> &[f32] {
        let dk = self.d * self.k;
        &self.bases[slot * dk..(slot + 1) * dk]
    }
}
