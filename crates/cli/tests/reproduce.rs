//! The reproduction harness on a tiny synthetic grid: every finished run is
//! saved, a re-run resumes, extra seeds are added, runs of another protocol
//! are refused, a diverged run is a result, and a killed `fedcluster
//! reproduce` loses at most the run in flight.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;
use std::time::{Duration, SystemTime};

use fedcluster_cli::reproduce::harness::{
    self, Claim, Column, ConfigFile, Experiment, Field, Gap, Layout, Method, Metric, Paper, Plot,
    RunOptions, Setting, TEN_PERCENT, Table, Tolerance, Tuned,
};
use fedcluster_data::DataView;

const BASE: ConfigFile = ConfigFile {
    path: "test.toml",
    text: r#"
seed = 1
rounds = 30
[data]
kind = "ifca-synthetic"
clients = 12
points_per_client = 40
test_points_per_client = 10
dim = 8
clusters = 2
noise_std = 0.1
separation = 1.0
[model]
kind = "linear"
[algorithm]
name = "ifca"
clusters = 2
lr = 0.2
restarts = 2
init = { kind = "gaussian", std = 1.0 }
"#,
};

fn setting(key: &str, noise: f64) -> Setting {
    Setting {
        key: key.into(),
        label: format!("σ = {noise}"),
        overrides: vec![format!("data.noise_std={noise}")],
        seed_offset: 0,
        paper: None,
        grid: None,
    }
}

fn method(
    key: &'static str,
    label: &'static str,
    overrides: &[&str],
    paper: &[Option<f64>],
) -> Method {
    Method {
        key,
        label,
        config: BASE,
        overrides: overrides.iter().map(|s| s.to_string()).collect(),
        per_setting: Vec::new(),
        paper: vec![Paper::plain(Metric::Final(Field::Misclustering), paper)],
        tuned: None,
        gaps: Vec::new(),
    }
}

fn experiment(seeds: usize, rounds: usize) -> Experiment {
    Experiment {
        name: "test-grid",
        title: "A tiny grid".into(),
        protocol: "IFCA and a global model on a small mixture.".into(),
        settings: vec![setting("low", 0.1), setting("high", 0.3)],
        methods: vec![
            method("ifca", "IFCA", &[], &[Some(0.0), Some(0.0)]),
            method(
                "global",
                "global",
                &["algorithm={ name = \"global\", aggregation = \"gradient\", lr = 0.2 }"],
                &[Some(0.5), None],
            ),
            method(
                "diverging",
                "IFCA at lr 1e6",
                &["algorithm.lr=1000000.0"],
                &[None, None],
            ),
        ],
        seeds,
        overrides: vec![format!("rounds={rounds}")],
        from_data: None,
        tables: vec![Table {
            title: "Misclustering".into(),
            columns: vec![
                Column {
                    header: "misclustering".into(),
                    metric: Metric::Final(Field::Misclustering),
                    tolerance: Tolerance::Absolute(0.015),
                },
                Column {
                    header: "parameter error".into(),
                    metric: Metric::BestReplica(Field::ParamError),
                    tolerance: TEN_PERCENT,
                },
            ],
            layout: Layout::Long,
            no_paper: None,
            claim: None,
        }],
        plots: vec![Plot::Curves {
            field: Field::ParamError,
            log10: true,
        }],
        curves: true,
        last_round_only: false,
        notes: Vec::new(),
        smoke: false,
        tune_by: None,
    }
}

fn temp_dir(tag: &str) -> PathBuf {
    let dir =
        std::env::temp_dir().join(format!("fedcluster-reproduce-{}-{tag}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

fn options(out: &Path) -> RunOptions {
    RunOptions {
        out: out.to_path_buf(),
        threads: 1,
        ..Default::default()
    }
}

/// Every finished run directory under `out` and the time it was written (a
/// `seed-N.partial` being saved when the run was killed is not finished).
fn finished(out: &Path) -> Vec<(PathBuf, SystemTime)> {
    let mut runs = Vec::new();
    let Ok(settings) = std::fs::read_dir(out.join("runs")) else {
        return runs;
    };
    for s in settings.flatten() {
        for m in std::fs::read_dir(s.path()).unwrap().flatten() {
            for seed in std::fs::read_dir(m.path()).unwrap().flatten() {
                if seed.path().extension().is_some_and(|e| e == "partial") {
                    continue;
                }
                let config = seed.path().join("config.toml");
                if let Ok(meta) = std::fs::metadata(&config) {
                    runs.push((seed.path(), meta.modified().unwrap()));
                }
            }
        }
    }
    runs.sort();
    runs
}

#[test]
fn the_grid_is_saved_resumed_extended_and_reported() {
    let out = temp_dir("grid");
    harness::run(&experiment(2, 30), &options(&out)).unwrap();
    let first = finished(&out);
    assert_eq!(first.len(), 2 * 3 * 2);
    let report = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(report.contains("## Verdicts"), "{report}");
    // IFCA recovers the clusters (paper 0): reproduced; the global model's one
    // model cannot (misclustering 0.5 is its floor here, the "paper" says 0.5).
    assert!(report.contains("| σ = 0.1 | IFCA "), "{report}");
    assert!(
        report.contains("12 finished runs, 4 of them diverged"),
        "{report}"
    );
    let results = std::fs::read_to_string(out.join("results.csv")).unwrap();
    assert_eq!(results.lines().count(), 1 + 12, "{results}");
    assert!(
        results
            .lines()
            .any(|l| l.starts_with("low,diverging,1,true")),
        "{results}"
    );
    assert!(out.join("parameter_error_low.svg").exists());
    assert!(
        std::fs::read_to_string(out.join("curves.csv"))
            .unwrap()
            .lines()
            .count()
            > 12
    );

    // Re-run: nothing runs again.
    std::thread::sleep(Duration::from_millis(20));
    harness::run(&experiment(2, 30), &options(&out)).unwrap();
    assert_eq!(finished(&out), first);

    // A run killed while saving left only `.partial`; a lost run left nothing.
    let lost = out.join("runs/high/ifca/seed-2");
    std::fs::remove_dir_all(&lost).unwrap();
    std::fs::create_dir_all(out.join("runs/high/ifca/seed-2.partial")).unwrap();
    std::fs::remove_dir_all(out.join("runs/low/global/seed-1")).unwrap();
    harness::run(&experiment(2, 30), &options(&out)).unwrap();
    let again = finished(&out);
    assert_eq!(again.len(), first.len());
    let redone: Vec<_> = again
        .iter()
        .filter(|r| !first.contains(r))
        .map(|r| r.0.clone())
        .collect();
    assert_eq!(
        redone,
        [
            out.join("runs/high/ifca/seed-2"),
            out.join("runs/low/global/seed-1")
        ]
    );
    assert!(!out.join("runs/high/ifca/seed-2.partial").exists());

    // More seeds add only the new ones; fewer keep the finished ones in the report.
    harness::run(&experiment(3, 30), &options(&out)).unwrap();
    let three = finished(&out);
    assert_eq!(three.len(), 2 * 3 * 3);
    assert!(
        three
            .iter()
            .filter(|r| !again.contains(r))
            .all(|r| r.0.ends_with("seed-3"))
    );
    harness::run(&experiment(1, 30), &options(&out)).unwrap();
    assert!(
        std::fs::read_to_string(out.join("report.md"))
            .unwrap()
            .contains("18 finished runs")
    );

    // Another protocol in the same directory is refused, naming the run.
    let e = harness::run(&experiment(1, 31), &options(&out)).unwrap_err();
    assert!(format!("{e:#}").contains("another protocol"), "{e:#}");
    let _ = std::fs::remove_dir_all(&out);
}

#[test]
fn a_grid_saving_the_last_round_only_reports_the_same_numbers() {
    let (every, last) = (temp_dir("every-round"), temp_dir("last-round"));
    let full = experiment(1, 6);
    let mut thin = experiment(1, 6);
    thin.last_round_only = true;
    thin.curves = false;
    harness::run(&full, &options(&every)).unwrap();
    harness::run(&thin, &options(&last)).unwrap();
    let run = "runs/low/ifca/seed-1";
    let rows = |out: &Path, file: &str| {
        let text = std::fs::read_to_string(out.join(run).join(file)).unwrap();
        text.lines().skip(1).map(str::to_owned).collect::<Vec<_>>()
    };
    for file in ["metrics.csv", "timing.csv"] {
        let (all, kept) = (rows(&every, file), rows(&last, file));
        assert_eq!(all.len(), 6, "{file}");
        assert_eq!(kept.len(), 1, "{file}");
        let tail = |row: &str| row.split_once(',').map(|(round, _)| round.to_owned());
        assert_eq!(
            tail(&kept[0]),
            tail(&all[5]),
            "{file}: the last round is kept"
        );
    }
    let summary = |out: &Path| {
        let text = std::fs::read_to_string(out.join(run).join("summary.json")).unwrap();
        serde_json::from_str::<serde_json::Value>(&text).unwrap()
    };
    let (a, b) = (summary(&every), summary(&last));
    assert_eq!(b["rounds"], 6, "the summary counts every round");
    assert_eq!(a["final"], b["final"]);
    assert_eq!(a["replicas"], b["replicas"]);
    let results = |out: &Path| std::fs::read_to_string(out.join("results.csv")).unwrap();
    let without_seconds = |text: String| {
        text.lines()
            .map(|l| {
                l.split(',')
                    .enumerate()
                    .filter(|(i, _)| *i != 5)
                    .map(|(_, f)| f)
                    .collect::<Vec<_>>()
                    .join(",")
            })
            .collect::<Vec<_>>()
    };
    assert_eq!(
        without_seconds(results(&every)),
        without_seconds(results(&last))
    );
    let _ = std::fs::remove_dir_all(&every);
    let _ = std::fs::remove_dir_all(&last);
}

#[test]
fn unknown_settings_and_methods_are_refused_with_the_known_ones() {
    let out = temp_dir("unknown");
    let o = RunOptions {
        only_methods: vec!["nope".into()],
        ..options(&out)
    };
    let e = format!("{:#}", harness::run(&experiment(1, 5), &o).unwrap_err());
    assert!(
        e.contains("--only-method nope") && e.contains("ifca, global, diverging"),
        "{e}"
    );
    let o = RunOptions {
        only_settings: vec!["mid".into()],
        ..options(&out)
    };
    let e = format!("{:#}", harness::run(&experiment(1, 5), &o).unwrap_err());
    assert!(
        e.contains("--only-setting mid") && e.contains("low, high"),
        "{e}"
    );
    let o = RunOptions {
        only_seeds: vec![3],
        ..options(&out)
    };
    let e = format!("{:#}", harness::run(&experiment(2, 5), &o).unwrap_err());
    assert!(
        e.contains("--only-seed 3") && e.contains("seeds 1 to 2"),
        "{e}"
    );
    assert!(!out.exists());
}

/// `--only-seed` runs that seed alone, so two processes can share a grid's
/// seeds; the report still covers every finished run.
#[test]
fn only_the_seeds_asked_for_are_run() {
    let out = temp_dir("only-seed");
    let o = RunOptions {
        only_seeds: vec![2],
        only_methods: vec!["ifca".into()],
        ..options(&out)
    };
    harness::run(&experiment(2, 5), &o).unwrap();
    let runs: Vec<PathBuf> = finished(&out).into_iter().map(|r| r.0).collect();
    assert_eq!(
        runs,
        [
            out.join("runs/high/ifca/seed-2"),
            out.join("runs/low/ifca/seed-2")
        ]
    );
    let _ = std::fs::remove_dir_all(&out);
}

/// The run "another command" saves while `a_run_saved_by_another_command_meanwhile_is_reported`
/// runs: (where it was saved, where it appears).
static ANOTHER_COMMANDS_RUN: Mutex<Option<(PathBuf, PathBuf)>> = Mutex::new(None);

/// Stands for a second `fedcluster reproduce` sharing the output directory:
/// the first time the harness derives overrides from a data set (as its first
/// run starts), a finished run of the other command appears.
fn another_command_saves_a_run(_: &DataView<'_>) -> Vec<String> {
    if let Some((from, to)) = ANOTHER_COMMANDS_RUN.lock().unwrap().take() {
        copy_dir(&from, &to);
    }
    Vec::new()
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap().flatten() {
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

/// Two commands share `--out` (one per core): the one finishing last reports
/// the other's runs too, even those saved after it started, and no report
/// file is left half-written.
#[test]
fn a_run_saved_by_another_command_meanwhile_is_reported() {
    let (other, out) = (temp_dir("other-command"), temp_dir("this-command"));
    let one_cell = RunOptions {
        only_settings: vec!["low".into()],
        only_methods: vec!["ifca".into()],
        only_seeds: vec![2],
        ..options(&other)
    };
    harness::run(&experiment(2, 5), &one_cell).unwrap();
    let run = "runs/low/ifca/seed-2";
    *ANOTHER_COMMANDS_RUN.lock().unwrap() = Some((other.join(run), out.join(run)));
    let mut this = experiment(2, 5);
    this.from_data = Some(another_command_saves_a_run);
    let seed_one = RunOptions {
        only_seeds: vec![1],
        ..options(&out)
    };
    harness::run(&this, &seed_one).unwrap();
    assert!(
        ANOTHER_COMMANDS_RUN.lock().unwrap().is_none(),
        "never planted"
    );

    let results = std::fs::read_to_string(out.join("results.csv")).unwrap();
    assert_eq!(results.lines().count(), 1 + 2 * 3 + 1, "{results}");
    assert!(
        results.lines().any(|l| l.starts_with("low,ifca,2,")),
        "{results}"
    );
    let report = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(report.contains("7 finished runs"), "{report}");
    let partial: Vec<_> = std::fs::read_dir(&out)
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().ends_with(".partial"))
        .collect();
    assert!(partial.is_empty(), "{partial:?}");
    let _ = std::fs::remove_dir_all(&other);
    let _ = std::fs::remove_dir_all(&out);
}

/// A cell outside the paper's tolerance is listed in the verdict with the
/// reason the experiment gives for it, where it gives one.
#[test]
fn a_cell_off_the_paper_is_listed_with_its_established_reason() {
    let out = temp_dir("gaps");
    let mut exp = experiment(1, 5);
    let misclustering = Metric::Final(Field::Misclustering);
    // No run misclusters 90% of two clusters: both IFCA cells are off.
    exp.methods[0].paper = vec![Paper::plain(misclustering, &[Some(0.9), Some(0.9)])];
    exp.methods[0].gaps = vec![Gap {
        setting: 0,
        metric: misclustering,
        why: "the paper's number is made up here",
    }];
    let o = RunOptions {
        only_methods: vec!["ifca".into()],
        ..options(&out)
    };
    harness::run(&exp, &o).unwrap();
    let report = std::fs::read_to_string(out.join("report.md")).unwrap();
    let verdict = report
        .lines()
        .find(|l| l.starts_with("- **Misclustering**"))
        .unwrap();
    let cells: Vec<&str> = verdict.split("; ").collect();
    assert_eq!(cells.len(), 2, "{verdict}");
    assert!(
        cells[0].contains("σ = 0.1 / IFCA / misclustering: "),
        "{verdict}"
    );
    assert!(
        cells[0].ends_with(" vs 0.90: the paper's number is made up here"),
        "{verdict}"
    );
    assert!(
        cells[1].starts_with("σ = 0.3 / IFCA / misclustering: "),
        "{verdict}"
    );
    assert!(cells[1].ends_with(" vs 0.90)"), "{verdict}");
    // A smoke run's gaps are its own: no reason is printed.
    exp.smoke = true;
    harness::run(&exp, &o).unwrap();
    let report = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(!report.contains("made up"), "{report}");
    let _ = std::fs::remove_dir_all(&out);
}

/// A column read at a round takes that round's row of `metrics.csv`, and a
/// claim with no reference to match checks only the ordering of the means.
#[test]
fn a_value_at_a_round_and_a_claim_without_a_reference_come_from_the_runs() {
    let out = temp_dir("at-round");
    let mut exp = experiment(1, 6);
    exp.settings.truncate(1);
    exp.methods.truncate(2);
    exp.tables = vec![Table {
        title: "Early loss".into(),
        columns: vec![Column::new(
            "training loss, round 3",
            Metric::AtRound(Field::TrainLoss, 3),
            TEN_PERCENT,
        )],
        no_paper: Some("curves only".into()),
        claim: Some(Claim {
            method: "ifca",
            like: None,
            beats: &["global"],
        }),
        ..Default::default()
    }];
    harness::run(&exp, &options(&out)).unwrap();
    let loss_at_round_3 = |method: &str| -> f64 {
        let path = out.join(format!("runs/low/{method}/seed-1/metrics.csv"));
        let text = std::fs::read_to_string(path).unwrap();
        let header: Vec<&str> = text.lines().next().unwrap().split(',').collect();
        let column = header.iter().position(|h| *h == "train_loss").unwrap();
        let row = text.lines().find(|l| l.starts_with("2,")).unwrap();
        row.split(',').nth(column).unwrap().parse().unwrap()
    };
    let (ifca, global) = (loss_at_round_3("ifca"), loss_at_round_3("global"));
    let report = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(report.contains(&format!("{ifca:.4}")), "{report}");
    assert!(report.contains(&format!("{global:.4}")), "{report}");
    let expected = if ifca < global {
        format!(
            "σ = 0.1: reproduced (IFCA {ifca:.4} over 1 seed(s); better than global {global:.4})"
        )
    } else {
        format!(
            "σ = 0.1: not reproduced (IFCA {ifca:.4} over 1 seed(s); not better than global {global:.4})"
        )
    };
    assert!(report.contains(&expected), "{expected}\n{report}");
    let _ = std::fs::remove_dir_all(&out);
}

/// A family tuned over K by parameter error (lower is better): its headline
/// row is the best variant's, beside the paper's number given on the first
/// variant; each variant has its own row; a tie keeps the first variant.
/// (On this seed IFCA with K = 2 merges the clusters and ends farther from
/// the true models than the single model, K = 1.)
#[test]
fn a_tuned_family_is_headed_by_its_best_variant_and_a_tie_keeps_the_first() {
    let out = temp_dir("tuned");
    let metric = Metric::Final(Field::ParamError);
    let variant = |key: &'static str, value: &str, clusters: usize, paper: Option<f64>| {
        let k = format!("algorithm.clusters={clusters}");
        Method {
            tuned: Some(Tuned {
                family: "IFCA",
                value: value.to_string(),
            }),
            paper: vec![Paper::plain(metric, &[paper])],
            ..method(key, "IFCA", &[k.as_str()], &[None])
        }
    };
    let exp = Experiment {
        settings: vec![setting("low", 0.1)],
        methods: vec![
            variant("k2", "K = 2", 2, Some(0.6)),
            variant("k1", "K = 1", 1, None),
            variant("k1-again", "K = 1 again", 1, None),
        ],
        tune_by: Some(metric),
        tables: vec![Table {
            title: "Parameter error".into(),
            columns: vec![Column {
                header: "parameter error".into(),
                metric,
                tolerance: TEN_PERCENT,
            }],
            layout: Layout::Long,
            no_paper: None,
            claim: None,
        }],
        plots: Vec::new(),
        ..experiment(1, 30)
    };
    harness::run(&exp, &options(&out)).unwrap();
    let report = std::fs::read_to_string(out.join("report.md")).unwrap();
    // Columns: setting, method, ours, paper, seeds, verdict.
    let cell = |label: &str, column: usize| -> &str {
        let row = report.lines().find(|l| l.contains(&format!("| {label} ")));
        let row = row.unwrap_or_else(|| panic!("no row {label} in\n{report}"));
        row.split('|').nth(column + 1).unwrap().trim()
    };
    let value = |label: &str| -> f64 { cell(label, 2).parse().unwrap() };
    assert!(value("IFCA, K = 1") < value("IFCA, K = 2"), "{report}");
    assert_eq!(
        value("IFCA (best: K = 1)"),
        value("IFCA, K = 1"),
        "{report}"
    );
    assert_eq!(value("IFCA, K = 1 again"), value("IFCA, K = 1"), "{report}");
    assert_eq!(cell("IFCA (best: K = 1)", 3), "0.6000", "{report}");
    assert_eq!(cell("IFCA (best: K = 1)", 5), "reproduced", "{report}");
    assert_eq!(cell("IFCA, K = 2", 3), "-", "{report}");
    assert_eq!(cell("IFCA, K = 2", 5), "-", "{report}");
    let _ = std::fs::remove_dir_all(&out);
}

fn fedcluster(args: &[&str]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_fedcluster"));
    c.args(args);
    c
}

#[test]
fn flags_an_experiment_does_not_take_are_refused() {
    let out = fedcluster(&["reproduce", "mixed-regression", "--trials", "3"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2));
    assert!(err.contains("unexpected argument '--trials'"), "{err}");
    let out = fedcluster(&["reproduce", "srfca-mnist", "--quick"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains("--data-dir"), "{err}");
}

/// `fedcluster reproduce` killed with SIGKILL mid-way, then run again with the
/// same `--out`: the runs finished before the kill are kept as they are, the
/// rest run, and the report covers all of them.
#[test]
fn a_killed_reproduction_resumes_without_redoing_finished_runs() {
    let out = temp_dir("killed");
    let args = [
        "reproduce",
        "mixed-regression",
        "--only-setting",
        "a",
        "--rounds",
        "2",
        "--seeds",
        "3",
        "--threads",
        "1",
        "--out",
    ];
    let out_arg = out.display().to_string();
    let mut child = fedcluster(&args).arg(&out_arg).spawn().unwrap();
    let start = std::time::Instant::now();
    while finished(&out).len() < 3 && start.elapsed() < Duration::from_secs(120) {
        std::thread::sleep(Duration::from_millis(5));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    let before = finished(&out);
    assert!(
        before.len() >= 3 && before.len() < 8 * 3,
        "{} finished at the kill",
        before.len()
    );
    let status = fedcluster(&args).arg(&out_arg).output().unwrap();
    assert!(
        status.status.success(),
        "{}",
        String::from_utf8_lossy(&status.stderr)
    );
    let after = finished(&out);
    assert_eq!(after.len(), 8 * 3);
    assert!(
        before.iter().all(|r| after.contains(r)),
        "a finished run was redone"
    );
    let report = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(report.contains("24 finished runs"), "{report}");
    let _ = std::fs::remove_dir_all(&out);
}
