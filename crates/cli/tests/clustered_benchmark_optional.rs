//! `fedcluster reproduce clustered-benchmark`'s two settings that run only
//! when their files are given, rotated CIFAR-10 (`--cifar-dir`) and FEMNIST
//! (`--femnist-dir`), on files the test writes in the exact published formats
//! (CIFAR-10's binary batches, LEAF's FEMNIST JSON; neither data set is in
//! this workspace): with them both are searched, tested and ranked (the
//! oracle nowhere without known clusters); without them the report names
//! each as not run, with the way to give it.

mod common;
#[path = "fixtures/published_formats.rs"]
mod published_formats;

use std::path::Path;

use published_formats::{write_cifar, write_femnist};

const CIFAR_LABEL: &str = "rotated CIFAR-10 (k = 2, 0/180 degrees)";
const FEMNIST_LABEL: &str = "FEMNIST writers, no known clusters";

/// The run directories under `dir` whose names start with `method`.
fn runs_of(dir: &Path, method: &str) -> usize {
    std::fs::read_dir(dir).map_or(0, |d| {
        d.flatten()
            .filter(|e| e.file_name().to_string_lossy().starts_with(method))
            .count()
    })
}

/// A report section's text: from its heading to the next one.
fn section<'a>(report: &'a str, heading: &str) -> &'a str {
    let start = report
        .find(heading)
        .unwrap_or_else(|| panic!("no {heading} in\n{report}"));
    let rest = &report[start + heading.len()..];
    &rest[..rest.find("\n#").unwrap_or(rest.len())]
}

#[test]
fn rotated_cifar_and_femnist_are_searched_tested_and_ranked_when_their_files_are_given() {
    let dir = common::scratch("clustered-benchmark-optional");
    let (cifar, femnist, out) = (dir.join("cifar"), dir.join("femnist"), dir.join("out"));
    write_cifar(&cifar, 100).unwrap();
    write_femnist(&femnist, 9, 60, 4).unwrap();
    let args = [
        "reproduce",
        "clustered-benchmark",
        "--quick",
        "--seeds",
        "1",
        "--threads",
        "1",
        "--cifar-dir",
        cifar.to_str().unwrap(),
        "--femnist-dir",
        femnist.to_str().unwrap(),
        "--only-setting",
        "rotated-cifar",
        "--only-setting",
        "femnist",
        "--only-method",
        "global",
        "--only-method",
        "oracle",
        "--out",
        out.to_str().unwrap(),
    ];
    let output = common::fedcluster(&args, &dir);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    // The search: 6 candidates of each method that runs there; the oracle
    // needs known clusters, which FEMNIST has not.
    let search = out.join("search/runs");
    assert_eq!(runs_of(&search.join("rotated-cifar"), "global"), 6);
    assert_eq!(runs_of(&search.join("rotated-cifar"), "oracle"), 6);
    assert_eq!(runs_of(&search.join("femnist"), "global"), 6);
    assert_eq!(runs_of(&search.join("femnist"), "oracle"), 0);
    // The test: each winner on seed 1.
    assert_eq!(runs_of(&out.join("test/runs/rotated-cifar"), ""), 2);
    assert_eq!(runs_of(&out.join("test/runs/femnist"), ""), 1);
    let report = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(!report.contains("not run: data absent here"), "{report}");
    let cifar_table = section(&report, &format!("### {CIFAR_LABEL}"));
    assert!(
        cifar_table.contains("| FedAvg (global) ") && cifar_table.contains("| Oracle "),
        "{report}"
    );
    let femnist_table = section(&report, &format!("### {FEMNIST_LABEL}"));
    assert!(
        femnist_table.contains("| 1    | FedAvg (global) ") && !femnist_table.contains("Oracle"),
        "{report}"
    );
    // No ARI or NMI without known clusters: the FedAvg row's ARI and NMI are
    // `-`, after its two accuracies.
    let row = femnist_table
        .lines()
        .find(|l| l.contains("FedAvg"))
        .unwrap();
    let cells: Vec<&str> = row.split('|').map(str::trim).collect();
    assert_eq!(&cells[6..8], ["-", "-"], "{row}");
    // The ranks across settings gain both columns; the protocol says how
    // each is built.
    let ranks = section(&report, "## Ranks across settings");
    assert!(
        ranks.contains("| rotated-cifar ") && ranks.contains("| femnist "),
        "{report}"
    );
    assert!(
        report.contains("Rotated CIFAR-10: k = 2 clusters")
            && report.contains("FEMNIST: 8 LEAF writers"),
        "{report}"
    );
    let results = std::fs::read_to_string(out.join("results.csv")).unwrap();
    assert_eq!(results.lines().count(), 1 + 3, "{results}");
    assert_eq!(results.matches("\nfemnist,global,").count(), 1, "{results}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn without_their_files_the_report_names_both_as_not_run_with_the_way_to_give_them() {
    let dir = common::scratch("clustered-benchmark-absent");
    let (root, out) = (dir.join("empty-root"), dir.join("out"));
    std::fs::create_dir_all(root.join("cifar10")).unwrap();
    let run = |extra: &[&str]| {
        let mut args = vec![
            "reproduce",
            "clustered-benchmark",
            "--quick",
            "--seeds",
            "1",
            "--threads",
            "1",
            "--only-method",
            "global",
            "--out",
            out.to_str().unwrap(),
        ];
        args.extend(extra);
        common::command(&args, &dir)
            .env(fedcluster_testkit::DATA_ROOT_VAR, &root)
            .output()
            .unwrap()
    };
    let output = run(&["--only-setting", "synthetic"]);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let report = std::fs::read_to_string(out.join("report.md")).unwrap();
    let verdicts = section(&report, "## Verdicts");
    for (label, how) in [
        (CIFAR_LABEL, "pass --cifar-dir DIR"),
        (FEMNIST_LABEL, "pass --femnist-dir DIR"),
    ] {
        let line = verdicts
            .lines()
            .find(|l| l.starts_with(&format!("- **{label}**: ")))
            .unwrap_or_else(|| panic!("no verdict for {label}:\n{report}"));
        assert!(
            line.contains("not run: data absent here") && line.contains(how),
            "{line}"
        );
        assert!(
            report.contains(&format!("### {label}\n\nnot run")),
            "{report}"
        );
    }
    assert!(
        verdicts.contains("`fedcluster data fetch cifar10` downloads it"),
        "{verdicts}"
    );
    let ranks = section(&report, "## Ranks across settings");
    assert!(
        !ranks.contains("rotated-cifar") && !ranks.contains("femnist"),
        "{ranks}"
    );
    // Asked for by name without its files: refused, saying how to give them.
    let output = run(&["--only-setting", "femnist"]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success(), "{stderr}");
    assert!(
        stderr.contains("--only-setting femnist: not run: data absent here")
            && stderr.contains("--femnist-dir DIR"),
        "{stderr}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
