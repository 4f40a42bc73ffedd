//! `fedcluster data`: prepare data sets in their published formats.
//!
//! `fedcluster data fetch NAME` downloads a data set's published files and
//! checks their checksums (see [`crate::fetch`]).
//!
//! `fedcluster data leaf-shakespeare --out DIR` builds LEAF Shakespeare from
//! the Project Gutenberg plays and writes it as a LEAF directory (`train/`,
//! `test/`, `stats.md`), with its counts beside LEAF's published ones.
//!
//! `fedcluster data export CONFIG --out DIR` writes a config's data set as a
//! federation directory (see [`crate::data_export`]).

use std::fmt::Write as _;
use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::{Args, Subcommand};

use fedcluster_data::DataConfig;
use fedcluster_data::leaf::{PlayStats, users_from_plays, write_leaf_dir};
use fedcluster_data::table::DATA_ROOT_VAR;
use fedcluster_run::config::data_root;

use crate::fetch::{FetchArgs, fetch};
use crate::table::render;

/// Data preparation commands.
#[derive(Debug, Subcommand)]
pub enum DataCommand {
    /// Download a data set's files as published, checked against their MD5s,
    /// into DATA_ROOT/<name>/ (resumable).
    Fetch(FetchArgs),
    /// LEAF Shakespeare from the plays, written as LEAF's JSON files.
    LeafShakespeare(LeafShakespeareArgs),
    /// Write a config's data set (train and test clients, ground truth) as
    /// a federation directory, the format `[data] kind = "files"` reads.
    Export(crate::data_export::ExportArgs),
}

/// `fedcluster data leaf-shakespeare`.
#[derive(Debug, Args)]
pub struct LeafShakespeareArgs {
    /// Directory to create: train/ and test/ JSON files and stats.md.
    #[arg(long)]
    pub out: PathBuf,
    /// The Project Gutenberg plays (one .txt file per play; default:
    /// shakespeare/ in the data root, $FEDCLUSTER_DATA else `data`).
    #[arg(long)]
    pub plays: Option<PathBuf>,
    /// Fraction of each user's windows for training (LEAF's split).
    #[arg(long, default_value_t = 0.8)]
    pub train_fraction: f64,
}

impl DataCommand {
    /// Runs the command.
    pub fn run(self) -> Result<()> {
        match self {
            DataCommand::Fetch(args) => fetch(&args),
            DataCommand::LeafShakespeare(args) => leaf_shakespeare(&args),
            DataCommand::Export(args) => crate::data_export::export(&args),
        }
    }
}

/// LEAF's published statistics for Shakespeare (its `all_data`, before the
/// split): users, samples, mean and population standard deviation.
const LEAF_STATS: (usize, usize, f64, f64) = (1_129, 4_226_158, 3_743.2, 6_212.26);

fn leaf_shakespeare(args: &LeafShakespeareArgs) -> Result<()> {
    anyhow::ensure!(
        args.train_fraction > 0.0 && args.train_fraction < 1.0,
        "--train-fraction {}: must be in (0, 1)",
        args.train_fraction
    );
    // One writer per data set: a second `data leaf-shakespeare` into the same
    // --out is refused until this one has finished.
    let out = fedcluster_run::rundir::normalise(&args.out)?;
    let _lock = fedcluster_run::rundir::DirLock::take(&out)?;
    let plays = plays_dir(args);
    eprintln!("reading the plays in {}", plays.display());
    let (users, stats) = users_from_plays(&plays, args.train_fraction).with_context(|| {
        format!(
            "cannot build LEAF Shakespeare from {} (pass --plays DIR, or set {DATA_ROOT_VAR} to \
             a directory holding shakespeare/: the Project Gutenberg plays, one .txt file each)",
            plays.display()
        )
    })?;
    let report = stats_report(&stats, args);
    eprintln!("writing {} users to {}", users.len(), args.out.display());
    write_leaf_dir(&args.out, "shakespeare", &users, &[("stats.md", &report)])?;
    print!("{report}");
    Ok(())
}

/// `--plays`, else shakespeare/ in the data root (where `fedcluster run`
/// looks for the Shakespeare kind's files).
fn plays_dir(args: &LeafShakespeareArgs) -> PathBuf {
    args.plays.clone().unwrap_or_else(|| {
        let files = DataConfig::files_of("shakespeare").expect("the table's Shakespeare kind");
        files.resolve(None, &data_root())
    })
}

/// `stats.md`: our counts beside LEAF's.
pub fn stats_report(stats: &PlayStats, args: &LeafShakespeareArgs) -> String {
    let (users, samples, mean, std) = LEAF_STATS;
    let rows = vec![
        vec!["users".into(), stats.users.to_string(), users.to_string()],
        vec![
            "samples".into(),
            stats.samples.to_string(),
            samples.to_string(),
        ],
        vec![
            "samples per user, mean".into(),
            format!("{:.1}", stats.mean_samples),
            format!("{mean:.1}"),
        ],
        vec![
            "samples per user, std (population)".into(),
            format!("{:.2}", stats.std_samples),
            format!("{std:.2}"),
        ],
        vec![
            "samples per user, median".into(),
            format!("{:.0}", stats.median_samples),
            "-".into(),
        ],
    ];
    let mut out = format!(
        "# LEAF Shakespeare from {}\n\n{} plays read; skipped (no act heading): {}.\n\n",
        plays_dir(args).display(),
        stats.plays,
        if stats.skipped.is_empty() {
            "none".to_string()
        } else {
            stats.skipped.join(", ")
        }
    );
    out.push_str(&render(&["before the split", "ours", "LEAF"], &rows));
    let dropped: Vec<String> = stats
        .dropped_characters
        .iter()
        .map(|(c, n)| format!("{c:?} x {n}"))
        .collect();
    let _ = write!(
        out,
        "\nRoles: {}; users (at least 3 lines and one window): {}. LEAF's split at fraction {}: \
         {} users with a test window, {} training and {} test windows.\n\nCharacters outside \
         LEAF's alphabet, dropped: {}.\n",
        stats.roles,
        stats.users,
        args.train_fraction,
        stats.split_users,
        stats.train_samples,
        stats.test_samples,
        if dropped.is_empty() {
            "none".into()
        } else {
            dropped.join(", ")
        }
    );
    out
}
