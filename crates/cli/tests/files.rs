//! `fedcluster data export` and `[data] kind = "files"` end to end: a
//! built-in data set exported to a federation directory (safetensors and
//! npz) and run from it gives a byte-identical `metrics.csv` to the built-in
//! run (the IFCA synthetic mixture, with its true parameters; rotated
//! Fashion-MNIST images, from IDX files the test writes); the export refuses
//! a non-empty `--out` without `--force`; a damaged federation is one line
//! naming the file and the client.

mod common;

use std::path::Path;

const CONFIGS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../configs");

/// `config`'s text with its `[data]` table replaced by `kind = "files"`
/// reading `dir`, written beside it in `scratch`.
fn files_config(config: &str, dir: &Path, scratch: &Path) -> String {
    let text = std::fs::read_to_string(config).unwrap();
    let (head, rest) = text.split_once("[data]").unwrap();
    let (_, tail) = rest.split_once("[model]").unwrap();
    let data = format!(
        "[data]\nkind = \"files\"\ndata_dir = {:?}\n\n",
        dir.to_str().unwrap()
    );
    let path = scratch.join("files.toml");
    std::fs::write(&path, format!("{head}{data}[model]{tail}")).unwrap();
    path.to_str().unwrap().to_string()
}

fn ok(output: std::process::Output) -> String {
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// The metrics of `config` run built in and run from its export in both
/// array formats: `run` are the run's overrides, `data` the data set's.
fn same_metrics_from_files(name: &str, config: &str, run: &[&str], data: &[&str], extra: &[&str]) {
    let dir = common::scratch(name);
    let with = |base: &[&str]| -> Vec<String> {
        base.iter().chain(extra).map(|s| s.to_string()).collect()
    };
    let built_in = dir.join("built-in");
    let mut args = with(&["run", config, "-q", "--out", built_in.to_str().unwrap()]);
    for s in run.iter().chain(data) {
        args.extend(["--set".to_string(), s.to_string()]);
    }
    ok(common::fedcluster(
        &args.iter().map(String::as_str).collect::<Vec<_>>(),
        &dir,
    ));
    let expected = std::fs::read_to_string(built_in.join("metrics.csv")).unwrap();
    assert!(expected.lines().count() > 1, "{expected}");
    for format in ["safetensors", "npz"] {
        let fed = dir.join(format!("fed-{format}"));
        let mut args = with(&[
            "data",
            "export",
            config,
            "--format",
            format,
            "--out",
            fed.to_str().unwrap(),
        ]);
        for s in data {
            args.extend(["--set".to_string(), s.to_string()]);
        }
        ok(common::fedcluster(
            &args.iter().map(String::as_str).collect::<Vec<_>>(),
            &dir,
        ));
        assert!(fed.join("federation.json").is_file());
        let out = dir.join(format!("run-{format}"));
        let config = files_config(config, &fed, &dir);
        let mut args = vec!["run", &config, "-q", "--out", out.to_str().unwrap()]
            .into_iter()
            .map(String::from)
            .collect::<Vec<_>>();
        for s in run {
            args.extend(["--set".to_string(), s.to_string()]);
        }
        ok(common::fedcluster(
            &args.iter().map(String::as_str).collect::<Vec<_>>(),
            &dir,
        ));
        let metrics = std::fs::read_to_string(out.join("metrics.csv")).unwrap();
        assert_eq!(
            metrics, expected,
            "{format}: metrics differ from the built-in run"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_synthetic_mixture_from_its_export_gives_the_built_in_metrics() {
    same_metrics_from_files(
        "files-synthetic",
        &format!("{CONFIGS}/ifca-synthetic.toml"),
        &["rounds=3", "algorithm.restarts=2"],
        &[
            "data.clients=12",
            "data.points_per_client=10",
            "data.test_points_per_client=5",
            "data.dim=6",
        ],
        &[],
    );
}

#[test]
fn rotated_images_from_their_export_give_the_built_in_metrics() {
    let idx = common::scratch("files-idx");
    let images = |count: u32, base: u32| {
        common::idx_images(count, 8, |i, p| ((base + (i * 64 + p) * 7) % 256) as u8)
    };
    for (name, bytes) in [
        ("train-images-idx3-ubyte", images(120, 0)),
        ("train-labels-idx1-ubyte", common::idx_labels(120)),
        ("t10k-images-idx3-ubyte", images(40, 3)),
        ("t10k-labels-idx1-ubyte", common::idx_labels(40)),
    ] {
        std::fs::write(idx.join(name), bytes).unwrap();
    }
    same_metrics_from_files(
        "files-images",
        &format!("{CONFIGS}/ifca-rotated-fashion-mnist.toml"),
        &["rounds=2", "model.hidden=6", "eval_every=1"],
        &[
            "data.clients=8",
            "data.points_per_client=10",
            "data.test_clients=4",
        ],
        &["--data-dir", idx.to_str().unwrap()],
    );
    let _ = std::fs::remove_dir_all(&idx);
}

#[test]
fn export_refuses_a_non_empty_out_without_force_and_a_bad_file_names_itself() {
    let dir = common::scratch("files-export-force");
    let config = format!("{CONFIGS}/ifca-synthetic.toml");
    let export = |force: bool| {
        let mut args = vec![
            "data",
            "export",
            &config,
            "--out",
            "fed",
            "--set",
            "data.clients=4",
            "--set",
            "data.dim=3",
            "--set",
            "data.points_per_client=2",
        ];
        if force {
            args.push("--force");
        }
        common::fedcluster(&args, &dir)
    };
    ok(export(false));
    let refused = export(false);
    assert!(!refused.status.success());
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(
        stderr.contains("fed: exists and is not an empty directory"),
        "{stderr}"
    );
    ok(export(true));
    assert!(!dir.join("fed.partial").exists() && !dir.join("fed.replaced").exists());

    std::fs::write(dir.join("fed/train/2.safetensors"), b"not arrays").unwrap();
    let run_config = files_config(&config, &dir.join("fed"), &dir);
    let run = || common::fedcluster(&["run", &run_config, "-q", "--out", "r"], &dir);
    let output = run();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
    assert!(
        stderr.contains("fed/train/2.safetensors: damaged data file (its SHA-256 differs"),
        "{stderr}"
    );
    // Without the export's checksums (a user's own federation), the reader's
    // own check names the file and the client.
    std::fs::remove_file(dir.join("fed/checksums.sha256")).unwrap();
    let output = run();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
    assert!(
        stderr.contains("fed/train/2.safetensors: train client 2: not a safetensors file"),
        "{stderr}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn without_test_clients_or_truth_those_metrics_are_absent_and_the_summary_says_why() {
    let dir = common::scratch("files-absent");
    let config = format!("{CONFIGS}/ifca-synthetic.toml");
    ok(common::fedcluster(
        &[
            "data",
            "export",
            &config,
            "--out",
            "fed",
            "--set",
            "data.clients=6",
            "--set",
            "data.dim=3",
            "--set",
            "data.points_per_client=4",
        ],
        &dir,
    ));
    let manifest = dir.join("fed/federation.json");
    let mut json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&manifest).unwrap()).unwrap();
    let table = json.as_object_mut().unwrap();
    for key in ["test", "clusters", "truth_params"] {
        table.remove(key);
    }
    for client in table["train"].as_array_mut().unwrap() {
        client.as_object_mut().unwrap().remove("cluster");
    }
    std::fs::write(&manifest, json.to_string()).unwrap();
    // Edited by hand, the federation is the user's own: without checksums.
    std::fs::remove_file(dir.join("fed/checksums.sha256")).unwrap();
    let run_config = files_config(&config, &dir.join("fed"), &dir);
    ok(common::fedcluster(
        &[
            "run",
            &run_config,
            "-q",
            "--out",
            "r",
            "--set",
            "rounds=2",
            "--set",
            "algorithm.restarts=1",
        ],
        &dir,
    ));
    let metrics = std::fs::read_to_string(dir.join("r/metrics.csv")).unwrap();
    let last = metrics.lines().last().unwrap();
    // Every column but round, train_loss and clusters_found (the algorithm's
    // own) up to round_misclustering is empty.
    let cells: Vec<&str> = last.split(',').collect();
    assert!(
        cells[0] == "1" && !cells[1].is_empty() && cells[5] == "2",
        "{last}"
    );
    for at in [2, 3, 4, 6, 7, 8, 9] {
        assert_eq!(cells[at], "", "column {at} of {metrics}");
    }
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("r/summary.json")).unwrap())
            .unwrap();
    let absent = &summary["metrics_absent"];
    assert_eq!(
        absent["test_loss"], "the data set has no test clients",
        "{summary}"
    );
    assert_eq!(
        absent["misclustering"], "the data set gives no true clusters",
        "{summary}"
    );
    assert_eq!(
        absent["param_error"],
        "the data set gives no true cluster parameters"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
