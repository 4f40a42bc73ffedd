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

/// The same holds for the algorithms whose servers keep per-client state
/// (SR-FCA, CFL, FedSoft), for minibatch Adam (IFCA, SR-FCA's ONE_SHOT) and for
/// the two-phase method on its own data.
#[test]
fn every_clustering_algorithm_is_thread_count_independent() {
    let algorithms = [
        "name = \"srfca\"\nthreshold = { kind = \"quantile\", value = 0.3 }\nlocal_steps = 20\nlocal_lr = 0.05\nrefine_rounds = 5\nlr = 0.1\nlocal_optimizer = { kind = \"adam\", batch_size = 16 }",
        "name = \"cfl\"\nlr = 0.05\nlocal_steps = 3\neps1 = 0.05\neps2 = 0.1\nwarmup_rounds = 5",
        "name = \"ifca\"\nclusters = 2\naggregation = \"model\"\nlr = 0.02\nlocal_steps = 3\nrestarts = 2\nparticipation = 0.6\noptimizer = { kind = \"adam\", batch_size = 16 }",
        "name = \"fedsoft\"\nclusters = 2\nlr = 0.05\nlocal_steps = 3\nparticipation = 0.7\ninit = { kind = \"gaussian\", std = 1.0 }",
    ];
    for algorithm in algorithms {
        let run = |threads: usize| {
            let o = check(&small(algorithm, 25), &[&format!("threads={threads}")]);
            metrics_csv(&o.records, false)
        };
        assert_eq!(run(1), run(2), "{algorithm}");
    }
    let two_phase = r#"
seed = 3
rounds = 40
[data]
kind = "mixed-regression"
dim = 10
clusters = 3
probs = [0.2, 0.3, 0.5]
client_sizes = [{ count = 100, points = 10 }, { count = 10, points = 40 }]
test_points_per_client = 5
[model]
kind = "linear"
[algorithm]
name = "twophase"
clusters = 3
lr = 0.02
participation = 0.5
local_update = { kind = "fedprox" }
init = { kind = "gaussian", std = 0.6 }
[algorithm.phase1]
alpha = 2.0
beta = 2.0
separation = 1.5
subspace = { kind = "orthogonal", steps = 4 }
subspace_clients = 40
"#;
    let run = |threads: usize| {
        metrics_csv(
            &check(two_phase, &[&format!("threads={threads}")]).records,
            false,
        )
    };
    assert_eq!(run(1), run(2));
}
