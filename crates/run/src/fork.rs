//! Forks (`--fork-from`): a run that starts from the checkpoint of a run of
//! another config instead of its first round, when the rounds that checkpoint
//! holds are what this config's first rounds compute. SR-FCA and
//! ONE_SHOT-IFCA share ONE_SHOT: on the SR-FCA paper's Shakespeare table
//! that is 7 of ONE_SHOT-IFCA's 10 core-hours, done once.
//!
//! The two resolved configs must agree on everything but `rounds` and
//! `threads` (the data, the model, the seed, ...) and the algorithm; the
//! algorithm then decides whether the fields of its own that differ (or
//! `rounds`) were read by the rounds so far ([`Algorithm::continue_under`]:
//! SR-FCA accepts a fork before ONE_SHOT's clustering, every other algorithm
//! refuses). A fork from the same config (a copy of the run's own
//! checkpoint) is a resume, for every algorithm. The checkpoint is read
//! whole and checked against the config it was written under (sealed, as a
//! resume checks it), and a round interrupted between parts
//! (`checkpoint.part.bin` beside it) goes on from that part. Nothing in the
//! source's directory is written or removed; before its first round the fork
//! writes what it starts from as its own checkpoint, so from then on it
//! resumes as any run does.
//!
//! `fedcluster run` writes its resolved config into its checkpoint directory
//! (`<out>.partial/`) as it starts ([`record_config`]), so that directory, or
//! a copy of it, names the config its checkpoints were written under
//! ([`from_run`]); `reproduce` knows its methods' configs.
//!
//! A forked run says so: beside its checkpoints, and then in its finished run
//! directory, [`FORKED_FROM_FILE`] names the source and the rounds that ran
//! there, whose records and seconds the run carries as its own.

use std::path::Path;

use anyhow::{Context, Result, bail};
use serde::Serialize;

use fedcluster_algorithms::{Algorithm, Checked};
use fedcluster_core::ClientId;

pub use crate::checkpoint::Fork;
use crate::checkpoint::{self, CHECKPOINT_FILE, Part, PartRef, Saved, Schedule, Whose};
use crate::config::RunConfig;
use crate::rundir::CONFIG_FILE;
use crate::whole_file::write_whole;

/// The note beside a forked run's checkpoints (and then in its run
/// directory) naming where its first rounds ran ([`record_origin`]).
pub const FORKED_FROM_FILE: &str = "forked-from.txt";

/// Writes [`FORKED_FROM_FILE`] beside `checkpoint`, this run's own
/// checkpoint file, as it starts from `fork`'s checkpoint after `rounds`
/// rounds, `done` of the next round's clients exchanged when it was taken
/// between parts of that round.
pub(crate) fn record_origin(
    checkpoint: &Path,
    fork: &Fork,
    rounds: usize,
    done: Option<usize>,
) -> Result<()> {
    let dir = checkpoint.parent().unwrap_or(Path::new("."));
    let whole = match rounds {
        0 => None,
        1 => Some("round 0".to_string()),
        n => Some(format!("rounds 0 to {}", n - 1)),
    };
    let part = done.map(|done| format!("{done} of round {rounds}'s clients"));
    let ran = match (whole, part) {
        (Some(whole), Some(part)) => format!("{whole}, and {part}"),
        (Some(only), None) | (None, Some(only)) => only,
        (None, None) => "nothing".to_string(),
    };
    let note = format!(
        "This run started from another run's checkpoint (--fork-from).\n\
         source: {}\n\
         source config: {} ({})\n\
         ran there: {ran}\n\
         The records and seconds of what ran there (metrics.csv, timing.csv) are the \
         source run's.\n",
        fork.checkpoint.display(),
        fork.config.name.as_deref().unwrap_or("unnamed"),
        fork.config.algorithm.name(),
    );
    write_whole(&dir.join(FORKED_FROM_FILE), note.as_bytes())
}

/// Writes `config` into the checkpoint directory `dir` of a starting run
/// (whole or not at all), for a fork from it to read.
pub fn record_config(dir: &Path, config: &RunConfig) -> Result<()> {
    write_whole(&dir.join(CONFIG_FILE), config.to_toml()?.as_bytes())
}

/// The fork from `dir`, the checkpoint directory of a `fedcluster run`
/// (`<out>.partial/`, or a copy of it): its checkpoint and the config
/// [`record_config`] wrote beside it.
pub fn from_run(dir: &Path) -> Result<Fork> {
    let context = || format!("--fork-from {}", dir.display());
    if !dir.is_dir() {
        bail!(
            "{}: not a directory (a run's <out>.partial/ or a copy of it)",
            context()
        );
    }
    let path = dir.join(CONFIG_FILE);
    if !path.exists() {
        bail!(
            "{}: no {CONFIG_FILE}, the config its checkpoints were written under (a run \
             writes it there as it starts; a reproduction's checkpoint is forked with \
             `reproduce --fork-from METHOD=DIR`)",
            context()
        );
    }
    let config = RunConfig::load(&path, &[]).with_context(context)?;
    Ok(Fork {
        checkpoint: dir.join(CHECKPOINT_FILE),
        config,
    })
}

/// A fork's checkpoint read back for this run: the state after its rounds,
/// and the part of the round it was interrupted in, if any.
pub(crate) type Forked<A> = (
    Saved<<A as Algorithm>::Server, <A as Algorithm>::Client>,
    Option<Part<<A as Algorithm>::Server, <A as Algorithm>::Client>>,
);

/// The dotted keys (`data.clients`, `algorithm.then.kind`) at which the
/// resolved configs `from` and `to` differ, `rounds` and `threads` aside, in
/// order.
fn differing_fields(from: &RunConfig, to: &RunConfig) -> Result<Vec<String>> {
    let table = |config: &RunConfig| -> Result<toml::Table> {
        let mut table = toml::Table::try_from(config).context("the config as TOML")?;
        table.remove("rounds");
        table.remove("threads");
        Ok(table)
    };
    let mut differing = Vec::new();
    diff("", &table(from)?, &table(to)?, &mut differing);
    differing.sort();
    Ok(differing)
}

/// Appends to `out` the keys under `prefix` at which `a` and `b` differ.
fn diff(prefix: &str, a: &toml::Table, b: &toml::Table, out: &mut Vec<String>) {
    let keys: std::collections::BTreeSet<&String> = a.keys().chain(b.keys()).collect();
    for key in keys {
        let path = if prefix.is_empty() {
            key.clone()
        } else {
            format!("{prefix}.{key}")
        };
        match (a.get(key), b.get(key)) {
            (Some(toml::Value::Table(x)), Some(toml::Value::Table(y))) => diff(&path, x, y, out),
            (x, y) if x == y => {}
            _ => out.push(path),
        }
    }
}

/// Reads `fork`'s checkpoint for a run of `to` (algorithm config `config`),
/// every check made: the configs differ in the algorithm's fields and
/// `rounds` only, the checkpoint is sealed under `fork.config` and holds
/// fewer rounds than `to` runs, and the algorithm takes the fork.
pub(crate) fn load<A: Algorithm>(
    fork: &Fork,
    to: &RunConfig,
    config: &Checked<A::Config>,
) -> Result<Forked<A>> {
    let path = &fork.checkpoint;
    let context = || format!("--fork-from {}", path.display());
    let differing = differing_fields(&fork.config, to).with_context(context)?;
    if differing.iter().any(|f| f == "algorithm.name") {
        bail!(
            "{}: a checkpoint of {}; this run is {}: a fork continues the same algorithm",
            context(),
            fork.config.algorithm.name(),
            to.algorithm.name()
        );
    }
    let (algorithm, run): (Vec<String>, Vec<String>) = differing
        .into_iter()
        .partition(|f| f.starts_with("algorithm."));
    if !run.is_empty() {
        bail!(
            "{}: the checkpoint's run differs from this one in {}: a fork may change `rounds` \
             and the algorithm's fields only",
            context(),
            run.join(", ")
        );
    }
    let key = checkpoint::config_key(&fork.config)?;
    let Some(mut saved) = checkpoint::load::<A::Server, A::Client>(path, &key, Whose::Other)?
    else {
        bail!("{}: no checkpoint there", context());
    };
    if saved.next_round > to.rounds {
        bail!(
            "{}: the checkpoint holds {} rounds; this run has {} (rounds)",
            context(),
            saved.next_round,
            to.rounds
        );
    }
    let algorithm: Vec<String> = algorithm
        .iter()
        .map(|f| f["algorithm.".len()..].to_string())
        .collect();
    // The checkpoint's last round was scored on the test split as the last of
    // its run; this run scores it only if its own schedule says so.
    if let Some(last) = saved.next_round.checked_sub(1)
        && !to.evaluates(last)
    {
        for record in saved.so_far.records.iter_mut().filter(|r| r.round == last) {
            record.test_loss = None;
            record.test_accuracy = None;
            record.test_misclustering = None;
        }
    }
    // The same config (a copy of this run's own checkpoint): a resume.
    let same_run = algorithm.is_empty() && fork.config.rounds == to.rounds;
    let rounds_only = match algorithm.is_empty() {
        true => " (the configs differ in rounds only)",
        false => "",
    };
    let refused = |e: String| {
        let name = to.algorithm.name();
        anyhow::anyhow!("{}: {name} cannot fork: {e}{rounds_only}", context())
    };
    if !same_run {
        A::continue_under(&mut saved.server, config, &algorithm).map_err(refused)?;
    }
    let mut part =
        checkpoint::load_part::<A::Server, A::Client>(path, &key, saved.next_round, Whose::Other)?;
    if let Some(part) = &mut part
        && !same_run
    {
        A::continue_under(&mut part.server, config, &algorithm).map_err(refused)?;
    }
    Ok((saved, part))
}

/// The client halves `clients`, borrowed for writing.
fn halves<C>(clients: &[(ClientId, C)]) -> Vec<(ClientId, &C)> {
    clients.iter().map(|(id, c)| (*id, c)).collect()
}

/// Writes a fork's start, `saved` and the `part` of its round, as the run's
/// own checkpoint (under its config `key`), so that the run, killed, resumes
/// from its own directory; the round's start stays consistent with the
/// clients' halves it was taken with. The note of where it came from
/// ([`record_origin`]) goes beside it.
pub(crate) fn save_start<S: Serialize, C: Serialize>(
    schedule: &mut Schedule,
    key: &str,
    fork: &Fork,
    saved: &Saved<S, C>,
    part: Option<&Part<S, C>>,
) -> Result<()> {
    let round = saved.next_round;
    schedule.save(
        key,
        round,
        &saved.so_far,
        &saved.server,
        halves(&saved.clients),
    )?;
    if let Some(part) = part {
        schedule.save_part(&PartRef {
            config: key,
            round,
            server: &part.server,
            clients: halves(&part.clients),
            done: part.done,
            replied: &part.replied,
            bytes_up: part.bytes_up,
            seconds: part.seconds,
        })?;
    }
    record_origin(&schedule.policy().path, fork, round, part.map(|p| p.done))
}

#[cfg(test)]
#[path = "fork_tests.rs"]
mod tests;
