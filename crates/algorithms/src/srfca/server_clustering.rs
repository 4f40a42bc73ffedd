//! ONE_SHOT, RECLUSTER and MERGE (Algorithms 1, 2, 4) on the SR-FCA server's
//! state: the distances they need, from the local models, the cluster models
//! or the clients' reported losses, handed to the steps in `clustering`, and
//! their result written back as the assignment and the cluster models.

use fedcluster_core::params::{axpy, dist};
use fedcluster_core::{AlgoError, Purpose, stream};

use super::clustering::{merge_with, one_shot_with, recluster, resolve_threshold};
use super::config::{Clustering, Distance};
use super::pivot::Cut;
use super::server::SrFcaServer;

impl SrFcaServer {
    /// Mean over `clients` of `loss(j)`, weighted by their samples (or
    /// unweighted, on the public code's `loss_scale`).
    fn weighted(&self, clients: &[usize], loss: impl Fn(usize) -> f64) -> f64 {
        let (mut sum, mut n) = (0.0, 0.0);
        for &j in clients {
            let w = self.config.loss_scale.weight(self.samples[j]);
            sum += w * loss(j);
            n += w;
        }
        if n > 0.0 { sum / n } else { f64::INFINITY }
    }

    /// Where `round`'s graph is cut: components, or the pivot algorithm on
    /// the stream `(seed, Clustering, round)`.
    fn cut<T>(&self, round: usize, f: impl FnOnce(Cut<'_>) -> T) -> T {
        match self.config.clustering {
            Clustering::Components => f(Cut::Components),
            Clustering::Correlation => f(Cut::Pivot(&mut stream(
                self.seed,
                Purpose::Clustering,
                round as u64,
                0,
            ))),
        }
    }

    /// The distances between the clients' local models, `m x m`.
    fn local_distances(&self) -> Vec<f64> {
        let (m, p) = (self.m, self.p);
        let mut d = vec![0.0f64; m * m];
        for i in 0..m {
            for j in 0..m {
                d[i * m + j] = match self.config.distance {
                    Distance::L2 => dist(
                        &self.local[i * p..(i + 1) * p],
                        &self.local[j * p..(j + 1) * p],
                    ),
                    Distance::CrossLoss => {
                        0.5 * (self.pair_losses[i * m + j] + self.pair_losses[j * m + i])
                    }
                };
            }
        }
        d
    }

    /// ONE_SHOT's graph on the local models: `λ`, the initial clusters, `ω = w_0`.
    pub(super) fn one_shot(&mut self, round: usize) -> Result<(), AlgoError> {
        let m = self.m;
        let d = self.local_distances();
        let lambda = resolve_threshold(self.config.threshold, &d, m);
        let t = self.config.min_size;
        let clusters = self.cut(round, |cut| one_shot_with(cut, &d, m, lambda, t));
        if clusters.is_empty() {
            return Err(AlgoError::Protocol(format!(
                "threshold: ONE_SHOT found no group of at least min_size = {} clients within λ = {lambda:.4}",
                self.config.min_size
            )));
        }
        self.lambda = Some(lambda);
        self.assignment.fill(None);
        for (c, members) in clusters.iter().enumerate() {
            for &i in members {
                self.assignment[i] = Some(c);
            }
        }
        self.models = self.w0.repeat(clusters.len());
        Ok(())
    }

    /// RECLUSTER then MERGE (Algorithms 2 and 4) on the current cluster models.
    pub(super) fn recluster_and_merge(&mut self, round: usize) {
        let (k, p) = (self.clusters(), self.p);
        let before = self.members(k);
        let local = |i: usize| &self.local[i * p..(i + 1) * p];
        let assignment = match self.config.distance {
            Distance::L2 => recluster(self.m, k, |i, c| dist(local(i), self.model(c))),
            Distance::CrossLoss => recluster(self.m, k, |i, c| {
                // ½(f_i(ω_c) + f_c(w_i)); f_c is the loss of c's members.
                let f_c = self.weighted(&before[c], |j| self.pair_losses[j * self.m + i]);
                0.5 * (self.cluster_losses[i * k + c] + f_c)
            }),
        };
        self.assignment = assignment;
        let after = self.members(k);
        let lambda = self.lambda.expect("ONE_SHOT ran");
        let t = self.config.min_size;
        let groups = self.cut(round, |cut| match self.config.distance {
            Distance::L2 => merge_with(cut, &after, lambda, t, |c, d| {
                dist(self.model(c), self.model(d))
            }),
            Distance::CrossLoss => merge_with(cut, &after, lambda, t, |c, d| {
                let f_c = self.weighted(&after[c], |j| self.cluster_losses[j * k + d]);
                let f_d = self.weighted(&after[d], |j| self.cluster_losses[j * k + c]);
                0.5 * (f_c + f_d)
            }),
        });
        let mut models = vec![0.0f32; groups.len() * p];
        let mut new_of_old = vec![None; k];
        for (g, group) in groups.iter().enumerate() {
            let out = &mut models[g * p..(g + 1) * p];
            for &c in group {
                new_of_old[c] = Some(g);
                axpy(1.0 / group.len() as f32, self.model(c), out);
            }
        }
        for a in &mut self.assignment {
            *a = a.and_then(|c| new_of_old[c]);
        }
        self.models = models;
    }
}
