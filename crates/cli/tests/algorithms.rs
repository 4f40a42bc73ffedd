//! Every algorithm on a small seeded problem with a known answer.

mod common;
use common::{check, last, small};

const SIGMA: f64 = 0.1;

#[test]
fn ifca_gradient_averaging_recovers_clusters_and_parameters() {
    let cfg = small(
        "name = \"ifca\"\nclusters = 2\naggregation = \"gradient\"\nlr = 0.5\nrestarts = 5\ninit = { kind = \"gaussian\", std = 1.0 }",
        300,
    );
    let r = last(&check(&cfg, &[]));
    assert_eq!(r.misclustering, Some(0.0));
    let err = r.param_error.unwrap();
    assert!(err <= 0.6 * SIGMA, "param error {err} above 0.6 sigma");
}

#[test]
fn ifca_model_averaging_recovers_clusters_and_parameters() {
    let cfg = small(
        "name = \"ifca\"\nclusters = 2\naggregation = \"model\"\nlr = 0.05\nlocal_steps = 5\nrestarts = 5\ninit = { kind = \"gaussian\", std = 1.0 }",
        100,
    );
    let r = last(&check(&cfg, &[]));
    assert_eq!(r.misclustering, Some(0.0));
    assert!(r.param_error.unwrap() <= 0.6 * SIGMA, "{:?}", r.param_error);
}

#[test]
fn ifca_partial_participation_samples_the_fraction() {
    let cfg = small(
        "name = \"ifca\"\nclusters = 2\naggregation = \"model\"\nlr = 0.05\nlocal_steps = 5\nparticipation = 0.5\nrestarts = 5\ninit = { kind = \"gaussian\", std = 1.0 }",
        150,
    );
    let o = check(&cfg, &[]);
    assert!(o.records.iter().all(|r| r.participants == 10));
    let r = last(&o);
    assert!(r.param_error.unwrap() <= 0.6 * SIGMA, "{:?}", r.param_error);
}

#[test]
fn stable_identity_saving_sends_less_and_learns_the_same() {
    let base = "name = \"ifca\"\nclusters = 2\naggregation = \"gradient\"\nlr = 0.5\nrestarts = 1\ninit = { kind = \"gaussian\", std = 1.0 }";
    let plain = check(&small(base, 200), &[]);
    let saving = check(&small(&format!("{base}\nstable_rounds = 5"), 200), &[]);
    let down =
        |o: &fedcluster_run::outcome::Outcome| o.records.iter().map(|r| r.bytes_down).sum::<u64>();
    assert!(
        down(&saving) * 10 < down(&plain) * 7,
        "saving {} vs plain {}",
        down(&saving),
        down(&plain)
    );
    assert_eq!(last(&saving).misclustering, last(&plain).misclustering);
    let (a, b) = (
        last(&saving).param_error.unwrap(),
        last(&plain).param_error.unwrap(),
    );
    assert!((a - b).abs() < 1e-3, "{a} vs {b}");
}

#[test]
fn oracle_beats_global_and_local() {
    let fedavg = "lr = 0.05\nlocal_steps = 5\naggregation = \"model\"";
    let oracle = last(&check(
        &small(&format!("name = \"oracle\"\n{fedavg}"), 100),
        &[],
    ));
    let global = last(&check(
        &small(&format!("name = \"global\"\n{fedavg}"), 100),
        &[],
    ));
    let local = last(&check(
        &small("name = \"local\"\nlr = 0.05\nlocal_steps = 5", 100),
        &[],
    ));
    let (o, g, l) = (
        oracle.param_error.unwrap(),
        global.param_error.unwrap(),
        local.param_error.unwrap(),
    );
    assert!(o <= 0.6 * SIGMA, "oracle {o}");
    assert!(
        g > 0.3,
        "a single model cannot fit two clusters R apart: {g}"
    );
    assert!(l > o, "local {l} should be worse than oracle {o}");
    assert!(oracle.test_loss.unwrap() < global.test_loss.unwrap());
    assert_eq!(global.misclustering, None);
}

#[test]
fn one_shot_clusters_local_erms_when_n_exceeds_d() {
    let cfg = small(
        "name = \"oneshot\"\nclusters = 2\nerm_steps = 300\nerm_lr = 0.1\nlr = 0.05\nlocal_steps = 5",
        60,
    );
    let r = last(&check(&cfg, &[]));
    assert_eq!(r.misclustering, Some(0.0));
    assert!(r.param_error.unwrap() <= 0.6 * SIGMA, "{:?}", r.param_error);
}

#[test]
fn mixed_regression_generator_runs_through_ifca() {
    let cfg = r#"
seed = 3
rounds = 150
[data]
kind = "mixed-regression"
dim = 10
clusters = 3
probs = [0.2, 0.3, 0.5]
client_sizes = [{ count = 60, points = 30 }, { count = 6, points = 100 }]
test_points_per_client = 10
[algorithm]
name = "ifca"
clusters = 3
aggregation = "gradient"
lr = 0.5
restarts = 10
init = { kind = "gaussian", std = 0.6 }
"#;
    let r = last(&check(cfg, &[]));
    assert_eq!(r.misclustering, Some(0.0));
    assert!(r.param_error.unwrap() < 0.1, "{:?}", r.param_error);
}

#[test]
fn the_shipped_ifca_synthetic_config_meets_the_issue_bar() {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../configs/ifca-synthetic.toml"
    ))
    .unwrap();
    let r = last(&check(&text, &[]));
    assert_eq!(r.misclustering, Some(0.0));
    let err = r.param_error.unwrap();
    assert!(err <= 0.6 * SIGMA, "param error {err}");
}

#[test]
fn cfl_mgd_recovers_clusters_with_momentum() {
    let cfg = small(
        "name = \"cflmgd\"\nclusters = 2\naggregation = \"model\"\nlr = 0.02\nmomentum = 0.9\nlocal_steps = 5\nrestarts = 5\ninit = { kind = \"gaussian\", std = 1.0 }",
        100,
    );
    let r = last(&check(&cfg, &[]));
    assert_eq!(r.misclustering, Some(0.0));
    assert!(r.param_error.unwrap() <= 0.6 * SIGMA, "{:?}", r.param_error);
    // `clusters = 1` is FedAvg with momentum: it runs, and cannot separate two clusters.
    let fedavg_momentum = small(
        "name = \"cflmgd\"\nclusters = 1\naggregation = \"model\"\nlr = 0.02\nmomentum = 0.9\nlocal_steps = 5",
        50,
    );
    let r = last(&check(&fedavg_momentum, &[]));
    assert!(r.param_error.unwrap() > 0.3, "{:?}", r.param_error);
}

/// Su, Xu, Yang's two-phase method through the CLI config, on a small version
/// of their configuration (c); `start = "truth"` (the oracle) and `fedprox`
/// run through the same path.
#[test]
fn two_phase_config_recovers_an_unbalanced_mixture() {
    let data = r#"
seed = 2
rounds = 210
[data]
kind = "mixed-regression"
dim = 20
clusters = 3
probs = [0.2, 0.3, 0.5]
client_sizes = [{ count = 300, points = 10 }, { count = 12, points = 50 }]
test_points_per_client = 5
[model]
kind = "linear"
"#;
    let two_phase = format!(
        "{data}[algorithm]\nname = \"twophase\"\nclusters = 3\nlr = 0.02\n\
         init = {{ kind = \"gaussian\", std = 0.45 }}\n\
         [algorithm.phase1]\nalpha = 2.0\nbeta = 2.0\nseparation = 1.5\n"
    );
    let r = last(&check(&two_phase, &[]));
    let oracle = last(&check(&two_phase, &["algorithm.start=\"truth\""]));
    let (two, best) = (r.param_error.unwrap(), oracle.param_error.unwrap());
    assert!(two <= 1.1 * best, "two-phase {two} vs oracle {best}");
    assert!(r.misclustering.unwrap() < 0.05, "{:?}", r.misclustering);
    let prox = format!("{data}[algorithm]\nname = \"fedprox\"\nlr = 0.02\n");
    let p = last(&check(&prox, &[]));
    // One model for three clusters stays far from every truth.
    assert!(p.param_error.unwrap() > 3.0 * best, "{:?}", p.param_error);
}

/// SR-FCA through the CLI config: it is not told k, finds the two clusters of
/// the small synthetic problem and reports them in the records.
#[test]
fn srfca_config_finds_the_clusters_without_k() {
    let cfg = small(
        "name = \"srfca\"\ndistance = \"l2\"\nthreshold = { kind = \"quantile\", value = 0.3 }\n\
         local_steps = 100\nlocal_lr = 0.05\nrefine_rounds = 50\nlr = 0.1\ninit = { kind = \"zeros\" }",
        200,
    );
    let r = last(&check(&cfg, &[]));
    assert_eq!(r.clusters_found, Some(2));
    assert_eq!(r.majority_misclustering, Some(0.0));
    assert_eq!(r.misclustering, Some(0.0));
    assert!(r.param_error.unwrap() <= 0.6 * SIGMA, "{:?}", r.param_error);
}

/// CFL through the CLI config splits the two-cluster problem once, exactly.
#[test]
fn cfl_config_splits_into_the_true_clusters() {
    let cfg = small(
        "name = \"cfl\"\nlr = 0.05\nlocal_steps = 5\neps1 = 0.05\neps2 = 0.1\nwarmup_rounds = 10\ninit = { kind = \"zeros\" }",
        150,
    );
    let r = last(&check(&cfg, &[]));
    assert_eq!(r.clusters_found, Some(2));
    assert_eq!(r.misclustering, Some(0.0));
    assert!(r.param_error.unwrap() <= 0.6 * SIGMA, "{:?}", r.param_error);
}

/// FedSoft through the CLI config separates the two clusters by its hard
/// (largest-importance) assignment.
#[test]
fn fedsoft_config_separates_the_clusters() {
    let cfg = small(
        "name = \"fedsoft\"\nclusters = 2\nlr = 0.05\nlocal_steps = 5\ninit = { kind = \"gaussian\", std = 1.0 }",
        150,
    );
    let r = last(&check(&cfg, &[]));
    assert_eq!(r.misclustering, Some(0.0));
    // Soft membership leaves a bias, but far less than one model for both.
    let global = last(&check(
        &small("name = \"global\"\nlr = 0.05\nlocal_steps = 5", 150),
        &[],
    ));
    let (soft, one) = (r.param_error.unwrap(), global.param_error.unwrap());
    assert!(soft < 0.5 * one, "fedsoft {soft} vs global {one}");
}

/// Minibatch Adam as the local optimizer: the oracle (FedAvg inside the true
/// clusters) reaches the same bar with it as with full-batch descent.
#[test]
fn oracle_with_minibatch_adam_recovers_the_parameters() {
    let cfg = small(
        "name = \"oracle\"\nlr = 0.02\nlocal_steps = 5\noptimizer = { kind = \"adam\", batch_size = 20 }",
        100,
    );
    let r = last(&check(&cfg, &[]));
    assert!(r.param_error.unwrap() <= 0.6 * SIGMA, "{:?}", r.param_error);
}

/// IFCA with minibatch Adam in its local update still recovers the clusters.
#[test]
fn ifca_with_minibatch_adam_recovers_clusters() {
    let cfg = small(
        "name = \"ifca\"\nclusters = 2\naggregation = \"model\"\nlr = 0.02\nlocal_steps = 5\nrestarts = 5\n\
         init = { kind = \"gaussian\", std = 1.0 }\noptimizer = { kind = \"adam\", batch_size = 20 }",
        100,
    );
    let r = last(&check(&cfg, &[]));
    assert_eq!(r.misclustering, Some(0.0));
    assert!(r.param_error.unwrap() <= 0.6 * SIGMA, "{:?}", r.param_error);
}

/// Local-KMeans (one-shot) with minibatch Adam in both its local ERM and its
/// FedAvg stage still clusters the local models exactly.
#[test]
fn one_shot_with_minibatch_adam_clusters_the_local_models() {
    let cfg = small(
        "name = \"local-kmeans\"\nclusters = 2\nerm_steps = 300\nerm_lr = 0.02\nlr = 0.02\n\
         local_steps = 5\noptimizer = { kind = \"adam\", batch_size = 20 }",
        60,
    );
    let r = last(&check(&cfg, &[]));
    assert_eq!(r.misclustering, Some(0.0));
    assert!(r.param_error.unwrap() <= 0.6 * SIGMA, "{:?}", r.param_error);
}

/// SR-FCA as the public code trains it (Adam, several local steps per REFINE
/// round), scored with `test_pick = "assigned"` after the rounds `eval_at`
/// names and the last.
#[test]
fn srfca_with_adam_refine_scores_the_assigned_models_when_asked() {
    let cfg = small(
        "name = \"srfca\"\ndistance = \"l2\"\nthreshold = { kind = \"quantile\", value = 0.3 }\n\
         local_steps = 100\nlocal_lr = 0.05\nrefine_rounds = 50\nlr = 0.01\nrefine_local_steps = 5\n\
         optimizer = { kind = \"adam\", batch_size = 20 }\ninit = { kind = \"zeros\" }",
        150,
    )
    .replace(
        "rounds = 150\n",
        "rounds = 150\ntest_pick = \"assigned\"\neval_at = [1, 52]\n",
    );
    let o = check(&cfg, &[]);
    let scored: Vec<usize> = o
        .records
        .iter()
        .filter(|r| r.test_loss.is_some())
        .map(|r| r.round + 1)
        .collect();
    assert_eq!(scored, [1, 52, 150]);
    let r = last(&o);
    assert_eq!(r.clusters_found, Some(2));
    assert_eq!(r.majority_misclustering, Some(0.0));
    assert!(r.param_error.unwrap() <= 0.6 * SIGMA, "{:?}", r.param_error);
    // Every client holds its own cluster's model: the test loss is the noise
    // (σ² = 0.01) plus the small parameter error.
    let loss = r.test_loss.unwrap();
    assert!(loss < 0.02, "assigned test loss {loss}");
}

#[test]
fn the_rounds_misclustering_counts_its_participants_alone() {
    let ifca = small(
        "name = \"ifca\"\nclusters = 2\naggregation = \"model\"\nlr = 0.05\nlocal_steps = 5\nrestarts = 5\ninit = { kind = \"gaussian\", std = 1.0 }",
        100,
    );
    // Every client takes part: the round's clients are the federation.
    let full = check(&ifca, &[]);
    for r in &full.records {
        assert_eq!(r.round_misclustering, r.misclustering, "round {}", r.round);
    }
    // A quarter takes part: in round 0 the 15 clients not yet heard from count
    // as misclustered overall, while the round's figure is over its 5 clients.
    let part = check(&ifca, &["algorithm.participation=0.25"]);
    let first = part
        .records
        .iter()
        .find(|r| r.replica == part.selected)
        .unwrap();
    assert_eq!(first.participants, 5);
    assert!(first.misclustering.unwrap() >= 0.75, "{first:?}");
    // Two models, two clusters: the better matching agrees on at least 3 of 5.
    let of_five = 5.0
        * first
            .round_misclustering
            .expect("participants are assigned");
    assert!(
        (of_five - of_five.round()).abs() < 1e-9 && of_five <= 2.0,
        "{first:?}"
    );
    let end = last(&part);
    assert_eq!(end.round_misclustering, Some(0.0), "{end:?}");
    // One model assigns nothing.
    let global = check(
        &small("name = \"global\"\nlr = 0.05\nlocal_steps = 5", 3),
        &[],
    );
    assert!(
        global
            .records
            .iter()
            .all(|r| r.round_misclustering.is_none())
    );
}
