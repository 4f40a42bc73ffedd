//! The five CIFAR-10 and FEMNIST reproductions end to end, on files the test
//! writes in the exact published formats (CIFAR-10's binary batches, LEAF's
//! FEMNIST JSON; neither data set is in this workspace): each `--quick` run
//! finishes, its report shows every paper number and says it is a smoke run;
//! without the data each report says "not run: data absent here" with the way
//! to get it, shows no number of ours, and the command exits cleanly.

mod common;
#[path = "fixtures/published_formats.rs"]
mod published_formats;

use published_formats::{write_cifar, write_femnist};

/// Every reproduction, the data it reads and the paper's numbers its report
/// must show (as the report prints them: mean ± std, or the mean alone).
const REPRODUCTIONS: &[(&str, Data, &[&str])] = &[
    (
        "ifca-rotated-cifar",
        Data::Cifar,
        &["81.51 ± 1.37", "77.87 ± 0.39", "33.97 ± 1.19"],
    ),
    (
        "cflmgd-rotated-cifar",
        Data::Cifar,
        &["80.43 ± 0.14", "75.53 ± 0.90", "69.52 ± 1.09"],
    ),
    (
        "srfca-cifar",
        Data::Cifar,
        &[
            "91.38 ± 0.27",
            "75.87 ± 0.33",
            "88.75 ± 0.52",
            "87.59 ± 0.42",
            "10.00 ± 0.20",
            "86.05 ± 0.43",
            "| 0.18 ",
            "| 0.38 ",
            "| 0.50 ",
        ],
    ),
    (
        "ifca-femnist",
        Data::Femnist,
        &[
            "87.99 ± 0.35",
            "87.89 ± 0.52",
            "87.41 ± 0.39",
            "87.38 ± 0.37",
            "84.45 ± 0.51",
            "75.85 ± 0.72",
        ],
    ),
    (
        "srfca-femnist",
        Data::Femnist,
        &[
            "83.83 ± 1.49",
            "66.18 ± 2.14",
            "80.00 ± 3.02",
            "79.48 ± 3.48",
            "81.93 ± 1.56",
            "78.74 ± 2.61",
            "81.62 ± 2.29",
        ],
    ),
];

#[derive(Clone, Copy, PartialEq)]
enum Data {
    Cifar,
    Femnist,
}

/// `fedcluster reproduce <name> --quick` on the test's files: it finishes,
/// its report shows every paper number and is labelled a smoke run; returns
/// the report.
fn quick(name: &str) -> String {
    let (_, data, numbers) = REPRODUCTIONS.iter().find(|r| r.0 == name).unwrap();
    let dir = common::scratch(&format!("quick-{name}"));
    let files = dir.join("data");
    match data {
        Data::Cifar => write_cifar(&files, 20).unwrap(),
        Data::Femnist => write_femnist(&files, 8, 20, 5).unwrap(),
    }
    let out = dir.join("out");
    let args = [
        "reproduce",
        name,
        "--quick",
        "--threads",
        "2",
        "--data-dir",
        files.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ];
    let output = common::fedcluster(&args, &dir);
    assert!(
        output.status.success(),
        "{name}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let report = std::fs::read_to_string(out.join("report.md")).unwrap();
    for number in *numbers {
        assert!(report.contains(number), "{name}: no {number} in\n{report}");
    }
    assert!(
        report.contains("**A smoke run (`--quick`"),
        "{name}: not labelled a smoke run:\n{report}"
    );
    assert!(
        !report.contains("not run: data absent here"),
        "{name}:\n{report}"
    );
    assert!(!report.contains("0 finished runs"), "{name}:\n{report}");
    let _ = std::fs::remove_dir_all(&dir);
    report
}

#[test]
fn ifca_rotated_cifar_quick_runs_on_cifar_binary_batches() {
    quick("ifca-rotated-cifar");
}

#[test]
fn cflmgd_rotated_cifar_quick_runs_on_cifar_binary_batches() {
    quick("cflmgd-rotated-cifar");
}

#[test]
fn srfca_cifar_quick_runs_on_cifar_binary_batches() {
    let report = quick("srfca-cifar");
    // Every method trains the SR-FCA code's network, and its report says so,
    // and how REFINE's step size is scheduled.
    for said in [
        "the SR-FCA code's ResNet9 (its ffcv network, width 2)",
        "**The network: the code's.**",
        "`refine_schedule = { kind = \"triangular\", warmup_rounds = 8 }`",
    ] {
        assert!(report.contains(said), "no {said} in\n{report}");
    }
    for method in ["srfca", "local", "global", "cfl", "local-kmeans", "ifca"] {
        let file = format!(
            "{}/../../configs/srfca-cifar/{method}.toml",
            env!("CARGO_MANIFEST_DIR")
        );
        let text = std::fs::read_to_string(&file).unwrap();
        let config: toml::Value = toml::from_str(&text).unwrap();
        assert_eq!(config["model"]["variant"].as_str(), Some("srfca"), "{file}");
    }
}

#[test]
fn ifca_femnist_quick_runs_on_leaf_json() {
    quick("ifca-femnist");
}

#[test]
fn srfca_femnist_quick_runs_on_leaf_json() {
    quick("srfca-femnist");
}

/// Without the data (an empty data root), each reproduction exits 0 with the
/// missing-data line on stderr and a report whose every verdict is "not run:
/// data absent here" with the fetch (CIFAR) or the directory LEAF writes
/// (FEMNIST), the paper's numbers beside no number of ours.
#[test]
fn without_the_data_each_report_says_not_run_and_how_to_get_it() {
    let dir = common::scratch("absent-data");
    let root = dir.join("empty-root");
    std::fs::create_dir_all(root.join("cifar10")).unwrap();
    for (name, data, numbers) in REPRODUCTIONS {
        let out = dir.join(name);
        let output = common::command(&["reproduce", name, "--out", out.to_str().unwrap()], &dir)
            .env(fedcluster_testkit::DATA_ROOT_VAR, &root)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(output.status.success(), "{name}: {stderr}");
        let how = match data {
            Data::Cifar => "`fedcluster data fetch cifar10` downloads it",
            Data::Femnist => "it must be LEAF's FEMNIST directory",
        };
        assert!(
            stderr.contains("not run: data absent here") && stderr.contains(how),
            "{name}: {stderr}"
        );
        let report = std::fs::read_to_string(out.join("report.md")).unwrap();
        let verdicts = report.split("## Claims").next().unwrap();
        let tables = verdicts.matches("- **").count();
        assert!(tables >= 1, "{name}:\n{report}");
        assert_eq!(
            verdicts.matches("not run: data absent here").count(),
            tables,
            "{name}: every table's verdict:\n{report}"
        );
        assert!(verdicts.contains(how), "{name}:\n{report}");
        for number in *numbers {
            assert!(report.contains(number), "{name}: no {number} in\n{report}");
        }
        assert!(report.contains("0 finished runs"), "{name}:\n{report}");
        // No number of ours: results.csv holds its header only.
        let results = std::fs::read_to_string(out.join("results.csv")).unwrap_or_default();
        assert!(results.lines().count() <= 1, "{name}: {results}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}
