//! Shared helpers of the integration tests: small seeded configs and one runner.

#![allow(dead_code)]

use fedcluster_cli::config::RunConfig;
use fedcluster_cli::experiment::{Outcome, build_data, execute};

/// A small IFCA-synthetic problem that is easy when the clustering is right:
/// (m, n, d, k) = (20, 100, 20, 2), σ = 0.1, R = 1.
pub fn small(algorithm: &str, rounds: usize) -> String {
    format!(
        r#"
seed = 7
rounds = {rounds}
[data]
kind = "ifca-synthetic"
clients = 20
points_per_client = 100
test_points_per_client = 50
dim = 20
clusters = 2
noise_std = 0.1
separation = 1.0
[model]
kind = "linear"
[algorithm]
{algorithm}
"#
    )
}

/// Parses `text` with `overrides`, runs it and returns the outcome.
pub fn check(text: &str, overrides: &[&str]) -> Outcome {
    let overrides: Vec<String> = overrides.iter().map(|s| s.to_string()).collect();
    let config = RunConfig::parse(text, &overrides, "test config").expect("valid config");
    let data = build_data(&config).expect("data");
    execute(&config, &data, &mut |_| {}).expect("run")
}

/// The selected replica's last record, unwrapped.
pub fn last(o: &Outcome) -> fedcluster_sim::record::RoundRecord {
    o.final_record().expect("at least one round").clone()
}

/// `../shared/data/mnist`, or `None` where it is absent (a clone outside the
/// project's workspace), with a note on stderr naming `test` that shows even
/// when `cargo test` captures the test's output.
pub fn mnist_dir(test: &str) -> Option<std::path::PathBuf> {
    use std::io::Write as _;
    let dir = std::path::PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../../shared/data/mnist"
    ));
    if dir.is_dir() {
        return Some(dir);
    }
    let _ = writeln!(
        std::io::stderr(),
        "SKIPPED {test}: no MNIST at {} (see the README's Data section)",
        dir.display()
    );
    None
}
