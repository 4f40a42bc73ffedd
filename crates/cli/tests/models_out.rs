//! A run writes its final cluster models as `models.safetensors` (one tensor
//! per cluster and layer, named and shaped as the model's layers), Python's
//! `safetensors` reads them into numpy, and `--init-from` starts a run
//! exactly from them.

mod common;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use common::{fedcluster, small};
use fedcluster_run::config::RunConfig;
use fedcluster_run::experiment::{build_data, build_model};
use fedcluster_run::model_file as models;

fn scratch(name: &str) -> PathBuf {
    common::scratch(&format!("models-{name}"))
}

fn ok(o: Output) -> Output {
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    o
}

/// Global FedAvg with gradient averaging over every client: each round is
/// deterministic given the model, so 4 rounds then 4 more from the saved
/// model are the 8 rounds of one run.
const GLOBAL: &str = "name = \"global\"\nlr = 0.1\naggregation = \"gradient\"";

fn rows(path: &Path) -> Vec<Vec<String>> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .skip(1)
        .map(|l| l.split(',').map(str::to_string).collect())
        .collect()
}

#[test]
fn a_run_started_from_saved_models_continues_exactly_where_they_left_off() {
    let dir = scratch("continue");
    std::fs::write(dir.join("cfg.toml"), small(GLOBAL, 8)).unwrap();
    ok(fedcluster(
        &["run", "cfg.toml", "-q", "--out", "straight"],
        &dir,
    ));
    ok(fedcluster(
        &[
            "run", "cfg.toml", "-q", "--out", "first", "--set", "rounds=4",
        ],
        &dir,
    ));
    ok(fedcluster(
        &[
            "run", "cfg.toml", "-q", "--out", "second", "--set", "rounds=4",
        ]
        .into_iter()
        .chain(["--init-from", "first/models.safetensors"])
        .collect::<Vec<_>>(),
        &dir,
    ));
    let straight = rows(&dir.join("straight/metrics.csv"));
    let second = rows(&dir.join("second/metrics.csv"));
    // Training loss and parameter error of rounds 4..8 (the round column
    // restarts at 0, and bytes do not depend on the models).
    for (a, b) in straight[4..].iter().zip(&second) {
        assert_eq!(a[1..3], b[1..3]);
    }
    let config = std::fs::read_to_string(dir.join("second/config.toml")).unwrap();
    assert!(
        config.contains("init_from = \"first/models.safetensors\""),
        "{config}"
    );
    // The saved models are the last round's, shaped as the model's layers.
    let run = RunConfig::load(&dir.join("straight/config.toml"), &[]).unwrap();
    let data = build_data(&run).unwrap();
    let model = build_model(&run, &data.view()).unwrap();
    let saved = models::load(&dir.join("straight/models.safetensors"), model.as_ref()).unwrap();
    assert_eq!(saved.len(), 1);
    assert_eq!(saved[0].len(), model.num_params());
    let _ = std::fs::remove_dir_all(&dir);
}

/// Phase 2 of the two-phase method (`start = "init"`, the paper's IFCA) from
/// saved models continues exactly; Phase 1 does not start from models.
#[test]
fn two_phase_from_saved_models_continues_its_phase_2_and_phase_1_refuses_them() {
    let dir = scratch("two-phase");
    let two_phase = "name = \"twophase\"\nclusters = 2\nlr = 0.05\nstart = \"init\"\n\
                     init = { kind = \"gaussian\", std = 1.0 }";
    std::fs::write(dir.join("cfg.toml"), small(two_phase, 8)).unwrap();
    ok(fedcluster(
        &["run", "cfg.toml", "-q", "--out", "straight"],
        &dir,
    ));
    let four = ["--set", "rounds=4"];
    ok(fedcluster(
        &[&["run", "cfg.toml", "-q", "--out", "first"][..], &four].concat(),
        &dir,
    ));
    let from = ["--init-from", "first/models.safetensors"];
    let second = [
        &["run", "cfg.toml", "-q", "--out", "second"][..],
        &four,
        &from,
    ]
    .concat();
    ok(fedcluster(&second, &dir));
    let straight = rows(&dir.join("straight/metrics.csv"));
    let second = rows(&dir.join("second/metrics.csv"));
    // Training loss, parameter error and misclustering of rounds 4..8.
    assert_eq!((straight.len(), second.len()), (8, 4));
    for (a, b) in straight[4..].iter().zip(&second) {
        assert_eq!(a[1..4], b[1..4]);
    }
    let phase1 = [
        &["run", "cfg.toml", "-q", "--out", "bad"][..],
        &from,
        &["--set", "algorithm.start=\"phase1\""],
        &[
            "--set",
            "algorithm.phase1={alpha=2.0,beta=2.0,separation=1.0}",
        ],
    ]
    .concat();
    let o = fedcluster(&phase1, &dir);
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(
        !o.status.success() && e.contains("init_from") && e.contains("start"),
        "{e}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn init_from_refuses_files_that_do_not_fit() {
    let dir = scratch("refuse");
    std::fs::write(dir.join("cfg.toml"), small(GLOBAL, 2)).unwrap();
    ok(fedcluster(&["run", "cfg.toml", "-q", "--out", "one"], &dir));
    let ifca = small("name = \"ifca\"\nclusters = 2\nlr = 0.1", 2);
    std::fs::write(dir.join("ifca.toml"), ifca).unwrap();
    for (args, expect) in [
        // One model for two clusters.
        (
            vec!["run", "ifca.toml", "--init-from", "one/models.safetensors"],
            "holds 1",
        ),
        // Another model's tensors.
        (
            vec![
                "run",
                "cfg.toml",
                "--init-from",
                "one/models.safetensors",
                "--set",
                "data.dim=21",
            ],
            "cluster0.weight",
        ),
        (
            vec!["run", "cfg.toml", "--init-from", "cfg.toml"],
            "not a safetensors file",
        ),
        (
            vec!["run", "cfg.toml", "--init-from", "missing.safetensors"],
            "missing.safetensors",
        ),
    ] {
        let o = fedcluster(&[args.as_slice(), &["-q", "--out", "bad"]].concat(), &dir);
        let e = String::from_utf8_lossy(&o.stderr);
        assert!(!o.status.success());
        assert!(
            e.contains("init_from") && e.contains(expect),
            "{args:?}: {e}"
        );
    }
    assert!(!dir.join("bad").exists() && !dir.join("bad.partial").exists());
    let _ = std::fs::remove_dir_all(&dir);
}

/// Python's `safetensors` reads the file into numpy arrays with the layers'
/// names, shapes and values (skipped, saying so, without python3, numpy and
/// safetensors; `.ci/run` installs them).
#[test]
fn python_safetensors_reads_the_models_into_numpy() {
    let probe = Command::new("python3")
        .args(["-c", "import numpy, safetensors.numpy"])
        .output();
    if !probe.is_ok_and(|o| o.status.success()) {
        fedcluster_testkit::skip(
            "python_safetensors_reads_the_models_into_numpy",
            "no python3 with numpy and safetensors (pip install numpy safetensors)",
        );
        return;
    }
    let dir = scratch("python");
    let ifca = small("name = \"ifca\"\nclusters = 2\nlr = 0.1", 2);
    std::fs::write(dir.join("cfg.toml"), ifca).unwrap();
    ok(fedcluster(&["run", "cfg.toml", "-q", "--out", "r"], &dir));
    let script = "import sys, json\n\
                  from safetensors.numpy import load_file\n\
                  t = load_file(sys.argv[1])\n\
                  print(json.dumps({k: [list(v.shape), str(v.dtype), [float(x) for x in v.ravel()]] \
                  for k, v in sorted(t.items())}))";
    let out = ok(Command::new("python3")
        .args(["-c", script, "r/models.safetensors"])
        .current_dir(&dir)
        .output()
        .unwrap());
    let read: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let run = RunConfig::load(&dir.join("r/config.toml"), &[]).unwrap();
    let data = build_data(&run).unwrap();
    let model = build_model(&run, &data.view()).unwrap();
    let saved = models::load(&dir.join("r/models.safetensors"), model.as_ref()).unwrap();
    for (j, values) in saved.iter().enumerate() {
        let entry = &read[format!("cluster{j}.weight")];
        assert_eq!(entry[0], serde_json::json!([1, 20]));
        assert_eq!(entry[1], "float32");
        let numpy: Vec<f32> = entry[2]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_f64().unwrap() as f32)
            .collect();
        assert_eq!(&numpy, values);
    }
    let _ = std::fs::remove_dir_all(&dir);
}
