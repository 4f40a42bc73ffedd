//! `fedcluster run`: one experiment from a config into a run directory, with
//! a progress bar, checkpoints and a result table.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::Result;

use crate::progress::RoundProgress;
use crate::table::{metric, render};
use fedcluster_run::checkpoint::{CHECKPOINT_FILE, Policy, WithinRounds};
use fedcluster_run::config::{DEFAULT_CONFIG, RunConfig};
use fedcluster_run::experiment::{Control, build_data_set, build_model, execute_controlled};
use fedcluster_run::fork;
use fedcluster_run::memory;
use fedcluster_run::rundir::{Extras, RunDir, free_run_dir, sibling, write_run};

/// How `run` writes its directory.
pub struct Output {
    /// Replace an existing run directory.
    pub overwrite: bool,
    /// Continue from the checkpoint in `<out>.partial`.
    pub resume: bool,
    /// Checkpoint every N rounds (0: every 60 s).
    pub checkpoint_every: usize,
    /// Checkpoint after each client of every round too.
    pub checkpoint_within_rounds: bool,
    /// `--fork-from`: without a checkpoint of its own, start from the one in
    /// this directory (`fedcluster_run::fork`).
    pub fork_from: Option<PathBuf>,
    /// No progress bar.
    pub quiet: bool,
    /// `--max-memory`: the memory the run may take (default: the machine's).
    pub max_memory: Option<u64>,
}

/// Runs `path` (the embedded default if none) with `overrides` and
/// `threads` into `out` (default: the first free `runs/<config name>[-N]`)
/// and prints its result table.
pub fn run(
    path: Option<PathBuf>,
    out: Option<PathBuf>,
    mut overrides: Vec<String>,
    threads: Option<usize>,
    output: Output,
) -> Result<()> {
    if let Some(t) = threads {
        overrides.push(format!("threads={t}"));
    }
    let (config, stem) = match &path {
        Some(p) => (
            RunConfig::load(p, &overrides)?,
            p.file_stem()
                .map_or("run".into(), |s| s.to_string_lossy().into_owned()),
        ),
        None => (
            RunConfig::parse(DEFAULT_CONFIG, &overrides, "embedded default config")?,
            "default".to_string(),
        ),
    };
    // Without --out, never fail or clobber: take the first free runs/<name>[-N].
    let out = out.unwrap_or_else(|| free_run_dir(&stem));
    // Problems with the output, the data, the model or the algorithm's setup
    // surface before any directory exists: the target is reserved (checked and
    // locked) now and created just before the first round.
    let reserved = RunDir::reserve_to_resume(&out, output.overwrite, output.resume)?;
    let partial = sibling(reserved.path(), "partial");
    let checkpoint = Policy {
        path: partial.join(CHECKPOINT_FILE),
        every_rounds: output.checkpoint_every,
        every: Duration::from_secs(60),
        resume: output.resume,
        within_rounds: WithinRounds::from_flags(
            output.checkpoint_within_rounds,
            output.checkpoint_every,
        ),
        fork: output
            .fork_from
            .as_deref()
            .map(fork::from_run)
            .transpose()?,
    };
    let own_checkpoint = std::fs::symlink_metadata(&checkpoint.path).is_ok();
    match (&checkpoint.fork, output.resume && own_checkpoint) {
        (Some(fork), false) => {
            eprintln!(
                "{}: forking from {}",
                out.display(),
                fork.checkpoint.display()
            )
        }
        (None, false) if output.resume => eprintln!(
            "nothing to resume: no {} (the run starts from its first round)",
            checkpoint.path.display()
        ),
        _ => {}
    }
    if let Some(declared) = memory::declared_data(&config) {
        memory::check(&declared, output.max_memory)?;
    }
    let data_set = build_data_set(&config)?;
    let data = data_set.view();
    let model = build_model(&config, &data)?;
    let estimate = memory::estimate(&config, &data, model.as_ref());
    memory::check(&estimate, output.max_memory)?;
    let progress = RoundProgress::start(&out.display().to_string(), config.rounds, output.quiet);
    let (summary, written) = reserved.run_into(
        |ready| {
            // The config goes beside the checkpoints: what a fork reads them under.
            let mut start = || ready().and_then(|()| fork::record_config(&partial, &config));
            let control = Control {
                ready: &mut start,
                progress: &mut |p| progress.show(p),
                checkpoint: Some(checkpoint),
            };
            let outcome = execute_controlled(&config, &data, model.as_ref(), control);
            progress.finish();
            outcome
        },
        |dir, outcome| write_run(dir, &config, &outcome, Extras::ALL),
    )?;
    let f = &summary.final_;
    let rows = vec![
        vec!["algorithm".into(), summary.algorithm.clone()],
        vec!["rounds".into(), summary.rounds.to_string()],
        vec!["train loss".into(), metric(f.train_loss)],
        vec!["param error".into(), metric(f.param_error)],
        vec!["misclustering".into(), metric(f.misclustering)],
        vec!["test misclustering".into(), metric(f.test_misclustering)],
        vec!["test loss".into(), metric(f.test_loss)],
        vec!["test accuracy".into(), metric(f.test_accuracy)],
        vec![
            "seconds / round".into(),
            format!("{:.4}", summary.seconds_per_round),
        ],
        vec![
            "MB down / up".into(),
            format!(
                "{:.1} / {:.1}",
                summary.bytes_down as f64 / 1e6,
                summary.bytes_up as f64 / 1e6
            ),
        ],
        vec![
            "memory est. / peak".into(),
            format!(
                "{} / {}",
                memory::gib(estimate.total()),
                memory::peak_resident().map_or("unknown (no /proc)".into(), memory::gib)
            ),
        ],
    ];
    print!("{}", render(&["metric", "value"], &rows));
    if summary.replicas.len() > 1 {
        println!(
            "selected replica {} of {} (lowest final training loss)",
            summary.selected_replica,
            summary.replicas.len()
        );
    }
    println!("run directory: {}", written.display());
    Ok(())
}
