//! LEAF Shakespeare end to end: `fedcluster data leaf-shakespeare` writes the
//! plays as LEAF's JSON files, and `fedcluster run` on that directory and on
//! the plays themselves gives the same clients, hence the same run.

mod common;

use std::path::Path;
use std::process::{Command, Output};

fn fedcluster(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_fedcluster"))
        .args(args)
        .output()
        .expect("fedcluster runs")
}

fn succeeded(out: &Output) {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A small char-LSTM run: the 50 users of the paper's config cut to 4, each
/// to a few windows.
fn run(dir: &Path, data_dir: &Path, out: &Path) -> String {
    let config = dir.join("run.toml");
    std::fs::write(
        &config,
        r#"
seed = 3
rounds = 2
test_pick = "own"
[data]
kind = "shakespeare"
clients = 4
max_train_samples = 40
max_test_samples = 10
[model]
kind = "char-lstm"
embedding = 4
hidden = 8
layers = 2
[algorithm]
name = "ifca"
clusters = 2
lr = 0.8
aggregation = "model"
local_steps = 3
optimizer = { kind = "sgd", batch_size = 5 }
"#,
    )
    .unwrap();
    let data_dir = data_dir.display().to_string();
    let out_arg = out.display().to_string();
    let args = ["run", config.to_str().unwrap(), "--quiet", "--threads", "1"];
    succeeded(&fedcluster(
        &[&args[..], &["--data-dir", &data_dir, "--out", &out_arg]].concat(),
    ));
    std::fs::read_to_string(out.join("metrics.csv")).unwrap()
}

#[test]
fn the_leaf_directory_and_the_plays_give_the_same_run() {
    let dir = tempfile::tempdir().unwrap();
    let plays = dir.path().join("plays");
    common::write_toy_plays(&plays);
    let leaf = dir.path().join("leaf");
    let written = fedcluster(&[
        "data",
        "leaf-shakespeare",
        "--plays",
        plays.to_str().unwrap(),
        "--out",
        leaf.to_str().unwrap(),
    ]);
    succeeded(&written);
    let stats = std::fs::read_to_string(leaf.join("stats.md")).unwrap();
    assert!(
        stats.contains("| 1129 "),
        "LEAF's count beside ours:\n{stats}"
    );
    for split in ["train", "test"] {
        let files = std::fs::read_dir(leaf.join(split)).unwrap().count();
        assert_eq!(files, 1, "{split}/ holds one JSON file");
    }
    let from_leaf = run(dir.path(), &leaf, &dir.path().join("run-leaf"));
    let from_plays = run(dir.path(), &plays, &dir.path().join("run-plays"));
    assert_eq!(from_leaf, from_plays);
    // The run trained and scored every client on its own test split.
    let last = from_leaf.lines().last().unwrap();
    assert!(
        last.starts_with("1,") && !last.contains("NaN"),
        "{from_leaf}"
    );
    let header: Vec<&str> = from_leaf.lines().next().unwrap().split(',').collect();
    let accuracy = header.iter().position(|h| *h == "test_accuracy").unwrap();
    let acc: f64 = last.split(',').nth(accuracy).unwrap().parse().unwrap();
    assert!((0.0..=1.0).contains(&acc), "{from_leaf}");
}

#[test]
fn a_missing_play_directory_is_named_and_nothing_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("leaf");
    let missing = dir.path().join("no-plays");
    let result = fedcluster(&[
        "data",
        "leaf-shakespeare",
        "--plays",
        missing.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    let err = String::from_utf8_lossy(&result.stderr);
    assert!(
        !result.status.success() && err.contains("no-plays"),
        "{err}"
    );
    assert!(!out.exists() && !dir.path().join("leaf.partial").exists());
}
