//! `fedcluster reproduce clustered-benchmark --quick` on the synthetic
//! mixture alone (no data files needed): the search, the chosen candidates on
//! test, and a report with the table, ranks, costs, search budget and
//! verdicts; a re-run resumes.

use std::path::PathBuf;

use fedcluster_cli::reproduce::experiments::Protocol;
use fedcluster_cli::reproduce::experiments::clustered_benchmark::{OptionalData, run};
use fedcluster_cli::reproduce::harness::RunOptions;

fn options(tag: &str, methods: &[&str]) -> RunOptions {
    let out = std::env::temp_dir().join(format!(
        "fedcluster-clustered-benchmark-{}-{tag}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&out);
    RunOptions {
        out,
        threads: 1,
        only_settings: vec!["synthetic".into()],
        only_methods: methods.iter().map(|m| m.to_string()).collect(),
        ..Default::default()
    }
}

fn quick() -> Protocol {
    Protocol {
        quick: true,
        ..Default::default()
    }
}

fn runs_under(dir: PathBuf) -> usize {
    std::fs::read_dir(dir).map_or(0, |d| d.count())
}

#[test]
fn quick_benchmark_ranks_the_tuned_methods_with_their_costs_and_budget() {
    let o = options("quick", &["ifca", "global"]);
    run(&quick(), &OptionalData::default(), &o).unwrap();
    let report = std::fs::read_to_string(o.out.join("report.md")).unwrap();
    for section in [
        "## Verdicts",
        "## Protocol",
        "## Results per setting",
        "### synthetic mixture",
        "## Ranks across settings",
        "## Search budget",
        "## Not included",
    ] {
        assert!(report.contains(section), "{section} missing:\n{report}");
    }
    // The table: rank, method, its chosen candidate, accuracy and costs.
    for column in [
        "| rank ",
        "| chosen candidate ",
        "| accuracy % (last round) ",
        "| best round % ",
        "| MB on the wire ",
        "| seconds ",
    ] {
        assert!(report.contains(column), "{column} missing:\n{report}");
    }
    assert!(report.contains("| 1    |"), "{report}");
    assert!(
        report.contains("| IFCA ") && report.contains("| FedAvg (global) "),
        "{report}"
    );
    // The budget: the same six candidates for each, each run once.
    assert!(report.contains("6 candidate configurations"), "{report}");
    assert!(
        report.contains("lr in {0.03, 0.1, 0.3} x K in {2, 4}"),
        "{report}"
    );
    assert!(
        report.contains("more than 2 pooled standard deviations"),
        "{report}"
    );
    // Search: 2 methods x 6 candidates, seed 1 (the search federation);
    // test: the 2 winners x 3 seeds.
    let search = o.out.join("search/runs/synthetic");
    let searched: usize = ["ifca", "global"]
        .iter()
        .map(|m| {
            std::fs::read_dir(&search)
                .unwrap()
                .flatten()
                .filter(|e| e.file_name().to_string_lossy().starts_with(m))
                .count()
        })
        .sum();
    assert_eq!(searched, 12);
    assert_eq!(runs_under(o.out.join("test/runs/synthetic")), 2);
    let results = std::fs::read_to_string(o.out.join("results.csv")).unwrap();
    assert_eq!(results.lines().count(), 1 + 2 * 3, "{results}");
    assert!(
        results.starts_with("setting,method,candidate,seed,"),
        "{results}"
    );
    // A re-run resumes: nothing runs again, the same report.
    run(&quick(), &OptionalData::default(), &o).unwrap();
    assert_eq!(
        std::fs::read_to_string(o.out.join("report.md")).unwrap(),
        report
    );
    let _ = std::fs::remove_dir_all(&o.out);
}

#[test]
fn an_unknown_method_is_refused_by_name() {
    let o = options("unknown", &["ifcaa"]);
    let e = run(&quick(), &OptionalData::default(), &o).unwrap_err();
    let e = format!("{e:#}");
    assert!(
        e.contains("--only-method ifcaa") && e.contains("fedrc"),
        "{e}"
    );
}
