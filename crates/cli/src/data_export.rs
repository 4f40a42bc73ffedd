//! `fedcluster data export CONFIG --out DIR`: the data set a config builds
//! (its training clients, test clients and ground truth) written as a
//! federation directory, the format `[data] kind = "files"` reads
//! (docs/data.md): so that users can see the format, and run the same data
//! from files.

use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::Args;

use fedcluster_data::files::{ArrayFormat, write_federation};
use fedcluster_run::config::{RunConfig, data_dir_override};
use fedcluster_run::experiment::build_data;

/// `fedcluster data export`.
#[derive(Debug, Args)]
pub struct ExportArgs {
    /// The config whose `[data]` set (with `seed`) is written.
    pub config: PathBuf,
    /// Directory to create: federation.json, train/, test/ (and truth.*).
    #[arg(long)]
    pub out: PathBuf,
    /// Array files: safetensors or npz.
    #[arg(long, default_value = "safetensors", value_parser = ["safetensors", "npz"])]
    pub format: String,
    /// Override a config value, e.g. --set data.clients=20.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub overrides: Vec<String>,
    /// Directory of the real data set's files (overrides `data.data_dir`).
    #[arg(long)]
    pub data_dir: Option<PathBuf>,
    /// Replace an existing, non-empty --out.
    #[arg(long)]
    pub force: bool,
}

/// Builds the config's data set and writes it to `--out`.
pub fn export(args: &ExportArgs) -> Result<()> {
    let mut overrides = args.overrides.clone();
    overrides.extend(args.data_dir.as_deref().map(data_dir_override));
    let config = RunConfig::load(&args.config, &overrides)?;
    // One writer per data set: a second export into the same --out is
    // refused until this one has finished.
    let out = fedcluster_run::rundir::normalise(&args.out)?;
    let _lock = fedcluster_run::rundir::DirLock::take(&out)?;
    let data = build_data(&config)?;
    let format = ArrayFormat::named(&args.format).context("--format: safetensors or npz")?;
    write_federation(&data, &args.out, format, args.force)?;
    eprintln!(
        "wrote {} ({} training and {} test clients) to {}",
        data.name,
        data.train.len(),
        data.test.len(),
        args.out.display()
    );
    Ok(())
}
