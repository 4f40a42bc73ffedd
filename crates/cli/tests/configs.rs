//! Every file under `configs/` parses and runs one round on small data: a
//! config that a reproduction, the README or docs/ point at can never rot.

mod common;

use std::path::{Path, PathBuf};

use fedcluster_run::config::{DataConfig, RunConfig, data_dir_override};
use fedcluster_run::experiment::{build_data, execute};
use rayon::prelude::*;

/// Shrinks any config to a one-round run on small data; `key?=value` touches
/// only the keys a config has.
const SMALL: &[&str] = &[
    "rounds=1",
    "threads=1",
    "data.clients?=24",
    "data.points_per_client?=20",
    "data.test_clients?=4",
    "data.test_points_per_client?=5",
    "data.dim?=20",
    "data.client_sizes?=[{ count = 30, points = 10 }]",
    "data.anchor_points?=10",
    "model.hidden?=16",
    "model.width?=2",
    "data.height?=8",
    "data.width?=8",
    "data.seq_len?=6",
    "data.vocab?=7",
    "algorithm.local_steps?=2",
    "algorithm.local_rounds?=1",
    "algorithm.refine_local_steps?=2",
    "algorithm.erm_steps?=2",
    "algorithm.restarts?=2",
    "algorithm.phase1.subspace_clients?=10",
];

fn config_files(dir: &Path, found: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("configs/ is readable") {
        let path = entry.expect("a directory entry").path();
        if path.is_dir() {
            config_files(&path, found);
        } else if path.extension().is_some_and(|e| e == "toml") {
            found.push(path);
        }
    }
}

#[test]
fn every_config_file_parses_and_runs_one_round_on_small_data() {
    let root = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../../configs"));
    let mut files = Vec::new();
    config_files(root, &mut files);
    files.sort();
    assert!(files.len() >= 20, "found only {files:?}");
    let test = "every_config_file_parses_and_runs_one_round_on_small_data";
    // Shakespeare configs run on a small play set of the test's own.
    let plays = tempfile::tempdir().unwrap();
    common::write_toy_plays(plays.path());
    let mut runs: Vec<(&PathBuf, Vec<String>)> = Vec::new();
    let mut skipped = 0;
    for file in &files {
        let parsed = RunConfig::load(file, &[]).unwrap_or_else(|e| panic!("{e:#}"));
        // Where the files are is the user's: --data-dir, $FEDCLUSTER_DATA or data/.
        assert_eq!(
            parsed.data.data_dir(),
            None,
            "{}: a shipped config names no data directory",
            file.display()
        );
        // The data-set table says which kinds read files: Shakespeare's are the
        // test's own plays, the others' the real ones (skipped without them).
        let mut overrides: Vec<String> = SMALL.iter().map(|s| s.to_string()).collect();
        match parsed.data.files() {
            None => {}
            Some(files) if files.dir_name == "shakespeare" => {
                overrides.push(data_dir_override(plays.path()))
            }
            Some(files) => {
                let name = file.strip_prefix(root).unwrap_or(file).display();
                let why = format!("{test} (configs/{name} parses only)");
                match common::real_data_dir(files.dir_name, files.title, &why) {
                    Some(dir) => overrides.push(data_dir_override(&dir)),
                    None => {
                        skipped += 1;
                        continue;
                    }
                }
            }
        }
        if matches!(parsed.data, DataConfig::Shakespeare(_)) {
            for key in [
                "data.clients=4",
                "data.max_train_samples=30",
                "data.max_test_samples=10",
            ] {
                overrides.push(key.into());
            }
        }
        runs.push((file, overrides));
    }
    assert_eq!(
        runs.len() + skipped,
        files.len(),
        "{} to run of {} configs",
        runs.len(),
        files.len()
    );
    assert!(!runs.is_empty(), "no config to run");
    // On every core: one config (the two-phase method's direct SVDs of
    // 1,970 x 1,970 moments) takes about half of the test's time.
    runs.par_iter()
        .for_each(|(file, overrides)| runs_one_round(file, overrides));
}

/// Runs `file` with `overrides` and checks it ends after round 0.
fn runs_one_round(file: &Path, overrides: &[String]) {
    let config = RunConfig::load(file, overrides).unwrap_or_else(|e| panic!("{e:#}"));
    let data = build_data(&config).unwrap_or_else(|e| panic!("{}: {e:#}", file.display()));
    let outcome = execute(&config, &data.view(), &mut |_| {})
        .unwrap_or_else(|e| panic!("{}: {e:#}", file.display()));
    assert_eq!(
        outcome.records.last().map(|r| r.round),
        Some(0),
        "{}",
        file.display()
    );
}
