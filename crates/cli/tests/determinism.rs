//! Same config and seed give bit-identical metrics, whatever the thread count.

mod common;
use common::{check, small};
use fedcluster_cli::rundir::metrics_csv;

const IFCA: &str = "name = \"ifca\"\nclusters = 2\naggregation = \"model\"\nlr = 0.05\nlocal_steps = 3\nparticipation = 0.7\nrestarts = 3\ninit = { kind = \"bernoulli\" }";

fn csv(threads: usize) -> String {
    let o = check(&small(IFCA, 30), &[&format!("threads={threads}")]);
    metrics_csv(&o.records, true)
}

#[test]
fn one_and_two_threads_give_identical_metrics() {
    let one = csv(1);
    assert_eq!(one, csv(2));
    assert_eq!(one, csv(1), "a second run with the same seed");
    assert!(one.lines().count() > 30);
}

#[test]
fn a_different_seed_gives_different_metrics() {
    let a = check(&small(IFCA, 5), &["seed=1"]);
    let b = check(&small(IFCA, 5), &["seed=2"]);
    assert_ne!(metrics_csv(&a.records, true), metrics_csv(&b.records, true));
}
