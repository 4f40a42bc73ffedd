//! Every file under `configs/` parses and runs one round on small data: a
//! config that a reproduction or the README points at can never rot.

mod common;

use std::path::{Path, PathBuf};

use fedcluster_cli::config::{DataConfig, RunConfig, data_dir_override};
use fedcluster_cli::experiment::{build_data, execute};

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
    let mnist = common::mnist_dir(
        "every_config_file_parses_and_runs_one_round_on_small_data (MNIST configs parse only)",
    );
    // Shakespeare configs run on a small play set of the test's own.
    let plays = tempfile::tempdir().unwrap();
    common::write_toy_plays(plays.path());
    let mut ran = 0;
    for file in &files {
        let parsed = RunConfig::load(file, &[]).unwrap_or_else(|e| panic!("{e:#}"));
        let real_data = matches!(
            parsed.data,
            DataConfig::Mnist(_) | DataConfig::MnistAnchored(_)
        );
        let mut overrides: Vec<String> = SMALL.iter().map(|s| s.to_string()).collect();
        match (&mnist, real_data) {
            (Some(dir), true) => overrides.push(data_dir_override(dir)),
            (None, true) => continue,
            (_, false) => {}
        }
        if matches!(parsed.data, DataConfig::Shakespeare(_)) {
            overrides.push(data_dir_override(plays.path()));
            for key in [
                "data.clients=4",
                "data.max_train_samples=30",
                "data.max_test_samples=10",
            ] {
                overrides.push(key.into());
            }
        }
        let config = RunConfig::load(file, &overrides).unwrap_or_else(|e| panic!("{e:#}"));
        let data = build_data(&config).unwrap_or_else(|e| panic!("{}: {e:#}", file.display()));
        let outcome = execute(&config, &data.view(), &mut |_| {})
            .unwrap_or_else(|e| panic!("{}: {e:#}", file.display()));
        assert_eq!(
            outcome.records.last().map(|r| r.round),
            Some(0),
            "{}",
            file.display()
        );
        ran += 1;
    }
    let expected = if mnist.is_some() { files.len() } else { 1 };
    assert!(ran >= expected, "ran {ran} of {} configs", files.len());
}
