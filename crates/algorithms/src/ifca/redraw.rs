//! IFCA's initialisation redrawn until every cluster holds a minimum share of
//! the clients (`min_share`): after a replica's first round, if some cluster
//! was chosen by fewer than `min_share` of the round's participants, the
//! round's update of that replica is dropped and it starts again from the next
//! of `max_redraws` candidate initialisations, drawn when the server is built
//! (stream `(seed, Init, restart, 1 + j)`; the first draw stays `(.., 0)`, so
//! the option off changes nothing). Once every cluster holds its share, or the
//! candidates run out, the replica trains on as IFCA does.

use fedcluster_core::{Model, Purpose, stream};

use super::config::Config;

/// Candidate initialisations per replica when `min_share` is on.
pub const MAX_REDRAWS: usize = 10;

/// The redraw state of every replica.
#[derive(Debug, Default, serde::Serialize, serde::Deserialize)]
pub struct Redraws {
    /// The share each cluster must hold.
    min_share: f64,
    /// Per replica: its unused candidates (`k x p` values each), next first.
    candidates: Vec<Vec<Vec<f32>>>,
    /// Per replica: whether its clusters are still being checked.
    checking: Vec<bool>,
    /// Per replica: how many times it was redrawn.
    redrawn: Vec<usize>,
}

impl Redraws {
    /// The candidates of every replica of `config` (`None` when `min_share`
    /// is 0, the default).
    pub fn new(config: &Config, model: &dyn Model, seed: u64) -> Option<Self> {
        if config.min_share <= 0.0 {
            return None;
        }
        let (k, p) = (config.clusters, model.num_params());
        let candidates = (0..config.replicas())
            .map(|r| {
                let restart = (r % config.restarts) as u64;
                (1..=MAX_REDRAWS as u64)
                    .rev()
                    .map(|j| {
                        let mut rng = stream(seed, Purpose::Init, restart, j);
                        let mut models = vec![0.0; k * p];
                        for m in models.chunks_exact_mut(p) {
                            config.init.fill(model, &mut rng, m);
                        }
                        models
                    })
                    .collect()
            })
            .collect::<Vec<Vec<Vec<f32>>>>();
        let replicas = candidates.len();
        Some(Self {
            min_share: config.min_share,
            candidates,
            checking: vec![true; replicas],
            redrawn: vec![0; replicas],
        })
    }

    /// Whether replica `r`'s clusters are still checked this round.
    pub fn checking(&self, r: usize) -> bool {
        self.checking.get(r).copied().unwrap_or(false)
    }

    /// After a round in which the clusters of replica `r` were chosen
    /// `counts` times by `participants` clients: the models to start again
    /// from when a cluster fell short of its share, else `None` (and the
    /// replica is no longer checked).
    pub fn after_round(
        &mut self,
        r: usize,
        counts: &[usize],
        participants: usize,
    ) -> Option<Vec<f32>> {
        if !self.checking(r) {
            return None;
        }
        let needed = self.min_share * participants as f64;
        let short = counts.iter().any(|&c| (c as f64) < needed);
        let next = if short {
            self.candidates[r].pop()
        } else {
            None
        };
        match next {
            Some(models) => {
                self.redrawn[r] += 1;
                Some(models)
            }
            None => {
                self.checking[r] = false;
                self.candidates[r] = Vec::new();
                None
            }
        }
    }

    /// How many times replica `r` was redrawn.
    pub fn redrawn(&self, r: usize) -> usize {
        self.redrawn.get(r).copied().unwrap_or(0)
    }
}
