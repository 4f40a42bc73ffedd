//! The SR-FCA server's moves between the protocol's stages when a round
//! finishes: ONE_SHOT's local training and pair losses, the REFINE steps, then
//! the final training or ONE_SHOT-IFCA.

use fedcluster_core::AlgoError;
use fedcluster_core::params::axpy;

use super::config::{AfterOneShot, Distance};
use super::server::{SrFcaServer, Stage};

impl SrFcaServer {
    /// The end of round `round` (its replies all received): this stage's
    /// server step, then the next stage.
    pub(super) fn advance(&mut self, round: usize) -> Result<(), AlgoError> {
        match self.stage {
            Stage::Local if self.local_part + 1 < self.config.local_rounds => self.local_part += 1,
            Stage::Local => match self.config.distance {
                Distance::L2 => {
                    self.one_shot(round)?;
                    self.after_one_shot();
                }
                Distance::CrossLoss => self.stage = Stage::PairLosses,
            },
            Stage::PairLosses => {
                self.one_shot(round)?;
                self.after_one_shot();
            }
            // Resampling: the new local models (and their pair losses) replace
            // ONE_SHOT's in RECLUSTER; the clusters and λ stay.
            Stage::RefineLocal { refine } => {
                self.stage = match self.config.distance {
                    Distance::L2 => Stage::Train { refine, round: 0 },
                    Distance::CrossLoss => Stage::RefinePairLosses { refine },
                }
            }
            Stage::RefinePairLosses { refine } => self.stage = Stage::Train { refine, round: 0 },
            Stage::Evaluate { refine } => {
                self.recluster_and_merge(round);
                self.start_refine(refine + 1);
            }
            Stage::Train { .. } => {
                self.trimmed_mean_step()?;
                self.after_training_round(round);
            }
            Stage::Final => self.trimmed_mean_step()?,
            Stage::Ifca => self.sums.finish(&mut self.models),
        }
        Ok(())
    }

    /// After ONE_SHOT: REFINE, or IFCA from the clusters' mean local models.
    fn after_one_shot(&mut self) {
        match self.config.then {
            AfterOneShot::Refine => self.start_refine(0),
            AfterOneShot::Ifca { .. } => {
                let (k, p) = (self.clusters(), self.p);
                let mut models = vec![0.0f32; k * p];
                for (c, members) in self.members(k).iter().enumerate() {
                    for &i in members {
                        axpy(
                            1.0 / members.len() as f32,
                            &self.local[i * p..(i + 1) * p],
                            &mut models[c * p..(c + 1) * p],
                        );
                    }
                }
                self.models = models;
                self.stage = Stage::Ifca;
            }
        }
    }

    /// Starts REFINE `refine` (TrimmedMeanGD from `w_0`, reset when its first
    /// round is planned, so that snapshots until then show the last REFINE's
    /// merged models), or the final training.
    fn start_refine(&mut self, refine: usize) {
        if refine == self.config.refine_steps {
            self.stage = Stage::Final;
        } else if self.config.resample {
            self.stage = Stage::RefineLocal { refine };
        } else {
            self.stage = Stage::Train { refine, round: 0 };
        }
    }

    /// After a TrimmedMeanGD round of REFINE: the next round, or (after the
    /// last) the cross-loss evaluation round, or RECLUSTER and MERGE.
    fn after_training_round(&mut self, ctx_round: usize) {
        let Stage::Train { refine, round } = self.stage else {
            return;
        };
        if round + 1 < self.config.refine_rounds {
            self.stage = Stage::Train {
                refine,
                round: round + 1,
            };
        } else if self.config.distance == Distance::CrossLoss {
            self.stage = Stage::Evaluate { refine };
        } else {
            self.recluster_and_merge(ctx_round);
            self.start_refine(refine + 1);
        }
    }
}
