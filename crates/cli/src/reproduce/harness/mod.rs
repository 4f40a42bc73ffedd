//! The reproduction harness: runs an [`Experiment`]'s grid of settings x
//! methods x seeds with one progress display, saves every finished run as it
//! completes, resumes (a re-run with the same `--out` runs only what is
//! missing), and writes `results.csv`, `curves.csv`, the plots and `report.md`
//! from every finished run found in the output directory. An experiment on
//! data that is commonly absent reports "not run: data absent here" instead
//! ([`absent_data`], [`report_not_run`]).

mod claim;
mod claims;
mod held_out;
mod numbers;
mod report;
mod spec;
mod stored;

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use indicatif::{ProgressBar, ProgressStyle};

use fedcluster_data::DataSet;
use fedcluster_sim::EngineError;

use crate::progress::LineLog;
use fedcluster_run::checkpoint::{CHECKPOINT_FILE, PART_FILE, Policy, WithinRounds};
use fedcluster_run::config::RunConfig;
use fedcluster_run::experiment::{Control, build_data_set, build_model, execute_controlled};
use fedcluster_run::fork::Fork;
use fedcluster_run::memory;
use fedcluster_run::rundir::sibling;

pub use fedcluster_run::chart::Scale;
pub(crate) use spec::config_file;
pub use spec::{
    Check, Claim, Column, ConfigFile, Experiment, FIGURES_ONLY, Field, Gap, HeldOut, Layout,
    Method, Metric, POINTS, Paper, PaperClaim, Plot, Setting, TEN_PERCENT, Table, Tolerance, Tuned,
};
pub use stored::{Finished, write_csv};

/// How a reproduction is run.
#[derive(Debug, Clone, Default)]
pub struct RunOptions {
    /// The output directory (finished runs, report).
    pub out: PathBuf,
    /// Worker threads of each run (0: one per core); results do not depend on it.
    pub threads: usize,
    /// Only these settings, by key (all when empty).
    pub only_settings: Vec<String>,
    /// Only these methods, by key (all when empty).
    pub only_methods: Vec<String>,
    /// Only these seeds, each within `1..=seeds` (all when empty).
    pub only_seeds: Vec<u64>,
    /// Each run's memory limit (`--max-memory`; else the machine's).
    pub max_memory: Option<u64>,
    /// Checkpoint each run every this many rounds (0: every
    /// [`CHECKPOINT_EVERY`]; see [`checkpoint_policy`]).
    pub checkpoint_every: usize,
    /// `--checkpoint-within-rounds`: checkpoint every round after each client.
    pub checkpoint_within_rounds: bool,
    /// `--fork-from METHOD=DIR`: a selected run without a checkpoint of its
    /// own starts from the checkpoint in DIR of the same seed's run of METHOD
    /// (`fedcluster_run::fork`).
    pub fork_from: Option<(String, PathBuf)>,
}

/// One cell of the grid: a (setting, method, seed).
struct Cell {
    setting: usize,
    method: usize,
    seed: u64,
}

impl Experiment {
    /// The run config of `cell` (before data-derived overrides).
    fn config(&self, cell: &Cell, data_overrides: &[String], threads: usize) -> Result<RunConfig> {
        let (setting, method) = (&self.settings[cell.setting], &self.methods[cell.method]);
        let seed = setting.seed_offset + cell.seed;
        let mut overrides = vec![format!("seed={seed}"), format!("threads={threads}")];
        overrides.extend(self.overrides.iter().cloned());
        overrides.extend(setting.overrides.iter().cloned());
        overrides.extend(method.overrides.iter().cloned());
        for (i, extra) in &method.per_setting {
            if *i == cell.setting {
                overrides.extend(extra.iter().cloned());
            }
        }
        overrides.extend(data_overrides.iter().cloned());
        RunConfig::parse(method.config.text, &overrides, method.config.path)
            .with_context(|| format!("{} in setting {}", method.label, setting.label))
    }

    /// The run config of seed `seed` of (setting, method), as the grid
    /// composes it (before data-derived overrides, threads 0): for tests of
    /// an experiment's cells.
    #[cfg(test)]
    pub(crate) fn run_config(&self, setting: usize, method: usize, seed: u64) -> Result<RunConfig> {
        let cell = Cell {
            setting,
            method,
            seed,
        };
        self.config(&cell, &[], 0)
    }

    /// The index of the method `key` (`--fork-from`'s), or an error naming
    /// the known ones.
    fn method_index(&self, key: &str) -> Result<usize> {
        let methods = &self.methods;
        match methods.iter().position(|m| m.key.eq_ignore_ascii_case(key)) {
            Some(index) => Ok(index),
            None => {
                let known: Vec<&str> = methods.iter().map(|m| m.key).collect();
                bail!(
                    "--fork-from {key}=...: {} has no such method; known: {}",
                    self.name,
                    known.join(", ")
                )
            }
        }
    }

    /// Where the run of `cell` is saved.
    fn run_dir(&self, out: &Path, cell: &Cell) -> PathBuf {
        out.join("runs")
            .join(&self.settings[cell.setting].key)
            .join(self.methods[cell.method].key)
            .join(format!("seed-{}", cell.seed))
    }

    /// Every cell with a finished run in `out` (`saved_cells` reads the seed
    /// numbers off the directory names).
    fn saved_cells(&self, out: &Path) -> Result<Vec<Cell>> {
        let seed_of =
            |e: std::fs::DirEntry| e.file_name().to_str()?.strip_prefix("seed-")?.parse().ok();
        let mut cells = Vec::new();
        for (setting, s) in self.settings.iter().enumerate() {
            for (method, m) in self.methods.iter().enumerate() {
                let dir = out.join("runs").join(&s.key).join(m.key);
                let Ok(entries) = std::fs::read_dir(&dir) else {
                    continue;
                };
                let mut seeds: Vec<u64> = entries.flatten().filter_map(seed_of).collect();
                seeds.retain(|s| stored::is_finished(&dir.join(format!("seed-{s}"))));
                seeds.sort_unstable();
                cells.extend(seeds.into_iter().map(|seed| Cell {
                    setting,
                    method,
                    seed,
                }));
            }
        }
        Ok(cells)
    }

    /// The selected cells, setting-major then seed then method (so each data
    /// set is built once).
    fn cells(&self, o: &RunOptions) -> Result<Vec<Cell>> {
        let pick = |keys: &[String], key: &str| {
            keys.is_empty() || keys.iter().any(|k| k.eq_ignore_ascii_case(key))
        };
        let settings: Vec<&str> = self.settings.iter().map(|s| s.key.as_str()).collect();
        let methods: Vec<&str> = self.methods.iter().map(|m| m.key).collect();
        for (wanted, known, what) in [
            (&o.only_settings, settings, "setting"),
            (&o.only_methods, methods, "method"),
        ] {
            let unknown = |w: &&String| !known.iter().any(|k| k.eq_ignore_ascii_case(w));
            if let Some(bad) = wanted.iter().find(unknown) {
                bail!(
                    "--only-{what} {bad}: {} has no such {what}; known: {}",
                    self.name,
                    known.join(", ")
                );
            }
        }
        if self.seeds == 0 {
            bail!(
                "{}: zero seeds asked for (--seeds 0 or --trials 0): nothing would run",
                self.name
            );
        }
        let seeds = 1..=self.seeds as u64;
        if let Some(bad) = o.only_seeds.iter().find(|s| !seeds.contains(s)) {
            bail!(
                "--only-seed/--only-trial {bad}: {} runs seeds 1 to {} here \
                 (raise --seeds, or --trials, to add more)",
                self.name,
                self.seeds
            );
        }
        let mut cells = Vec::new();
        for (si, setting) in self.settings.iter().enumerate() {
            if !pick(&o.only_settings, &setting.key) {
                continue;
            }
            for seed in seeds.clone() {
                if !o.only_seeds.is_empty() && !o.only_seeds.contains(&seed) {
                    continue;
                }
                for (mi, method) in self.methods.iter().enumerate() {
                    if pick(&o.only_methods, method.key) {
                        cells.push(Cell {
                            setting: si,
                            method: mi,
                            seed,
                        });
                    }
                }
            }
        }
        Ok(cells)
    }
}

/// Runs what is missing of `exp`'s selected grid into `o.out`, then writes the
/// report from every finished run there; returns the report's tables.
pub fn run(exp: &Experiment, o: &RunOptions) -> Result<String> {
    let selected = exp.cells(o)?;
    if let Some((key, _)) = &o.fork_from {
        exp.method_index(key)?;
    }
    let mut grid = Grid {
        exp,
        threads: o.threads,
        max_memory: o.max_memory,
        data: None,
    };
    // Every finished run in `out`, selected or not, checked against this
    // command's protocol before anything runs.
    grid.finished(&o.out)?;
    let todo: Vec<Cell> = selected
        .into_iter()
        .filter(|c| !stored::is_finished(&exp.run_dir(&o.out, c)))
        .collect();
    let bar = ProgressBar::new(todo.len() as u64).with_style(
        ProgressStyle::with_template(
            "{bar:30} {pos}/{len} runs  {msg}  {elapsed_precise} (eta {eta})",
        )
        .expect("valid template"),
    );
    // Where the bar does not show (a log file, CI), lines do.
    let lines = LineLog::unless_terminal();
    let runs = todo.len();
    for (i, cell) in todo.into_iter().enumerate() {
        let label = format!(
            "{} · {} · seed {}",
            exp.settings[cell.setting].key, exp.methods[cell.method].key, cell.seed
        );
        let what = format!("run {}/{runs}: {label}", i + 1);
        bar.set_message(label.clone());
        if let Some(lines) = &lines {
            lines.start(&what);
        }
        let config = grid.config(&cell).with_context(|| label.clone())?;
        let fork = match &o.fork_from {
            Some((key, from)) => Some(grid.fork(&cell, key, from).with_context(|| label.clone())?),
            None => None,
        };
        let data = grid.data(&config).with_context(|| label.clone())?;
        let rounds = config.rounds;
        let data = data.view();
        let model = build_model(&config, &data).with_context(|| label.clone())?;
        let estimate = memory::estimate(&config, &data, model.as_ref());
        memory::check(&estimate, o.max_memory).with_context(|| label.clone())?;
        let dir = exp.run_dir(&o.out, &cell);
        let mut checkpoint =
            checkpoint_policy(&dir, o.checkpoint_every, o.checkpoint_within_rounds)
                .with_context(|| label.clone())?;
        if let Some(fork) = fork
            && !checkpoint.path.is_file()
        {
            let forking = format!("{what}: forking from {}", fork.checkpoint.display());
            match &lines {
                Some(lines) => lines.note(&forking),
                None => bar.println(forking),
            }
            checkpoint.fork = Some(fork);
        }
        let checkpoint_dir = checkpoint.path.parent().map(Path::to_path_buf);
        if checkpoint.path.is_file() {
            let part = checkpoint.path.with_file_name(PART_FILE);
            let within = match part.is_file() {
                true => format!(" and {} (within a round)", part.display()),
                false => String::new(),
            };
            let resuming = format!(
                "{what}: resuming from {}{within}",
                checkpoint.path.display()
            );
            match &lines {
                Some(lines) => lines.note(&resuming),
                None => bar.println(resuming),
            }
        }
        let control = Control {
            ready: &mut || Ok(()),
            progress: &mut |p| {
                bar.set_message(format!("{label} · round {}/{rounds}", p.round + 1));
                if let Some(lines) = &lines {
                    lines.round(&what, p.round + 1, rounds);
                }
            },
            checkpoint: Some(checkpoint),
        };
        let outcome =
            execute_controlled(&config, &data, model.as_ref(), control).with_context(|| {
                format!(
                    "{label} (delete {}.checkpoint to start it over)",
                    dir.display()
                )
            });
        let how = match &outcome {
            Ok(outcome) => {
                stored::save(
                    &dir,
                    &config,
                    Ok(outcome),
                    exp.last_round_only,
                    checkpoint_dir.as_deref(),
                )?;
                "finished"
            }
            Err(e) if is_divergence(e) => {
                stored::save(
                    &dir,
                    &config,
                    Err(&format!("{e:#}")),
                    false,
                    checkpoint_dir.as_deref(),
                )?;
                "diverged"
            }
            Err(e) => bail!("{label}: {e:#}"),
        };
        if let Some(checkpoint_dir) = checkpoint_dir {
            std::fs::remove_dir_all(&checkpoint_dir)
                .with_context(|| format!("removing {}", checkpoint_dir.display()))?;
        }
        if let Some(lines) = &lines {
            lines.end(&what, how, &format!(", saved in {}", dir.display()));
        }
        bar.inc(1);
    }
    bar.finish_and_clear();
    // Another `fedcluster reproduce` may share `out` (one per core, say): the
    // report is written from every run finished by now, under a lock, so the
    // last report written counts every run saved before it.
    let _lock = lock_reports(&o.out)?;
    let finished = grid.finished(&o.out)?;
    report::write(exp, &o.out, &finished, None)
}

/// How a run of the grid checkpoints: into `<run dir>.checkpoint/` (created
/// here), every `every_rounds` rounds (0: at most every [`CHECKPOINT_EVERY`])
/// and after its last round, `within` every round after each client too, and
/// resuming from a checkpoint found there, so a long run killed mid-way (the
/// end of a session, a reboot) loses at most that much work. Removed once the
/// run is saved.
fn checkpoint_policy(dir: &Path, every_rounds: usize, within: bool) -> Result<Policy> {
    let checkpoint_dir = sibling(dir, "checkpoint");
    std::fs::create_dir_all(&checkpoint_dir)
        .with_context(|| format!("creating {}", checkpoint_dir.display()))?;
    Ok(Policy {
        path: checkpoint_dir.join(CHECKPOINT_FILE),
        every_rounds,
        every: CHECKPOINT_EVERY,
        resume: true,
        within_rounds: WithinRounds::from_flags(within, every_rounds),
        fork: None,
    })
}

/// The longest a run of the grid computes between checkpoints.
const CHECKPOINT_EVERY: std::time::Duration = std::time::Duration::from_secs(300);

/// One finished run of an experiment's grid, as [`finished_runs`] reads it.
pub struct FinishedRun {
    /// Index into [`Experiment::settings`].
    pub setting: usize,
    /// Index into [`Experiment::methods`].
    pub method: usize,
    /// The seed number, from 1.
    pub seed: u64,
    /// What the run left.
    pub run: Finished,
}

/// Every finished run of `exp` in `out`, each checked against `exp`'s
/// protocol: for an experiment that reads its runs itself (a search that
/// picks the next grid, a report of its own).
pub fn finished_runs(exp: &Experiment, out: &Path) -> Result<Vec<FinishedRun>> {
    let mut grid = Grid {
        exp,
        threads: 0,
        max_memory: None,
        data: None,
    };
    Ok(grid
        .finished(out)?
        .into_iter()
        .map(|(cell, run)| FinishedRun {
            setting: cell.setting,
            method: cell.method,
            seed: cell.seed,
            run,
        })
        .collect())
}

/// Why `exp` cannot start here, when it reports absent data
/// ([`Experiment::report_absent_data`]), `o.out` holds no finished run and a
/// selected cell's data directory is absent or empty: the data set's
/// missing-data line (the directory, every way to give it, the fetch that
/// downloads it). `None` otherwise, and the grid runs (a directory that holds
/// some files but not all is the data set's own error, naming the file).
pub fn absent_data(exp: &Experiment, o: &RunOptions) -> Result<Option<String>> {
    if !exp.report_absent_data || !exp.saved_cells(&o.out)?.is_empty() {
        return Ok(None);
    }
    let root = fedcluster_run::config::data_root();
    for cell in exp.cells(o)? {
        let mut data = exp.config(&cell, &[], 0)?.data;
        let Some(files) = data.files() else {
            continue;
        };
        let Some(dir) = data.resolve_data_dir(&root) else {
            continue;
        };
        let empty = std::fs::read_dir(dir).map_or(true, |mut d| d.next().is_none());
        if empty {
            let what = format!("no data in {}", dir.display());
            return Ok(Some(files.missing(&what, None)));
        }
    }
    Ok(None)
}

/// Writes `exp`'s report with no run, every verdict "not run: data absent
/// here" with `why` ([`absent_data`]); returns the tables (the paper's
/// numbers beside none of ours).
pub fn report_not_run(exp: &Experiment, o: &RunOptions, why: &str) -> Result<String> {
    let _lock = lock_reports(&o.out)?;
    report::write(exp, &o.out, &[], Some(why))
}

/// Holds `out/.report.lock` until dropped: one process at a time reads the
/// finished runs and writes the report.
fn lock_reports(out: &Path) -> Result<std::fs::File> {
    std::fs::create_dir_all(out).with_context(|| format!("cannot create {}", out.display()))?;
    let path = out.join(".report.lock");
    let file = std::fs::File::create(&path)
        .with_context(|| format!("cannot create {}", path.display()))?;
    file.lock()
        .with_context(|| format!("cannot lock {}", path.display()))?;
    Ok(file)
}

/// Resolves the grid's configs, keeping the last data set built.
struct Grid<'e> {
    exp: &'e Experiment,
    threads: usize,
    /// `--max-memory`.
    max_memory: Option<u64>,
    /// The last data set, keyed by its config section and seed: the methods
    /// of one (setting, seed) usually share it.
    data: Option<(String, DataSet)>,
}

impl Grid<'_> {
    /// Every finished run in `out`, each checked against this command's
    /// protocol.
    fn finished(&mut self, out: &Path) -> Result<Vec<(Cell, Finished)>> {
        let mut finished = Vec::new();
        for cell in self.exp.saved_cells(out)? {
            let run = self.check(&self.exp.run_dir(out, &cell), &cell)?;
            finished.push((cell, run));
        }
        Ok(finished)
    }

    /// The finished run in `dir`, which must come from the protocol asked for
    /// now: averaging unlike runs would be wrong.
    fn check(&mut self, dir: &Path, cell: &Cell) -> Result<Finished> {
        let done = stored::load(dir)?;
        let expected = self.config(cell)?;
        if protocol(&done.config)? != protocol(&expected)? {
            bail!(
                "{} holds a finished run of another protocol (rounds, sizes or method \
                 settings differ from this command's): use another --out, or remove it",
                dir.display()
            );
        }
        Ok(done)
    }

    /// The data set of `config`.
    fn data(&mut self, config: &RunConfig) -> Result<&DataSet> {
        let key = format!("{}seed = {}", toml::to_string(&config.data)?, config.seed);
        if self.data.as_ref().is_none_or(|(k, _)| *k != key) {
            self.data = None; // free the last one before building the next
            if let Some(declared) = memory::declared_data(config) {
                memory::check(&declared, self.max_memory)?;
            }
            let mut data = build_data_set(config)?;
            if let Some(h) = self.exp.held_out {
                data = held_out::split(data, h)?;
            }
            self.data = Some((key, data));
        }
        Ok(&self.data.as_ref().expect("just built").1)
    }

    /// The run config of `cell`, with the overrides derived from its data
    /// set where the experiment has them.
    fn config(&mut self, cell: &Cell) -> Result<RunConfig> {
        let config = self.exp.config(cell, &[], self.threads)?;
        let Some(derive) = self.exp.from_data else {
            return Ok(config);
        };
        let derived = derive(&self.data(&config)?.view());
        self.exp.config(cell, &derived, self.threads)
    }

    /// `--fork-from key=from` for `cell`: the checkpoint in `from` (a
    /// checkpoint directory or its file) of the run of method `key` at
    /// `cell`'s setting and seed.
    fn fork(&mut self, cell: &Cell, key: &str, from: &Path) -> Result<Fork> {
        let source = Cell {
            setting: cell.setting,
            method: self.exp.method_index(key)?,
            seed: cell.seed,
        };
        Ok(Fork {
            checkpoint: match from.is_dir() {
                true => from.join(CHECKPOINT_FILE),
                false => from.to_path_buf(),
            },
            config: self.config(&source)?,
        })
    }
}

/// What makes two runs comparable: the config without the thread count and
/// the data's directory.
fn protocol(config: &RunConfig) -> Result<toml::Table> {
    let mut table = toml::Table::try_from(config)?;
    table.remove("threads");
    if let Some(data) = table.get_mut("data").and_then(|d| d.as_table_mut()) {
        data.remove("data_dir");
    }
    Ok(table)
}

/// Whether `e` is training diverging (a result, saved as such) rather than a
/// failure to run.
fn is_divergence(e: &anyhow::Error) -> bool {
    matches!(
        e.downcast_ref::<EngineError>(),
        Some(EngineError::NonFinite { .. })
            | Some(EngineError::Server {
                error: fedcluster_core::AlgoError::Diverged { .. },
                ..
            })
    )
}
