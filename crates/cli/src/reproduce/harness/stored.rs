//! A finished run of the grid as saved in the output directory, and the
//! numbers read off it. Each run is a run directory
//! (`runs/<setting>/<method>/seed-<s>/`, written as `fedcluster run` writes
//! one, `.partial` until complete), or, when training diverged, a directory
//! holding its `config.toml` and `diverged.txt`. Either holds
//! `checksums.sha256` ([`seal_dir`]): the SHA-256 of every other file, under
//! the identity of the cell it belongs to (setting, method and seed), checked
//! before a number is read off it ([`check_seal`]).

use std::fs;
use std::path::Path;

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

use fedcluster_sim::record::RoundRecord;

use super::spec::{Field, Metric};
use fedcluster_run::config::{DataConfig, RunConfig};
use fedcluster_run::fork::FORKED_FROM_FILE;
use fedcluster_run::outcome::Outcome;
use fedcluster_run::rundir::{CONFIG_FILE, Extras, Final, RunDir, Summary, write_run};
use fedcluster_run::whole_file::write_whole;
use fedcluster_state::{digest_hex, read_bounded, read_string_bounded};

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
/// files hold the last round only; a forked run keeps the note its
/// checkpoint directory `checkpoints` holds of where it forked from.
pub fn save(
    dir: &Path,
    config: &RunConfig,
    outcome: Result<&Outcome, &str>,
    last_round_only: bool,
    checkpoints: Option<&Path>,
) -> Result<()> {
    let run = RunDir::create(dir, false)?;
    if let Some(note) = checkpoints.map(|c| c.join(FORKED_FROM_FILE))
        && note.is_file()
    {
        run.write(
            FORKED_FROM_FILE,
            &read_string_bounded(&note, "fork note", 1 << 16)?,
        )?;
    }
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
            run.write(CONFIG_FILE, &config.to_toml()?)?;
            run.write(DIVERGED, &format!("{why}\n"))?;
        }
    }
    run.write(CHECKSUMS, &seal_dir(run.partial(), &identity(dir))?)?;
    run.finish()?;
    Ok(())
}

/// Whether `dir` holds a finished run (a run killed while saving left only
/// `dir.partial`).
pub fn is_finished(dir: &Path) -> bool {
    dir.join(CONFIG_FILE).is_file()
}

/// The finished run saved in `dir`.
pub fn load(dir: &Path) -> Result<Finished> {
    let context = || format!("cannot read the finished run in {}", dir.display());
    check_seal(dir, &identity(dir))?;
    let config = RunConfig::load(&dir.join(CONFIG_FILE), &[]).with_context(context)?;
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

/// The list of checksums in a finished run's directory.
const CHECKSUMS: &str = "checksums.sha256";
/// The largest file of a finished run that is checked (4 GiB).
const MAX_RUN_FILE_BYTES: u64 = 1 << 32;

/// What a finished run in `dir` belongs to: its cell, from the last three
/// parts of `runs/<setting>/<method>/seed-<s>` (so two runs swapped are
/// refused).
fn identity(dir: &Path) -> String {
    let parts: Vec<_> = dir.iter().map(|p| p.to_string_lossy()).collect();
    let cell = parts[parts.len().saturating_sub(3)..].join("/");
    format!("fedcluster reproduction run v1; {cell}")
}

/// `checksums.sha256` of the files in `dir`: a `# identity` line, then
/// `<SHA-256>  <name>` per file, sorted by name.
fn seal_dir(dir: &Path, identity: &str) -> Result<String> {
    let mut names: Vec<String> = fs::read_dir(dir)
        .with_context(|| format!("cannot list {}", dir.display()))?
        .map(|e| Ok(e?.file_name().to_string_lossy().into_owned()))
        .collect::<std::io::Result<_>>()
        .with_context(|| format!("cannot list {}", dir.display()))?;
    names.retain(|n| n != CHECKSUMS);
    names.sort();
    let mut out = format!("# {identity}\n");
    for name in names {
        let bytes = read_bounded(&dir.join(&name), "finished run's file", MAX_RUN_FILE_BYTES)?;
        out.push_str(&format!("{}  {name}\n", digest_hex(&bytes)));
    }
    Ok(out)
}

/// Fails unless `dir` holds exactly the files its `checksums.sha256` lists,
/// each with its checksum, under `identity`. A run saved before runs carried
/// checksums (no `checksums.sha256`) is read as it is, with a warning (once).
fn check_seal(dir: &Path, identity: &str) -> Result<()> {
    let path = dir.join(CHECKSUMS);
    let listed = match read_string_bounded(&path, "checksum list", 1 << 20) {
        Ok(text) => text,
        Err(e) if e.is_missing() => {
            // Said once per process: a grid of older runs would repeat it.
            static SAID: std::sync::Once = std::sync::Once::new();
            SAID.call_once(|| {
                eprintln!(
                    "warning: finished runs saved without checksums (by an older fedcluster) \
                     are read unchecked, {} among them",
                    dir.display()
                );
            });
            return Ok(());
        }
        Err(e) => return Err(e.into()),
    };
    let again = || format!("remove {} to run it again", dir.display());
    let mut lines = listed.lines();
    let found = lines
        .next()
        .and_then(|l| l.strip_prefix("# "))
        .unwrap_or("");
    anyhow::ensure!(
        found == identity,
        "{}: this finished run belongs to `{found}`, not to `{identity}`; {}",
        path.display(),
        again()
    );
    let mut names = Vec::new();
    for line in lines {
        let (sum, name) = line
            .split_once("  ")
            .filter(|(_, n)| !n.contains('/') && !n.starts_with('.'))
            .with_context(|| format!("{}: damaged line `{line}`; {}", path.display(), again()))?;
        let file = dir.join(name);
        let bytes = read_bounded(&file, "finished run's file", MAX_RUN_FILE_BYTES)?;
        anyhow::ensure!(
            digest_hex(&bytes) == sum,
            "{}: damaged (its SHA-256 differs from {CHECKSUMS}); {}",
            file.display(),
            again()
        );
        names.push(name.to_string());
    }
    for entry in fs::read_dir(dir).with_context(|| format!("cannot list {}", dir.display()))? {
        let name = entry?.file_name().to_string_lossy().into_owned();
        anyhow::ensure!(
            name == CHECKSUMS || names.contains(&name),
            "{}: not in {CHECKSUMS} (the finished run was changed); {}",
            dir.join(&name).display(),
            again()
        );
    }
    Ok(())
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
            Metric::BestTestAccuracy => {
                let best = self.summary.as_ref()?.best_test_accuracy?;
                Some(100.0 * best)
            }
            Metric::SettledAt(field) => {
                let unsettled = |r: &RoundRecord| field.of(r).is_none_or(|v| v != 0.0);
                let last = self.records.last()?;
                if unsettled(last) {
                    return None;
                }
                let after = self.records.iter().rposition(unsettled);
                let first = after.map_or(&self.records[0], |i| &self.records[i + 1]);
                Some(first.round as f64 + 1.0)
            }
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
