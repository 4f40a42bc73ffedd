//! The reproduction harness on a tiny synthetic grid: every finished run is
//! saved, a re-run resumes, extra seeds are added, runs of another protocol
//! are refused, a diverged run is a result, and a killed `fedcluster
//! reproduce` loses at most the run in flight, and the run in flight resumes
//! from its last checkpoint; `reproduce/reports.rs`: what the report says.

#[path = "reproduce/fixture.rs"]
mod fixture;
#[path = "reproduce/reports.rs"]
mod reports;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use fedcluster_cli::reproduce::harness::{self, RunOptions};

use fixture::{experiment, finished, options, temp_dir};

#[test]
fn the_grid_is_saved_resumed_extended_and_reported() {
    let out = temp_dir("grid");
    harness::run(&experiment(2, 30), &options(&out)).unwrap();
    let first = finished(&out);
    assert_eq!(first.len(), 2 * 3 * 2);
    let report = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(report.contains("## Verdicts"), "{report}");
    // The paper's claims, checked, between the verdicts and the protocol.
    let claims = report.find("## Claims").expect("a Claims section");
    assert!(report.find("## Verdicts") < Some(claims), "{report}");
    assert!(Some(claims) < report.find("## Protocol"), "{report}");
    assert!(
        report.contains(
            "- \"IFCA finds the clusters a global model cannot\" (the fixture's Table). **holds**: "
        ),
        "{report}"
    );
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
        e.contains("--only-seed/--only-trial 3") && e.contains("seeds 1 to 2"),
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

fn fedcluster(args: &[&str]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_fedcluster"));
    c.args(args);
    c
}

/// Fig. 3's `--only-trial` selects data sets as `--only-seed` selects seeds:
/// one outside `--trials` is refused before anything runs.
#[test]
fn fig3_trials_outside_the_panel_are_refused() {
    let out = temp_dir("only-trial");
    let dir = out.to_str().unwrap();
    let run = fedcluster(&[
        "reproduce",
        "ifca-synthetic-success",
        "--panel",
        "c",
        "--trials",
        "2",
        "--only-trial",
        "3",
        "--out",
        dir,
    ])
    .output()
    .unwrap();
    let err = String::from_utf8_lossy(&run.stderr);
    assert!(
        !run.status.success() && err.contains("--only-trial 3") && err.contains("seeds 1 to 2"),
        "{err}"
    );
    assert!(!out.exists());
}

#[test]
fn flags_an_experiment_does_not_take_are_refused() {
    let out = fedcluster(&["reproduce", "mixed-regression", "--trials", "3"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2));
    assert!(err.contains("unexpected argument '--trials'"), "{err}");
}

/// Without `--data-dir`, a reproduction on real data finds it where `fedcluster
/// run` does (`$FEDCLUSTER_DATA/mnist`, else `data/mnist`): here neither, so it
/// stops on the missing-data line, naming the flag.
#[test]
fn a_reproduction_without_its_data_names_every_way_to_give_it() {
    let dir = temp_dir("no-data");
    std::fs::create_dir_all(&dir).unwrap();
    let out = fedcluster(&["reproduce", "srfca-mnist", "--quick", "--out", "out"])
        .current_dir(&dir)
        .env_remove("FEDCLUSTER_DATA")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success()
            && err.contains("MNIST: no data in data/mnist")
            && err.contains("--data-dir DIR")
            && err.contains("FEDCLUSTER_DATA"),
        "{err}"
    );
    let _ = std::fs::remove_dir_all(&dir);
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
    // Its stderr is no terminal, so lines stand in for the bar: each run's
    // start and end, and where it was saved.
    let log = String::from_utf8_lossy(&status.stderr);
    let todo = after.len() - before.len();
    assert_eq!(log.matches(": started").count(), todo, "{log}");
    assert_eq!(log.matches(": finished after ").count(), todo, "{log}");
    assert_eq!(log.matches(", saved in ").count(), todo, "{log}");
    assert!(log.contains(&format!("run {todo}/{todo}: a · ")), "{log}");
    let report = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(report.contains("24 finished runs"), "{report}");
    let _ = std::fs::remove_dir_all(&out);
}

/// `reproduce mixed-regression`'s IFCA alone, seed 1, for `rounds`, with
/// `extra` flags, into `out`.
fn ifca_alone(rounds: &str, out: &Path, extra: &[&str]) -> Vec<String> {
    [
        "reproduce",
        "mixed-regression",
        "--only-setting",
        "a",
        "--only-method",
        "ifca",
        "--rounds",
        rounds,
        "--seeds",
        "1",
    ]
    .iter()
    .chain(extra)
    .map(|a| a.to_string())
    .chain(["--out".into(), out.display().to_string()])
    .collect()
}

/// [`ifca_alone`], long (3,000 rounds on one thread, checkpointed every 100).
fn long_ifca(out: &Path, extra: &[&str]) -> Vec<String> {
    let long = ["--threads", "1", "--checkpoint-every", "100"];
    let flags: Vec<&str> = long.iter().chain(extra).copied().collect();
    ifca_alone("3000", out, &flags)
}

/// Runs `args` and kills it once `checkpoint` is on disk (or after 2 min).
fn kill_once_checkpointed(args: &[String], checkpoint: &Path) {
    let mut child = fedcluster(&[]).args(args).spawn().unwrap();
    let start = std::time::Instant::now();
    while !checkpoint.exists() && start.elapsed() < Duration::from_secs(120) {
        std::thread::sleep(Duration::from_millis(1));
    }
    child.kill().unwrap();
    child.wait().unwrap();
}

/// A run killed with SIGKILL mid-way resumes from its checkpoint in
/// `<run dir>.checkpoint/` and saves, byte for byte, the `metrics.csv` of the
/// run that was never interrupted; the checkpoint is removed once it is saved.
#[test]
fn a_run_killed_mid_way_resumes_from_its_checkpoint() {
    let args = |out: &Path| long_ifca(out, &[]);
    let killed = temp_dir("killed-mid-run");
    let run = killed.join("runs/a/ifca/seed-1");
    let checkpoint = killed.join("runs/a/ifca/seed-1.checkpoint/checkpoint.bin");
    kill_once_checkpointed(&args(&killed), &checkpoint);
    assert!(
        checkpoint.exists() && !run.join("metrics.csv").exists(),
        "the kill should land after a checkpoint and before the run is saved"
    );
    let resumed = fedcluster(&[]).args(args(&killed)).output().unwrap();
    let log = String::from_utf8_lossy(&resumed.stderr);
    assert!(resumed.status.success(), "{log}");
    assert!(log.contains(": resuming from "), "{log}");
    assert!(
        !checkpoint.parent().unwrap().exists(),
        "checkpoint left behind"
    );
    same_as_never_killed(killed, "never-killed", &args);
}

/// Asserts that the run `args` wrote into `killed` (resumed) saved the
/// `metrics.csv` of `args` run uninterrupted into a fresh directory `name`,
/// byte for byte; removes both directories.
fn same_as_never_killed(killed: PathBuf, name: &str, args: &dyn Fn(&Path) -> Vec<String>) {
    let whole = temp_dir(name);
    let status = fedcluster(&[]).args(args(&whole)).output().unwrap();
    assert!(status.status.success());
    let metrics = |out: &Path| std::fs::read(out.join("runs/a/ifca/seed-1/metrics.csv")).unwrap();
    assert!(
        metrics(&killed) == metrics(&whole),
        "the resumed run differs"
    );
    for out in [killed, whole] {
        let _ = std::fs::remove_dir_all(out);
    }
}

/// `--checkpoint-within-rounds` on 2 threads: a run killed once a part of a
/// round is on disk (`checkpoint.part.bin`, written after each client a
/// thread) resumes from that part, without the flag and on one thread, and
/// saves the never-killed run's `metrics.csv`, byte for byte.
#[test]
fn a_run_killed_within_a_round_resumes_from_its_part() {
    let killed = temp_dir("killed-within-round");
    let dir = killed.join("runs/a/ifca/seed-1.checkpoint");
    let within = ["--threads", "2", "--checkpoint-within-rounds"];
    kill_once_checkpointed(
        &ifca_alone("300", &killed, &within),
        &dir.join("checkpoint.part.bin"),
    );
    assert!(
        dir.join("checkpoint.part.bin").exists()
            && !killed.join("runs/a/ifca/seed-1/metrics.csv").exists(),
        "the kill should land within a round, before the run is saved"
    );
    let resumed = fedcluster(&[])
        .args(ifca_alone("300", &killed, &["--threads", "1"]))
        .output()
        .unwrap();
    let log = String::from_utf8_lossy(&resumed.stderr);
    assert!(resumed.status.success(), "{log}");
    assert!(log.contains(": resuming from "), "{log}");
    same_as_never_killed(killed, "never-killed-within", &|out| {
        ifca_alone("300", out, &[])
    });
}

/// A checkpoint that does not belong to the run (damaged, or of another
/// protocol) is refused naming it and how to start the run over, never
/// resumed into a different result.
#[test]
fn a_damaged_checkpoint_is_refused_naming_it() {
    let out = temp_dir("damaged-checkpoint");
    let dir = out.join("runs/a/ifca/seed-1.checkpoint");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("checkpoint.bin"), b"not a checkpoint").unwrap();
    let status = fedcluster(&[])
        .args(ifca_alone("3", &out, &[]))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&status.stderr);
    assert!(!status.status.success(), "{err}");
    assert!(err.contains("checkpoint.bin"), "{err}");
    assert!(err.contains("to start it over"), "{err}");
    let _ = std::fs::remove_dir_all(&out);
}

/// `--fork-from ifca=DIR` with DIR a copy of the ifca run's own checkpoint,
/// taken from a killed run: a fresh `--out` starts from it ("forking from"),
/// ends where the never-killed run ends, byte for byte, keeps a note of the
/// rounds that ran in the source (sealed with the run), and leaves the copy
/// as it was; a fork from another method's config is refused naming why,
/// and a bad `--fork-from` value or method is refused before anything runs.
#[test]
fn a_run_forked_from_a_copy_of_its_checkpoint_ends_where_the_run_ends() {
    let killed = temp_dir("fork-source");
    let checkpoint = killed.join("runs/a/ifca/seed-1.checkpoint/checkpoint.bin");
    kill_once_checkpointed(&long_ifca(&killed, &[]), &checkpoint);
    let copy = killed.join("copy.checkpoint");
    std::fs::create_dir_all(&copy).unwrap();
    std::fs::copy(&checkpoint, copy.join("checkpoint.bin")).unwrap();
    let before = std::fs::read(copy.join("checkpoint.bin")).unwrap();
    let fork_from = format!("ifca={}", copy.display());

    let forked = temp_dir("forked");
    let run = fedcluster(&[])
        .args(long_ifca(&forked, &["--fork-from", &fork_from]))
        .output()
        .unwrap();
    let log = String::from_utf8_lossy(&run.stderr);
    assert!(run.status.success(), "{log}");
    assert!(log.contains(": forking from "), "{log}");
    assert_eq!(std::fs::read(copy.join("checkpoint.bin")).unwrap(), before);
    let whole = temp_dir("never-forked");
    assert!(
        fedcluster(&[])
            .args(long_ifca(&whole, &[]))
            .output()
            .unwrap()
            .status
            .success()
    );
    let metrics = |out: &Path| std::fs::read(out.join("runs/a/ifca/seed-1/metrics.csv")).unwrap();
    assert!(
        metrics(&forked) == metrics(&whole),
        "the forked run differs"
    );
    let note = |out: &Path| std::fs::read_to_string(out.join("runs/a/ifca/seed-1/forked-from.txt"));
    let forked_note = note(&forked).unwrap();
    let source = format!("source: {}", copy.join("checkpoint.bin").display());
    assert!(forked_note.contains(&source), "{forked_note}");
    assert!(forked_note.contains("\nran there: "), "{forked_note}");
    assert!(note(&whole).is_err(), "a run never forked has a fork note");

    let refused = |extra: &[&str]| {
        let out = temp_dir("fork-refused");
        let o = fedcluster(&[])
            .args(long_ifca(&out, extra))
            .output()
            .unwrap();
        assert!(!o.status.success());
        assert!(!out.join("runs/a/ifca/seed-1/metrics.csv").exists());
        let _ = std::fs::remove_dir_all(&out);
        String::from_utf8_lossy(&o.stderr).into_owned()
    };
    let other = format!("oracle={}", copy.display());
    let e = refused(&["--fork-from", &other]);
    assert!(
        e.contains("copy.checkpoint") && e.contains("not the checkpoint of the method forked from"),
        "{e}"
    );
    let e = refused(&["--fork-from", "ifca"]);
    assert!(e.contains("expected METHOD=DIR"), "{e}");
    let nope = format!("nope={}", copy.display());
    let e = refused(&["--fork-from", &nope]);
    assert!(e.contains("has no such method; known: two-phase-s1"), "{e}");
    for out in [killed, forked, whole] {
        let _ = std::fs::remove_dir_all(out);
    }
}
