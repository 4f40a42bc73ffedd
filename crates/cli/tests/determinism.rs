//! Same config and seed give bit-identical metrics, whatever the thread count.

mod common;
use common::{check, small, two_phase_mixed};
use fedcluster_run::rundir::metrics_csv;

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
    let two_phase = two_phase_mixed(40);
    let run = |threads: usize| {
        metrics_csv(
            &check(
                &two_phase,
                &[
                    &format!("threads={threads}"),
                    "algorithm.local_update={ kind = \"fedprox\" }",
                ],
            )
            .records,
            false,
        )
    };
    assert_eq!(run(1), run(2));
}
