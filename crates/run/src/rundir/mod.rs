//! The run directory: `config.toml` (resolved), `metrics.csv` (a row per round of
//! the selected replica), `replicas.csv` (every replica, when there are several),
//! `timing.csv` (seconds and bytes per round), `summary.json` and `curves.svg`
//! (the training curves, [`curves`]). docs/metrics.md defines every column and
//! field. [`RUN_FILES`] lists every file a run directory may hold, these and the
//! ones other writers add: `models.safetensors` ([`crate::model_file`]),
//! `replies.csv` (`fedcluster serve`), `diverged.txt` (the reproduction
//! harness), `error.txt` ([`RunDir::fail`]) and `checkpoint.bin` with its
//! temporary `checkpoint.bin.tmp` ([`crate::checkpoint`], removed by
//! [`RunDir::finish`]).
//!
//! Files are written into `DIR.partial` and the directory is renamed to `DIR`
//! only once everything is on disk, so a directory named `DIR` is always
//! complete. `metrics.csv` holds no timings, so it is byte-identical for the same
//! config and seed whatever the thread count (and so is `curves.svg`, drawn
//! from it).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use serde::{Deserialize, Serialize};

use fedcluster_sim::record::RoundRecord;

pub mod best;
pub mod curves;
pub mod target;
use best::{Better, best_round};
pub use curves::{CURVES_FILE, curves_svg};
pub use target::{CONFIG_FILE, DirLock, RUN_FILES, check_target, normalise, sibling};

use fedcluster_core::limits::MAX_MODEL_VALUES;

use crate::checkpoint::{CHECKPOINT_FILE, CHECKPOINT_TMP, PART_FILE, PART_TMP};
use crate::config::RunConfig;
use crate::model_file::{self, MODELS_FILE};
use crate::outcome::Outcome;

/// Final metrics of the selected replica.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Final {
    /// Training loss in the last round.
    pub train_loss: Option<f64>,
    /// Parameter error against the true parameters (synthetic data).
    pub param_error: Option<f64>,
    /// Fraction of misclustered training clients.
    pub misclustering: Option<f64>,
    /// Test accuracy (classification).
    pub test_accuracy: Option<f64>,
    /// Test loss.
    pub test_loss: Option<f64>,
    /// Fraction of test clients that picked another cluster's model.
    pub test_misclustering: Option<f64>,
    /// Number of cluster models (clustered algorithms).
    pub clusters_found: Option<usize>,
    /// Misclustering with each found cluster labelled by its majority true cluster.
    pub majority_misclustering: Option<f64>,
    /// Adjusted Rand index of the clustering against the truth.
    #[serde(default)]
    pub ari: Option<f64>,
    /// Normalised mutual information of the clustering against the truth.
    #[serde(default)]
    pub nmi: Option<f64>,
}

/// Final metrics of one replica.
#[derive(Debug, Serialize, Deserialize)]
pub struct ReplicaSummary {
    /// Replica index.
    pub replica: usize,
    /// Training loss in the last round.
    pub train_loss: Option<f64>,
    /// Parameter error.
    pub param_error: Option<f64>,
    /// Misclustering.
    pub misclustering: Option<f64>,
    /// Whether it diverged.
    pub diverged: bool,
}

/// `summary.json` (read back by the reproduction harness).
#[derive(Debug, Serialize, Deserialize)]
pub struct Summary {
    /// Algorithm name.
    pub algorithm: String,
    /// Config name, if any.
    pub name: Option<String>,
    /// Run seed.
    pub seed: u64,
    /// Rounds run.
    pub rounds: usize,
    /// Worker threads that ran the client halves in this process (the
    /// request resolved: `threads_requested`, or one per core for 0); `null`
    /// when the client halves ran elsewhere (`fedcluster serve`, a run whose
    /// messages a host carries: `fedcluster.Server`, the Flower strategies).
    pub threads: Option<usize>,
    /// The config's `threads` (0: one per core).
    #[serde(default)]
    pub threads_requested: usize,
    /// Wall-clock seconds of the federated rounds.
    pub wall_seconds: f64,
    /// Mean seconds per round.
    pub seconds_per_round: f64,
    /// Total bytes sent down.
    pub bytes_down: u64,
    /// Total bytes sent up.
    pub bytes_up: u64,
    /// The replica the algorithm selected.
    pub selected_replica: usize,
    /// Final metrics of the selected replica.
    #[serde(rename = "final")]
    pub final_: Final,
    /// The selected replica's highest test accuracy over the rounds
    /// evaluated (`null` where none was).
    #[serde(default)]
    pub best_test_accuracy: Option<f64>,
    /// The round (from 0) where `best_test_accuracy` was first reached.
    #[serde(default)]
    pub best_test_accuracy_round: Option<usize>,
    /// The selected replica's lowest test loss over the rounds evaluated.
    #[serde(default)]
    pub best_test_loss: Option<f64>,
    /// The round (from 0) where `best_test_loss` was first reached.
    #[serde(default)]
    pub best_test_loss_round: Option<usize>,
    /// Final metrics of every replica.
    pub replicas: Vec<ReplicaSummary>,
    /// The metrics the data set cannot give (left empty in `metrics.csv`),
    /// each with why: no test clients, no true clusters, no true parameters.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub metrics_absent: BTreeMap<String, String>,
}

impl Summary {
    /// The summary of `outcome`.
    pub fn new(config: &RunConfig, outcome: &Outcome) -> Self {
        let selected: Vec<&RoundRecord> = outcome
            .records
            .iter()
            .filter(|r| r.replica == outcome.selected)
            .collect();
        let last = selected.last();
        let rounds = selected.len();
        let best_accuracy = best_round(
            selected.iter().copied(),
            |r| r.test_accuracy,
            Better::Higher,
        );
        let best_loss = best_round(selected.iter().copied(), |r| r.test_loss, Better::Lower);
        Self {
            algorithm: config.algorithm.name().to_string(),
            name: config.name.clone(),
            seed: config.seed,
            rounds,
            threads: outcome.threads,
            threads_requested: config.threads,
            wall_seconds: outcome.wall_seconds,
            seconds_per_round: outcome.wall_seconds / rounds.max(1) as f64,
            bytes_down: selected.iter().map(|r| r.bytes_down).sum(),
            bytes_up: selected.iter().map(|r| r.bytes_up).sum(),
            selected_replica: outcome.selected,
            final_: Final {
                train_loss: last.and_then(|r| r.train_loss),
                param_error: last.and_then(|r| r.param_error),
                misclustering: last.and_then(|r| r.misclustering),
                test_accuracy: last.and_then(|r| r.test_accuracy),
                test_loss: last.and_then(|r| r.test_loss),
                test_misclustering: last.and_then(|r| r.test_misclustering),
                clusters_found: last.and_then(|r| r.clusters_found),
                majority_misclustering: last.and_then(|r| r.majority_misclustering),
                ari: last.and_then(|r| r.ari),
                nmi: last.and_then(|r| r.nmi),
            },
            best_test_accuracy: best_accuracy.map(|b| b.value),
            best_test_accuracy_round: best_accuracy.map(|b| b.round),
            best_test_loss: best_loss.map(|b| b.value),
            best_test_loss_round: best_loss.map(|b| b.round),
            replicas: outcome
                .final_records()
                .into_iter()
                .map(|r| ReplicaSummary {
                    replica: r.replica,
                    train_loss: r.train_loss,
                    param_error: r.param_error,
                    misclustering: r.misclustering,
                    diverged: r.diverged,
                })
                .collect(),
            metrics_absent: outcome.metrics_absent.clone(),
        }
    }
}

fn opt(v: Option<f64>) -> String {
    v.map(|x| x.to_string()).unwrap_or_default()
}

/// `metrics.csv` text for the given records (no timings).
pub fn metrics_csv<'a>(
    records: impl IntoIterator<Item = &'a RoundRecord>,
    with_replica: bool,
) -> String {
    let mut out = String::new();
    if with_replica {
        out.push_str("replica,");
    }
    out.push_str("round,train_loss,param_error,misclustering,majority_misclustering,clusters_found,test_loss,test_accuracy,test_misclustering,round_misclustering,ari,nmi,participants,bytes_down,bytes_up,diverged\n");
    for r in records {
        if with_replica {
            let _ = write!(out, "{},", r.replica);
        }
        let _ = writeln!(
            out,
            "{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}",
            r.round,
            opt(r.train_loss),
            opt(r.param_error),
            opt(r.misclustering),
            opt(r.majority_misclustering),
            r.clusters_found.map(|c| c.to_string()).unwrap_or_default(),
            opt(r.test_loss),
            opt(r.test_accuracy),
            opt(r.test_misclustering),
            opt(r.round_misclustering),
            opt(r.ari),
            opt(r.nmi),
            r.participants,
            r.bytes_down,
            r.bytes_up,
            r.diverged
        );
    }
    out
}

/// The first free `runs/<stem>[-N]`.
pub fn free_run_dir(stem: &str) -> PathBuf {
    let base = PathBuf::from("runs").join(stem);
    (1..)
        .map(|i| {
            if i == 1 {
                base.clone()
            } else {
                PathBuf::from(format!("{}-{i}", base.display()))
            }
        })
        .find(|p| !p.exists())
        .expect("an unused name")
}

/// A run directory being written: its target checked and locked, its files
/// going into `DIR.partial`.
pub struct RunDir {
    target: PathBuf,
    partial: PathBuf,
    _lock: DirLock,
}

/// A run directory's target, checked and locked, before anything is written:
/// a run reserves its `--out` first and creates the directory only once the
/// run is ready to start, so a config that cannot run leaves nothing behind.
pub struct Reserved {
    target: PathBuf,
    lock: DirLock,
    overwrite: bool,
    resume: bool,
}

impl RunDir {
    /// Checks `target` (see [`target`]: it must be new or empty, or with
    /// `overwrite` a run directory) and takes its lock.
    pub fn reserve(target: &Path, overwrite: bool) -> Result<Reserved> {
        Self::reserve_to_resume(target, overwrite, false)
    }

    /// [`RunDir::reserve`]; with `resume`, the run continues from the
    /// checkpoint in `DIR.partial` (and `DIR` must not be complete already).
    pub fn reserve_to_resume(target: &Path, overwrite: bool, resume: bool) -> Result<Reserved> {
        let normal = normalise(target)?;
        if resume && normal.exists() && !sibling(&normal, "partial").exists() {
            bail!(
                "{} is complete: there is nothing to resume",
                normal.display()
            );
        }
        let target = check_target(target, overwrite)?;
        let lock = DirLock::take(&target)?;
        // Checked again under the lock: another process may have written it.
        let target = check_target(&target, overwrite)?;
        Ok(Reserved {
            target,
            lock,
            overwrite,
            resume,
        })
    }

    /// [`RunDir::reserve`] then [`Reserved::create`].
    pub fn create(target: &Path, overwrite: bool) -> Result<Self> {
        Self::reserve(target, overwrite)?.create()
    }

    /// The partial directory being written.
    pub fn partial(&self) -> &Path {
        &self.partial
    }

    /// Writes a file into the partial directory.
    pub fn write(&self, name: &str, contents: &str) -> Result<()> {
        self.write_bytes(name, contents.as_bytes())
    }

    /// Writes a binary file into the partial directory.
    pub fn write_bytes(&self, name: &str, contents: &[u8]) -> Result<()> {
        debug_assert!(
            RUN_FILES.contains(&name),
            "{name} is not listed in RUN_FILES"
        );
        let path = self.partial.join(name);
        fs::write(&path, contents).with_context(|| format!("cannot write {}", path.display()))
    }

    /// Records a failure in the partial directory (which keeps its `.partial`
    /// name, so it never looks complete) and returns its path.
    pub fn fail(self, error: &anyhow::Error) -> PathBuf {
        let _ = fs::write(self.partial.join("error.txt"), format!("{error:#}\n"));
        self.partial.clone()
    }

    /// Moves the finished directory into place (replacing the run directory
    /// there, checked again now).
    pub fn finish(self) -> Result<PathBuf> {
        for name in [CHECKPOINT_FILE, CHECKPOINT_TMP, PART_FILE, PART_TMP] {
            let path = self.partial.join(name);
            if path.exists() {
                fs::remove_file(&path)
                    .with_context(|| format!("cannot remove {}", path.display()))?;
            }
        }
        if self.target.exists() {
            target::check_replaceable(&self.target)?;
            fs::remove_dir_all(&self.target)
                .with_context(|| format!("cannot replace {}", self.target.display()))?;
        }
        fs::rename(&self.partial, &self.target).with_context(|| {
            format!(
                "cannot move {} to {}",
                self.partial.display(),
                self.target.display()
            )
        })?;
        Ok(self.target.clone())
    }
}

impl Reserved {
    /// Runs `work` into this target. `work` is handed a `ready` callback to
    /// call just before its first round, which creates `DIR.partial`; then
    /// `write` writes the finished run's files there and the directory is
    /// renamed to `DIR`. A failure before `ready` leaves nothing behind; a
    /// failure after it leaves `DIR.partial/error.txt` and is returned with
    /// the partial directory named.
    pub fn run_into<T, S>(
        self,
        work: impl FnOnce(&mut dyn FnMut() -> Result<()>) -> Result<T>,
        write: impl FnOnce(&RunDir, T) -> Result<S>,
    ) -> Result<(S, PathBuf)> {
        let mut reserved = Some(self);
        let mut dir = None;
        let result = work(&mut || {
            let reserved = reserved.take().context("the run started twice")?;
            dir = Some(reserved.create()?);
            Ok(())
        });
        let Some(dir) = dir else {
            // The run never started: nothing was written.
            return Err(result
                .err()
                .unwrap_or_else(|| anyhow::anyhow!("the run did not start")));
        };
        match result.and_then(|done| write(&dir, done)) {
            Ok(s) => Ok((s, dir.finish()?)),
            Err(e) => {
                let partial = dir.fail(&e);
                Err(e.context(format!("incomplete run left in {}", partial.display())))
            }
        }
    }

    /// The normalised target.
    pub fn path(&self) -> &Path {
        &self.target
    }

    /// Creates `DIR.partial`, clearing one left by a killed run (only when it
    /// holds nothing but run files).
    pub fn create(self) -> Result<RunDir> {
        let partial = sibling(&self.target, "partial");
        let checkpointed = partial.join(CHECKPOINT_FILE).exists();
        if self.resume && checkpointed {
            return Ok(RunDir {
                target: self.target,
                partial,
                _lock: self.lock,
            });
        }
        if checkpointed && !self.overwrite {
            bail!(
                "{} holds the checkpoint of an interrupted run: pass --resume to continue it \
                 or --overwrite to start over",
                partial.display()
            );
        }
        if partial.exists() {
            target::check_replaceable(&partial)?;
            fs::remove_dir_all(&partial)
                .with_context(|| format!("cannot clear {}", partial.display()))?;
        }
        fs::create_dir_all(&partial)
            .with_context(|| format!("cannot create {}", partial.display()))?;
        Ok(RunDir {
            target: self.target,
            partial,
            _lock: self.lock,
        })
    }
}

/// The optional files of a run directory.
#[derive(Debug, Clone, Copy)]
pub struct Extras {
    /// `replicas.csv`: every replica's rounds (written when there are several).
    pub replicas: bool,
    /// `models.safetensors`: the final models (written unless there are more
    /// values than a server may hold).
    pub models: bool,
    /// `metrics.csv` and `timing.csv` hold the last round only (the summary
    /// still counts every round): for grids read off final numbers.
    pub last_round_only: bool,
    /// `curves.svg`: the training curves of `metrics.csv`'s rows.
    pub curves: bool,
}

impl Extras {
    /// Every optional file (`fedcluster run` and `serve`).
    pub const ALL: Self = Self {
        replicas: true,
        models: true,
        last_round_only: false,
        curves: true,
    };
}

/// Writes every file of a finished run, and the `extras` asked for.
pub fn write_run(
    dir: &RunDir,
    config: &RunConfig,
    outcome: &Outcome,
    extras: Extras,
) -> Result<Summary> {
    dir.write(CONFIG_FILE, &config.to_toml()?)?;
    let last_round = outcome.records.last().map_or(0, |r| r.round);
    let kept = |r: &&RoundRecord| {
        r.replica == outcome.selected && (!extras.last_round_only || r.round == last_round)
    };
    let rows: Vec<&RoundRecord> = outcome.records.iter().filter(kept).collect();
    dir.write("metrics.csv", &metrics_csv(rows.iter().copied(), false))?;
    if extras.curves {
        let name = config.name.as_deref().unwrap_or(config.algorithm.name());
        dir.write(CURVES_FILE, &curves_svg(name, &rows)?)?;
    }
    if extras.replicas && outcome.replicas > 1 {
        dir.write("replicas.csv", &metrics_csv(&outcome.records, true))?;
    }
    let mut timing = String::from("round,seconds,bytes_down,bytes_up\n");
    for r in &rows {
        let _ = writeln!(
            timing,
            "{},{},{},{}",
            r.round, r.seconds, r.bytes_down, r.bytes_up
        );
    }
    dir.write("timing.csv", &timing)?;
    let values: usize = outcome.models.iter().map(Vec::len).sum();
    if extras.models && !outcome.models.is_empty() && values as u128 <= MAX_MODEL_VALUES {
        let (name, tensors) = &outcome.model;
        dir.write_bytes(
            MODELS_FILE,
            &model_file::encode(name, tensors, &outcome.models)?,
        )?;
    }
    let summary = Summary::new(config, outcome);
    dir.write(
        "summary.json",
        &(serde_json::to_string_pretty(&summary)? + "\n"),
    )?;
    Ok(summary)
}
