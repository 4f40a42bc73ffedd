//! Bad input gets a clear one-line error naming the field, and never a panic or
//! a run directory that looks complete.

mod common;

use common::{fedcluster, scratch, small};
use fedcluster_run::config::RunConfig;
use fedcluster_run::experiment::{build_data, execute};

const IFCA: &str = "name = \"ifca\"\nclusters = 2\nlr = 0.1";

fn error_of(text: &str, overrides: &[&str]) -> String {
    let overrides: Vec<String> = overrides.iter().map(|s| s.to_string()).collect();
    format!(
        "{:#}",
        RunConfig::parse(text, &overrides, "cfg").unwrap_err()
    )
}

#[test]
fn two_phase_config_errors_name_the_field() {
    let two = "name = \"twophase\"\nclusters = 2\nlr = 0.1";
    let e = error_of(&small(two, 5), &[]);
    assert!(e.contains("`algorithm.phase1`"), "{e}");
    let with_phase1 =
        format!("{two}\n[algorithm.phase1]\nalpha = 2.0\nbeta = 1.0\nseparation = 1.0");
    let e = error_of(&small(&with_phase1, 5), &[]);
    assert!(e.contains("`algorithm.phase1.beta`"), "{e}");
    let e = error_of(
        &small(&with_phase1, 5),
        &["algorithm.phase1.subspace={ kind = \"orthogonal\", steps = 3 }"],
    );
    assert!(e.contains("`algorithm.phase1"), "{e}");
}

#[test]
fn unknown_keys_are_rejected_with_their_path() {
    let e = error_of(&small(IFCA, 5), &["algorithm.lrr=0.1"]);
    assert!(e.contains("`algorithm.lrr`"), "{e}");
    let e = error_of(
        &small(IFCA, 5).replace("seed = 7", "seed = 7\nbogus = 1"),
        &[],
    );
    assert!(e.contains("bogus"), "{e}");
    let e = error_of(&small(IFCA, 5), &["data.colour=3"]);
    assert!(e.contains("colour"), "{e}");
}

#[test]
fn bad_values_name_the_field() {
    assert!(error_of(&small(IFCA, 5), &["algorithm.clusters=0"]).contains("algorithm.clusters"));
    assert!(error_of(&small(IFCA, 5), &["algorithm.lr=-1"]).contains("algorithm.lr"));
    assert!(
        error_of(&small(IFCA, 5), &["algorithm.participation=1.5"])
            .contains("algorithm.participation")
    );
    assert!(error_of(&small(IFCA, 5), &["rounds=0"]).contains("rounds"));
    let cfl = "name = \"cflmgd\"\nclusters = 2\nlr = 0.1\nmomentum = 0.0";
    assert!(error_of(&small(cfl, 5), &[]).contains("algorithm.momentum"));
    assert!(error_of(&small(IFCA, 5), &["data.clients=21"]).contains("data.clients"));
    let e = error_of(&small(IFCA, 5), &["algorithm.clusters=\"two\""]);
    assert!(e.contains("`algorithm.clusters`"), "{e}");
    let e = error_of(&small(IFCA, 5), &["data.dim=-3"]);
    assert!(e.contains("`data.dim`"), "{e}");
    let e = error_of(&small(IFCA, 5), &["algorithm.name=\"nope\""]);
    assert!(e.contains("nope"), "{e}");
    // A model that does not fit the data parses, but fails before any round.
    let config =
        RunConfig::parse(&small(IFCA, 5), &["model.kind=\"logistic\"".into()], "cfg").unwrap();
    let data = build_data(&config).unwrap();
    let e = format!(
        "{:#}",
        execute(&config, &data.view(), &mut |_| {}).unwrap_err()
    );
    assert!(e.contains("model.kind"), "{e}");
    // Weight sharing needs a model with more than one layer.
    let config = RunConfig::parse(
        &small(IFCA, 5),
        &["algorithm.weight_sharing=true".into()],
        "cfg",
    )
    .unwrap();
    let data = build_data(&config).unwrap();
    let e = format!(
        "{:#}",
        execute(&config, &data.view(), &mut |_| {}).unwrap_err()
    );
    assert!(e.contains("algorithm.weight_sharing"), "{e}");
}

#[test]
fn divergence_is_reported_with_round_and_client() {
    let cfg = small(
        "name = \"global\"\nlr = 1000.0\nlocal_steps = 20\naggregation = \"model\"",
        20,
    );
    let config = RunConfig::parse(&cfg, &[], "cfg").unwrap();
    let data = build_data(&config).unwrap();
    let e = format!(
        "{:#}",
        execute(&config, &data.view(), &mut |_| {}).unwrap_err()
    );
    assert!(e.contains("diverged at round 0, client 0"), "{e}");
}

#[test]
fn ifca_drops_diverged_replicas_and_fails_only_when_all_diverge() {
    let cfg = small(
        "name = \"ifca\"\nclusters = 2\nlr = 1000.0\nrestarts = 3",
        50,
    );
    let config = RunConfig::parse(&cfg, &[], "cfg").unwrap();
    let data = build_data(&config).unwrap();
    let e = format!(
        "{:#}",
        execute(&config, &data.view(), &mut |_| {}).unwrap_err()
    );
    assert!(e.contains("diverged at round"), "{e}");
}

#[test]
fn cli_rejects_a_malformed_config_in_one_line_and_writes_nothing() {
    let dir = scratch("bad");
    std::fs::write(
        dir.join("bad.toml"),
        small("name = \"ifca\"\nclusters = 0\nlr = 0.1", 5),
    )
    .unwrap();
    let out = fedcluster(&["run", "bad.toml", "--out", "run"], &dir);
    assert!(!out.status.success());
    let err = String::from_utf8(out.stderr).unwrap();
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(err.contains("algorithm.clusters"), "{err}");
    assert!(!dir.join("run").exists() && !dir.join("run.partial").exists());

    std::fs::write(dir.join("syntax.toml"), "rounds = = 3").unwrap();
    let out = fedcluster(&["run", "syntax.toml", "--out", "run"], &dir);
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(
        !out.status.success() && err.trim_end().lines().count() == 1,
        "{err}"
    );
    let out = fedcluster(&["run", "missing.toml"], &dir);
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(
        !out.status.success() && err.contains("missing.toml"),
        "{err}"
    );
}

#[test]
fn cli_run_writes_a_complete_directory_and_refuses_to_clobber_it() {
    let dir = scratch("good");
    std::fs::write(dir.join("ok.toml"), small(IFCA, 3)).unwrap();
    let out = fedcluster(&["run", "ok.toml", "--out", "run", "--quiet"], &dir);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for f in ["config.toml", "metrics.csv", "timing.csv", "summary.json"] {
        assert!(dir.join("run").join(f).exists(), "{f} missing");
    }
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("run/summary.json")).unwrap())
            .unwrap();
    for key in ["algorithm", "seed", "rounds", "wall_seconds"] {
        assert!(summary.get(key).is_some(), "{key}");
    }
    for key in [
        "train_loss",
        "param_error",
        "misclustering",
        "test_accuracy",
    ] {
        assert!(summary["final"].get(key).is_some(), "final.{key}");
    }
    assert_eq!(summary["rounds"], 3);
    // The resolved config parses back to the same run.
    let resolved = std::fs::read_to_string(dir.join("run/config.toml")).unwrap();
    RunConfig::parse(&resolved, &[], "resolved").unwrap();
    let again = fedcluster(&["run", "ok.toml", "--out", "run"], &dir);
    assert!(!again.status.success());
    assert!(String::from_utf8_lossy(&again.stderr).contains("--overwrite"));
}

#[test]
fn missing_fields_and_bad_step_sizes_are_named_plainly() {
    let e = error_of(&small("name = \"ifca\"\nclusters = 2", 5), &[]);
    assert!(
        e.contains("field `algorithm.lr`: missing field `lr`"),
        "{e}"
    );
    let e = error_of(&small(IFCA, 5).replace("clients = 20\n", ""), &[]);
    assert!(e.contains("field `data.clients`: missing field"), "{e}");
    let e = error_of(&small(IFCA, 5), &["algorithm.lr=\"fast\""]);
    assert!(e.contains("expected a step size (a number"), "{e}");
    assert!(!e.contains("untagged"), "{e}");
    // The field is named once, not again at the end.
    let e = error_of(&small(IFCA, 5), &["algorithm.name=\"nope\""]);
    assert!(!e.contains(" in `"), "{e}");
}
