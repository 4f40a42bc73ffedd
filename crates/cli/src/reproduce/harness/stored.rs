//! A finished run of the grid as saved in the output directory, and the
//! numbers read off it. Each run is a run directory
//! (`runs/<setting>/<method>/seed-<s>/`, written as `fedcluster run` writes
//! one, `.partial` until complete), or, when training diverged, a directory
//! holding its `config.toml` and `diverged.txt`.

use std::fs;
use std::path::Path;

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

use fedcluster_sim::record::RoundRecord;

use super::spec::{Field, Metric};
use fedcluster_run::config::{DataConfig, RunConfig};
use fedcluster_run::outcome::Outcome;
use fedcluster_run::rundir::{Extras, Final, RunDir, Summary, write_run};
use fedcluster_run::whole_file::write_whole;

/// The file marking a run whose training diverged.
const DIVERGED: &str = "diverged.txt";

/// What a finished run left.
pub struct Finished {
    /// Its config.
    pub config: RunConfig,
    /// The selected replica's record of every round (`metrics.csv`, with the
    /// seconds of `timing.csv`).
    pub records: Vec<RoundRecord>,
    /// `summary.json` (`None` when training diverged).
    pub summary: Option<Summary>,
}

/// Saves a finished run into `dir` (through `.partial`, so a run killed while
/// saving is not taken as finished); with `last_round_only`, its per-round
/// files hold the last round only.
pub fn save(
    dir: &Path,
    config: &RunConfig,
    outcome: Result<&Outcome, &str>,
    last_round_only: bool,
) -> Result<()> {
    let run = RunDir::create(dir, false)?;
    match outcome {
        Ok(outcome) => {
            write_run(
                &run,
                config,
                outcome,
                Extras {
                    replicas: false,
                    models: false,
                    last_round_only,
                    curves: false,
                },
            )?;
        }
        Err(why) => {
            run.write("config.toml", &config.to_toml()?)?;
            run.write(DIVERGED, &format!("{why}\n"))?;
        }
    }
    run.finish()?;
    Ok(())
}

/// Whether `dir` holds a finished run (a run killed while saving left only
/// `dir.partial`).
pub fn is_finished(dir: &Path) -> bool {
    dir.join("config.toml").is_file()
}

/// The finished run saved in `dir`.
pub fn load(dir: &Path) -> Result<Finished> {
    let context = || format!("cannot read the finished run in {}", dir.display());
    let config = RunConfig::load(&dir.join("config.toml"), &[]).with_context(context)?;
    if dir.join(DIVERGED).is_file() {
        return Ok(Finished {
            config,
            records: Vec::new(),
            summary: None,
        });
    }
    let text = fs::read_to_string(dir.join("summary.json")).with_context(context)?;
    let summary: Summary = serde_json::from_str(&text).with_context(context)?;
    let mut records = read_csv::<RoundRecord>(&dir.join("metrics.csv")).with_context(context)?;
    let timing = read_csv::<TimingRow>(&dir.join("timing.csv")).with_context(context)?;
    for (r, t) in records.iter_mut().zip(timing) {
        r.replica = summary.selected_replica;
        r.seconds = t.seconds;
    }
    Ok(Finished {
        config,
        records,
        summary: Some(summary),
    })
}

fn read_csv<T: serde::de::DeserializeOwned>(path: &Path) -> Result<Vec<T>> {
    let mut reader =
        csv::Reader::from_path(path).with_context(|| format!("cannot open {}", path.display()))?;
    reader
        .deserialize()
        .collect::<Result<_, _>>()
        .with_context(|| format!("malformed {}", path.display()))
}

/// A row of `timing.csv`.
#[derive(Deserialize)]
struct TimingRow {
    seconds: f64,
}

impl Finished {
    /// `field` after round `round` (counted from 1).
    fn at_round(&self, field: Field, round: usize) -> Option<f64> {
        let r = self.records.iter().find(|r| r.round + 1 == round)?;
        field.of(r)
    }

    /// Whether training diverged.
    pub fn diverged(&self) -> bool {
        self.summary.is_none()
    }

    /// `metric`'s value for this run (`None` where it does not apply).
    pub fn value(&self, metric: Metric) -> Option<f64> {
        match metric {
            Metric::Final(field) => self.records.last().and_then(|r| field.of(r)),
            Metric::AtEval(field, i) => self.at_round(field, *self.config.eval_at.get(i)?),
            Metric::AtRound(field, round) => self.at_round(field, round),
            Metric::BestReplica(field) => self.best_replica(field),
            Metric::MeanOverLast(field, last) => {
                let tail = &self.records[self.records.len().saturating_sub(last)..];
                let values: Vec<f64> = tail.iter().filter_map(|r| field.of(r)).collect();
                (!values.is_empty()).then(|| values.iter().sum::<f64>() / values.len() as f64)
            }
            Metric::IfcaSuccess { slack } => {
                let DataConfig::IfcaSynthetic(spec) = &self.config.data else {
                    return None;
                };
                let best = self
                    .best_replica(Field::ParamError)
                    .unwrap_or(f64::INFINITY);
                Some(f64::from(u8::from(best < 0.6 * spec.noise_std + slack)))
            }
            Metric::MsPerRound { last } => {
                let tail = &self.records[self.records.len().saturating_sub(last)..];
                let seconds: f64 = tail.iter().map(|r| r.seconds).sum();
                (!tail.is_empty()).then(|| 1e3 * seconds / tail.len() as f64)
            }
            Metric::Seconds => self.summary.as_ref().map(|s| s.wall_seconds),
        }
    }

    /// The lowest final `field` among the replicas that did not diverge.
    fn best_replica(&self, field: Field) -> Option<f64> {
        let replicas = &self.summary.as_ref()?.replicas;
        replicas
            .iter()
            .filter(|r| !r.diverged)
            .filter_map(|r| match field {
                Field::ParamError => r.param_error,
                Field::TrainLoss => r.train_loss,
                Field::Misclustering => r.misclustering,
                _ => None,
            })
            .min_by(f64::total_cmp)
    }

    /// The row of `results.csv`: which run, then its final numbers.
    pub fn result_row(&self, key: RunKey) -> (RunKey, ResultExtra, Final) {
        let extra = ResultExtra {
            diverged: self.diverged(),
            best_param_error: self.best_replica(Field::ParamError),
            seconds: self.value(Metric::Seconds),
        };
        let last = self.summary.as_ref().map(|s| s.final_.clone());
        (key, extra, last.unwrap_or_default())
    }
}

/// Which run a row of `results.csv` or `curves.csv` belongs to.
#[derive(Debug, Clone, Serialize)]
pub struct RunKey {
    /// The setting's key.
    pub setting: String,
    /// The method's key.
    pub method: String,
    /// The seed number.
    pub seed: u64,
}

/// What `results.csv` adds to a run's final metrics.
#[derive(Serialize)]
pub struct ResultExtra {
    diverged: bool,
    best_param_error: Option<f64>,
    seconds: Option<f64>,
}

/// Writes `rows` to `path` through serde, whole or not at all.
pub fn write_csv<T: Serialize>(path: &Path, rows: impl IntoIterator<Item = T>) -> Result<()> {
    let mut writer = csv::Writer::from_writer(Vec::new());
    for row in rows {
        writer.serialize(row)?;
    }
    let bytes = writer
        .into_inner()
        .map_err(|e| anyhow::anyhow!("cannot write {}: {}", path.display(), e.error()))?;
    write_whole(path, &bytes)
}
