//! Fault injection on every kind of state file fedcluster writes and later
//! trusts: a run's `checkpoint.bin` and `checkpoint.part.bin`, a coordinator's round files, the
//! finished runs of a reproduction and the data sets `fedcluster data` writes. Each file is damaged every way
//! (single-bit flips at seeded positions, cut short at several lengths, two
//! files swapped, replaced by a FIFO or a directory), the run is resumed, and
//! every case must end in a refusal or in the uninterrupted run's result,
//! never in a different one. The counts are printed (`--nocapture`).

#[path = "fault_injection/cases.rs"]
mod cases;
mod common;
#[path = "fault_injection/data.rs"]
mod data;
#[path = "reproduce/fixture.rs"]
#[allow(dead_code)]
mod fixture;
#[path = "fault_injection/net.rs"]
mod net;

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use cases::{Counts, Fault, copy_dir, damage, faults};
use common::{fedcluster, scratch, small};

const IFCA_ADAM: &str = "name = \"ifca\"\nclusters = 2\nlr = 0.01\naggregation = \"model\"\n\
    local_steps = 2\nrestarts = 3\nparticipation = 0.5\n\
    optimizer = { kind = \"adam\", batch_size = 10 }";

/// `DIR.partial` of a run of `args` killed once its checkpoint has been
/// written a few times, copied to `snapshot`.
fn killed_run(dir: &Path, args: &[&str], out: &str, snapshot: &str) {
    killed_once(dir, args, out, "checkpoint.bin", snapshot);
}

/// `DIR.partial` of a run of `args` killed once `file` has been written in
/// it a few times, copied to `snapshot`. A run killed when `file` is not
/// there (a part file between a round's start and its first part) is run
/// again from scratch, up to 20 times.
fn killed_once(dir: &Path, args: &[&str], out: &str, file: &str, snapshot: &str) {
    let partial = dir.join(format!("{out}.partial"));
    let checkpoint = partial.join(file);
    for _ in 0..20 {
        let _ = std::fs::remove_dir_all(&partial);
        let mut child = Command::new(env!("CARGO_BIN_EXE_fedcluster"))
            .args(args)
            .current_dir(dir)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let deadline = Instant::now() + Duration::from_secs(30);
        while !checkpoint.exists() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(1));
        }
        std::thread::sleep(Duration::from_millis(100));
        let _ = child.kill();
        let _ = child.wait();
        if checkpoint.exists() {
            copy_dir(&partial, &dir.join(snapshot));
            return;
        }
    }
    panic!("no {file} written");
}

/// A scratch directory `name` holding `cfg.toml` (IFCA with Adam clients,
/// 1,000 rounds) and its uninterrupted run, `full`.
fn with_full_run(name: &str) -> std::path::PathBuf {
    let dir = scratch(name);
    std::fs::write(dir.join("cfg.toml"), small(IFCA_ADAM, 1000)).unwrap();
    let full = fedcluster(&["run", "cfg.toml", "-q", "--out", "full"], &dir);
    assert!(full.status.success());
    dir
}

#[test]
fn a_damaged_run_checkpoint_is_refused_or_resumes_to_the_same_result() {
    let dir = with_full_run("fault-checkpoint");
    let base = ["run", "cfg.toml", "-q", "--checkpoint-every", "1", "--out"];
    let args = |out: &'static str| -> Vec<&str> { base.iter().copied().chain([out]).collect() };
    killed_run(&dir, &args("a"), "a", "snap");
    // Another run's checkpoint, to swap in.
    let mut other = args("b");
    other.extend(["--set", "seed=8"]);
    killed_run(&dir, &other, "b", "other");
    // Undamaged, the checkpoint resumes to the uninterrupted result.
    copy_dir(&dir.join("snap"), &dir.join("control.partial"));
    let o = fedcluster(
        &["run", "cfg.toml", "-q", "--out", "control", "--resume"],
        &dir,
    );
    for f in ["metrics.csv", "replicas.csv"] {
        let (got, want) = (dir.join("control").join(f), dir.join("full").join(f));
        let same = std::fs::read(got).ok() == std::fs::read(want).ok();
        assert!(same, "{f}: {}", String::from_utf8_lossy(&o.stderr));
    }
    let checkpoint = dir.join("snap/checkpoint.bin");
    let len = std::fs::metadata(&checkpoint).unwrap().len();
    let mut counts = Counts::default();
    for (i, fault) in faults(len, 0xC0FFEE).into_iter().enumerate() {
        let out = format!("c{i}");
        let partial = dir.join(format!("{out}.partial"));
        copy_dir(&dir.join("snap"), &partial);
        let swap = dir.join("other/checkpoint.bin");
        damage(&partial.join("checkpoint.bin"), &fault, &swap);
        let o = fedcluster(&["run", "cfg.toml", "-q", "--out", &out, "--resume"], &dir);
        let result = o.status.success().then(|| {
            ["metrics.csv", "replicas.csv"].map(|f| std::fs::read(dir.join(&out).join(f)).ok())
        });
        let expected =
            ["metrics.csv", "replicas.csv"].map(|f| std::fs::read(dir.join("full").join(f)).ok());
        let stderr = String::from_utf8_lossy(&o.stderr);
        counts.record(
            &format!("checkpoint.bin {fault:?}"),
            result.map(|r| r == expected),
            &stderr,
            "checkpoint.bin",
        );
        let _ = std::fs::remove_dir_all(dir.join(&out));
        let _ = std::fs::remove_dir_all(&partial);
    }
    counts.report("run checkpoint.bin");
    let _ = std::fs::remove_dir_all(&dir);
}

/// The part file of a round interrupted between its clients
/// (`--checkpoint-within-rounds`), damaged every way: refused naming it, or
/// (another run's, swapped in: its identity names another config) set
/// aside, the round run again from its start to the same result.
#[test]
fn a_damaged_part_file_is_refused_or_resumes_to_the_same_result() {
    let dir = with_full_run("fault-part");
    let base = [
        "run",
        "cfg.toml",
        "-q",
        "--checkpoint-within-rounds",
        "--out",
    ];
    let args = |out: &'static str| -> Vec<&str> { base.iter().copied().chain([out]).collect() };
    let part = "checkpoint.part.bin";
    killed_once(&dir, &args("a"), "a", part, "snap");
    let mut other = args("b");
    other.extend(["--set", "seed=8"]);
    killed_once(&dir, &other, "b", part, "other");
    let len = std::fs::metadata(dir.join("snap").join(part))
        .unwrap()
        .len();
    let expected =
        ["metrics.csv", "replicas.csv"].map(|f| std::fs::read(dir.join("full").join(f)).ok());
    let mut counts = Counts::default();
    for (i, fault) in faults(len, 0xFA57).into_iter().enumerate() {
        let out = format!("c{i}");
        let partial = dir.join(format!("{out}.partial"));
        copy_dir(&dir.join("snap"), &partial);
        damage(&partial.join(part), &fault, &dir.join("other").join(part));
        let o = fedcluster(&["run", "cfg.toml", "-q", "--out", &out, "--resume"], &dir);
        let result = o.status.success().then(|| {
            ["metrics.csv", "replicas.csv"].map(|f| std::fs::read(dir.join(&out).join(f)).ok())
        });
        let stderr = String::from_utf8_lossy(&o.stderr);
        counts.record(
            &format!("{part} {fault:?}"),
            result.map(|r| r == expected),
            &stderr,
            part,
        );
        let _ = std::fs::remove_dir_all(dir.join(&out));
        let _ = std::fs::remove_dir_all(&partial);
    }
    counts.report("run checkpoint.part.bin");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn damaged_round_files_are_refused_or_replay_to_the_same_result() {
    net::round_files();
}

#[test]
fn a_damaged_exported_federation_is_refused_or_gives_the_same_result() {
    data::exported();
}

#[test]
fn a_damaged_leaf_shakespeare_directory_is_refused_or_gives_the_same_result() {
    data::leaf();
}

#[test]
fn a_damaged_finished_reproduction_run_is_refused_or_read_the_same() {
    use fedcluster_cli::reproduce::harness;
    let out = fixture::temp_dir("fault");
    let exp = fixture::experiment(2, 20);
    harness::run(&exp, &fixture::options(&out)).unwrap();
    let pristine = out.with_extension("pristine");
    copy_dir(&out, &pristine);
    let expected = cases::results_without_seconds(&out);
    let runs = [
        "runs/low/ifca/seed-1",
        "runs/high/global/seed-2",
        "runs/low/diverging/seed-1",
    ];
    let mut counts = Counts::default();
    for (r, run) in runs.iter().enumerate() {
        let files: Vec<String> = std::fs::read_dir(pristine.join(run))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        for (f, file) in files.iter().enumerate() {
            let len = std::fs::metadata(pristine.join(run).join(file))
                .unwrap()
                .len();
            let seed = 17 + (r * 10 + f) as u64;
            for fault in faults(len, seed).into_iter().step_by(3) {
                let _ = std::fs::remove_dir_all(&out);
                copy_dir(&pristine, &out);
                let swap = out.join(runs[(r + 1) % runs.len()]).join(file);
                let target = out.join(run).join(file);
                if matches!(fault, Fault::Swap) && !swap.exists() {
                    continue;
                }
                damage(&target, &fault, &swap);
                let (same, message) = rerun(&exp, &out, &expected);
                counts.record(&format!("{run}/{file} {fault:?}"), same, &message, run);
            }
        }
    }
    // Two finished runs swapped whole.
    let _ = std::fs::remove_dir_all(&out);
    copy_dir(&pristine, &out);
    let (a, b) = (out.join(runs[0]), out.join("runs/low/ifca/seed-2"));
    let tmp = out.join("swap-tmp");
    std::fs::rename(&a, &tmp).unwrap();
    std::fs::rename(&b, &a).unwrap();
    std::fs::rename(&tmp, &b).unwrap();
    let (same, message) = rerun(&exp, &out, &expected);
    counts.record("two runs swapped", same, &message, "seed-");
    counts.report("reproduction runs");
    let _ = std::fs::remove_dir_all(&out);
    let _ = std::fs::remove_dir_all(&pristine);
}

/// Runs the reproduction `exp` again into `out` (damaged): whether its
/// results equal `expected` (`None` when it was refused), and the refusal's
/// message.
fn rerun(
    exp: &fedcluster_cli::reproduce::harness::Experiment,
    out: &Path,
    expected: &str,
) -> (Option<bool>, String) {
    match fedcluster_cli::reproduce::harness::run(exp, &fixture::options(out)) {
        Ok(_) => (
            Some(cases::results_without_seconds(out) == expected),
            String::new(),
        ),
        Err(e) => (None, format!("{e:#}")),
    }
}
