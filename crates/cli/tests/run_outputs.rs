//! What every `fedcluster run` adds to its run directory beside the metrics:
//! `curves.svg` (the training curves, as reproducible as `metrics.csv`) and the
//! threads it used in `summary.json`.

mod common;

use std::path::Path;

use common::{fedcluster, scratch, small};

const IFCA: &str = "name = \"ifca\"\nclusters = 2\naggregation = \"model\"\nlocal_steps = 3\nlr = 0.05\nrestarts = 3\ninit = { kind = \"bernoulli\" }";

fn run(dir: &Path, args: &[&str]) {
    let mut all = vec!["run", "ifca.toml", "--quiet"];
    all.extend_from_slice(args);
    let out = fedcluster(&all, dir);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn summary(dir: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(dir.join("summary.json")).unwrap()).unwrap()
}

#[test]
fn every_run_draws_its_curves_the_same_whatever_the_threads() {
    let dir = scratch("curves");
    std::fs::write(dir.join("ifca.toml"), small(IFCA, 12)).unwrap();
    let every = ["--set", "eval_every=3"];
    run(
        &dir,
        &[&every[..], &["--out", "one", "--threads", "1"]].concat(),
    );
    run(
        &dir,
        &[&every[..], &["--out", "two", "--threads", "2"]].concat(),
    );
    let svg = std::fs::read_to_string(dir.join("one/curves.svg")).unwrap();
    assert_eq!(
        svg.as_bytes(),
        std::fs::read(dir.join("two/curves.svg")).unwrap()
    );
    for what in [
        "training loss",
        "Test loss",
        "fraction of clients misclustered",
        "training clients",
        "test clients",
        "\nround\n",
    ] {
        assert!(svg.contains(what), "curves.svg lacks `{what}`");
    }
    // A run directory with its curves is still one that --overwrite replaces.
    run(
        &dir,
        &[&every[..], &["--out", "one", "--overwrite"]].concat(),
    );
    assert_eq!(
        svg,
        std::fs::read_to_string(dir.join("one/curves.svg")).unwrap()
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_summary_records_the_threads_used_and_the_request() {
    let dir = scratch("threads");
    std::fs::write(dir.join("ifca.toml"), small(IFCA, 2)).unwrap();
    run(&dir, &["--out", "three", "--threads", "3"]);
    let s = summary(&dir.join("three"));
    assert_eq!(
        (s["threads"].as_u64(), s["threads_requested"].as_u64()),
        (Some(3), Some(3))
    );
    // 0 asks for one thread per core: the summary says how many that was.
    let mut command = common::command(&["run", "ifca.toml", "--quiet", "--out", "all"], &dir);
    let out = command.env_remove("RAYON_NUM_THREADS").output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get()) as u64;
    let s = summary(&dir.join("all"));
    assert_eq!(
        (s["threads"].as_u64(), s["threads_requested"].as_u64()),
        (Some(cores), Some(0))
    );
    let _ = std::fs::remove_dir_all(&dir);
}
