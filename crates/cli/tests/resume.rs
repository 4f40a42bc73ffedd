//! `fedcluster run --resume`: a run killed with SIGKILL at any moment and
//! resumed (perhaps killed again while resuming) writes the same
//! `metrics.csv`, `replicas.csv` and `curves.svg`, byte for byte, as the run
//! that was never interrupted. 24 trials over three algorithms whose servers and clients
//! keep state between rounds (IFCA with restarts, partial participation and
//! Adam moments in each client; FedSoft's importance weights; SR-FCA's
//! stages), killed at pseudo-random moments spread over the run; and a run
//! forked (`--fork-from`) from a killed run's directory.

mod common;
use std::path::Path;
use std::process::{Child, Command};
use std::time::{Duration, Instant};

use common::{fedcluster, scratch, small};

const IFCA_ADAM: &str = "name = \"ifca\"\nclusters = 2\nlr = 0.01\naggregation = \"model\"\n\
    local_steps = 2\nrestarts = 3\nparticipation = 0.5\n\
    optimizer = { kind = \"adam\", batch_size = 10 }";
const FEDSOFT: &str = "name = \"fedsoft\"\nclusters = 2\nlr = 0.05\nlocal_steps = 5\n\
    init = { kind = \"gaussian\", std = 1.0 }";
const SRFCA: &str = "name = \"srfca\"\ndistance = \"l2\"\n\
    threshold = { kind = \"quantile\", value = 0.3 }\nlocal_steps = 100\nlocal_lr = 0.05\n\
    refine_rounds = 50\nlr = 0.1\ninit = { kind = \"zeros\" }";

fn spawn(dir: &Path, args: &[&str]) -> Child {
    Command::new(env!("CARGO_BIN_EXE_fedcluster"))
        .args(args)
        .current_dir(dir)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap()
}

/// Runs `args` and kills it with SIGKILL after `delay` (if still running).
fn kill_after(dir: &Path, args: &[&str], delay: Duration) {
    let mut child = spawn(dir, args);
    let deadline = Instant::now() + delay;
    while Instant::now() < deadline {
        if child.try_wait().unwrap().is_some() {
            return;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    let _ = child.kill();
    let _ = child.wait();
}

/// Runs `args` (writing `out`) and kills it with SIGKILL `delay` after its
/// first checkpoint is on disk (if still running): the kill lands mid-run
/// however fast or slow the run is beside the tests running in parallel.
fn kill_after_checkpoint(dir: &Path, args: &[&str], out: &str, delay: Duration) {
    let mut child = spawn(dir, args);
    let checkpoint = dir.join(format!("{out}.partial")).join("checkpoint.bin");
    while !checkpoint.exists() {
        if child.try_wait().unwrap().is_some() {
            return;
        }
        std::thread::sleep(Duration::from_micros(200));
    }
    let deadline = Instant::now() + delay;
    while Instant::now() < deadline {
        if child.try_wait().unwrap().is_some() {
            return;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    let _ = child.kill();
    let _ = child.wait();
}

/// Asserts that the run directory `out` in `dir` holds the uninterrupted
/// run's (`full`) `metrics.csv`, `replicas.csv` and `curves.svg`, byte for byte.
fn same_as_full(dir: &Path, out: &str, what: &str) {
    for file in ["metrics.csv", "replicas.csv", "curves.svg"] {
        let want = std::fs::read(dir.join("full").join(file)).ok();
        let got = std::fs::read(dir.join(out).join(file)).ok();
        assert!(want == got, "{what}: {file} differs");
    }
}

/// Asserts that the run directory `out` in `dir` counts at least the seconds
/// its rounds took (`summary.json`'s `wall_seconds` against `timing.csv`),
/// every session of a resumed run included.
fn seconds_cover_the_rounds(dir: &Path, out: &str, what: &str) {
    let summary = std::fs::read_to_string(dir.join(out).join("summary.json")).unwrap();
    let summary: serde_json::Value = serde_json::from_str(&summary).unwrap();
    let wall = summary["wall_seconds"].as_f64().unwrap();
    let timing = std::fs::read_to_string(dir.join(out).join("timing.csv")).unwrap();
    let rounds: f64 = timing
        .lines()
        .skip(1)
        .map(|line| line.split(',').nth(1).unwrap().parse::<f64>().unwrap())
        .sum();
    assert!(
        wall >= rounds,
        "{what}: the run counts {wall} s, its rounds took {rounds} s"
    );
}

/// A pseudo-random fraction in [0, 1) from `state` (a 64-bit LCG).
fn fraction(state: &mut u64) -> f64 {
    *state = state
        .wrapping_mul(6_364_136_223_846_793_005)
        .wrapping_add(1_442_695_040_888_963_407);
    (*state >> 11) as f64 / (1u64 << 53) as f64
}

fn trials(name: &str, algorithm: &str, rounds: usize, count: usize, seed: u64) {
    let dir = scratch(&format!("resume-{name}"));
    std::fs::write(dir.join("cfg.toml"), small(algorithm, rounds)).unwrap();
    let start = Instant::now();
    let full = fedcluster(&["run", "cfg.toml", "-q", "--out", "full"], &dir);
    assert!(
        full.status.success(),
        "{}",
        String::from_utf8_lossy(&full.stderr)
    );
    // Each trial's kill lands somewhere in a run that checkpoints every round.
    let span = start.elapsed().mul_f64(2.0) + Duration::from_millis(20);
    let mut state = seed;
    let mut from_checkpoint = 0;
    for trial in 0..count {
        let out = format!("t{trial}");
        let args = [
            "run",
            "cfg.toml",
            "-q",
            "--out",
            &out,
            "--checkpoint-every",
            "1",
        ];
        // Half the trials are killed anywhere (before the first checkpoint
        // too), half somewhere after it.
        let delay = span.mul_f64(fraction(&mut state));
        if trial % 2 == 0 {
            kill_after(&dir, &args, delay);
        } else {
            kill_after_checkpoint(&dir, &args, &out, delay / 2);
        }
        // Every other trial is killed again while resuming.
        let resume: Vec<&str> = args.iter().copied().chain(["--resume"]).collect();
        if trial % 2 == 1 && !dir.join(&out).exists() {
            kill_after(&dir, &resume, span.mul_f64(fraction(&mut state)));
        }
        if !dir.join(&out).exists() {
            let checkpoint = dir.join(format!("{out}.partial")).join("checkpoint.bin");
            from_checkpoint += usize::from(checkpoint.exists());
            let o = fedcluster(&resume, &dir);
            assert!(
                o.status.success(),
                "trial {trial}: {}",
                String::from_utf8_lossy(&o.stderr)
            );
        }
        same_as_full(&dir, &out, &format!("{name} trial {trial}"));
        assert!(!dir.join(&out).join("checkpoint.bin").exists());
    }
    // The kills did land mid-run: most trials resumed from a checkpoint.
    assert!(
        from_checkpoint * 2 >= count,
        "{name}: {from_checkpoint} of {count} resumed"
    );
    eprintln!("{name}: {from_checkpoint} of {count} trials resumed from a checkpoint");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn ifca_with_adam_clients_killed_anywhere_resumes_to_the_same_metrics() {
    trials("ifca", IFCA_ADAM, 150, 12, 1);
}

#[test]
fn fedsoft_killed_anywhere_resumes_to_the_same_metrics() {
    trials("fedsoft", FEDSOFT, 100, 6, 2);
}

#[test]
fn srfca_killed_anywhere_resumes_to_the_same_metrics() {
    trials("srfca", SRFCA, 120, 6, 3);
}

/// Whether the checkpoint directory `partial` holds a round interrupted
/// between its parts (a sealed `checkpoint.part.bin` beside the checkpoint).
fn within_a_round(partial: &Path) -> bool {
    let Ok(bytes) = std::fs::read(partial.join("checkpoint.part.bin")) else {
        return false;
    };
    let head = &bytes[..bytes.len().min(256)];
    partial.join("checkpoint.bin").exists() && head.windows(15).any(|w| w == b"checkpoint part")
}

/// A run checkpointed between the clients of every round
/// (`--checkpoint-within-rounds`), killed once such a checkpoint is on disk
/// (at a later moment each trial) and resumed on another thread count, writes
/// what the uninterrupted run wrote, byte for byte.
#[test]
fn a_run_killed_within_a_round_resumes_to_the_same_metrics() {
    for (name, algorithm, rounds) in [("srfca", SRFCA, 120), ("ifca", IFCA_ADAM, 150)] {
        let dir = scratch(&format!("resume-within-{name}"));
        std::fs::write(dir.join("cfg.toml"), small(algorithm, rounds)).unwrap();
        let full = fedcluster(&["run", "cfg.toml", "-q", "--out", "full"], &dir);
        assert!(
            full.status.success(),
            "{}",
            String::from_utf8_lossy(&full.stderr)
        );
        let mut within = 0;
        for trial in 0..4u32 {
            let out = format!("t{trial}");
            let args = ["run", "cfg.toml", "-q", "--out", &out, "--threads", "1"];
            let killed: Vec<&str> = args
                .iter()
                .copied()
                .chain(["--checkpoint-within-rounds"])
                .collect();
            let mut child = spawn(&dir, &killed);
            let checkpoint = dir.join(format!("{out}.partial"));
            let mut seen = 0;
            while child.try_wait().unwrap().is_none() {
                seen += u32::from(within_a_round(&checkpoint));
                if seen > 3 * trial {
                    let _ = child.kill();
                    break;
                }
                std::thread::sleep(Duration::from_micros(300));
            }
            let _ = child.wait();
            within += usize::from(within_a_round(&checkpoint));
            if !dir.join(&out).exists() {
                let resume = [
                    "run",
                    "cfg.toml",
                    "-q",
                    "--out",
                    &out,
                    "--threads",
                    "2",
                    "--resume",
                ];
                let o = fedcluster(&resume, &dir);
                assert!(
                    o.status.success(),
                    "{name} trial {trial}: {}",
                    String::from_utf8_lossy(&o.stderr)
                );
            }
            same_as_full(&dir, &out, &format!("{name} trial {trial}"));
            seconds_cover_the_rounds(&dir, &out, &format!("{name} trial {trial}"));
        }
        assert!(
            within >= 2,
            "{name}: {within} of 4 trials resumed from within a round"
        );
        eprintln!("{name}: {within} of 4 trials resumed from within a round");
        let _ = std::fs::remove_dir_all(&dir);
    }
}

#[test]
fn a_run_without_resume_keeps_a_checkpoint_and_another_config_is_refused() {
    let dir = scratch("resume-guard");
    std::fs::write(dir.join("cfg.toml"), small(IFCA_ADAM, 400)).unwrap();
    let args = [
        "run",
        "cfg.toml",
        "-q",
        "--out",
        "r",
        "--checkpoint-every",
        "1",
    ];
    // Killed once its first checkpoint exists.
    let mut child = spawn(&dir, &args);
    let deadline = Instant::now() + Duration::from_secs(30);
    while !dir.join("r.partial/checkpoint.bin").exists() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(2));
    }
    let _ = child.kill();
    let _ = child.wait();
    assert!(dir.join("r.partial/checkpoint.bin").exists());
    let o = fedcluster(&["run", "cfg.toml", "-q", "--out", "r"], &dir);
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success() && e.contains("pass --resume"), "{e}");
    let o = fedcluster(
        &[
            "run", "cfg.toml", "-q", "--out", "r", "--resume", "--set", "seed=8",
        ],
        &dir,
    );
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success() && e.contains("another config"), "{e}");
    assert!(
        dir.join("r.partial/checkpoint.bin").exists(),
        "the checkpoint is kept"
    );
    // The same config with another thread count resumes.
    let o = fedcluster(
        &[
            "run",
            "cfg.toml",
            "-q",
            "--out",
            "r",
            "--resume",
            "--threads",
            "2",
        ],
        &dir,
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let o = fedcluster(&["run", "cfg.toml", "-q", "--out", "r", "--resume"], &dir);
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(e.contains("nothing to resume"), "{e}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// SR-FCA's ONE_SHOT alone (3 rounds of local training, l2 distance), and
/// ONE_SHOT-IFCA: the same ONE_SHOT, then 4 rounds of IFCA from its clusters.
const ONE_SHOT: &str = "name = \"srfca\"\ndistance = \"l2\"\n\
    threshold = { kind = \"quantile\", value = 0.3 }\nlocal_steps = 3000\nlocal_rounds = 3\n\
    local_lr = 0.05\nrefine_rounds = 2\nlr = 0.1\ninit = { kind = \"zeros\" }";
const THEN_IFCA: &str = "then = { kind = \"ifca\", local_steps = 5 }";

/// `--fork-from DIR`: ONE_SHOT-IFCA started from a copy of the
/// `<out>.partial/` of SR-FCA's ONE_SHOT killed within a round (its part file
/// beside the checkpoint, and the config.toml the run wrote there as it
/// started) writes what ONE_SHOT-IFCA's run from its first round writes,
/// byte for byte, with a note of the rounds that ran in the source, and
/// leaves the copy as it was; a damaged part is refused
/// naming it (the part is read, not passed over), and a directory without the
/// config is refused naming what is missing.
#[test]
fn a_run_forked_from_a_killed_runs_partial_directory_ends_where_its_own_run_ends() {
    let dir = scratch("fork-from-partial");
    std::fs::write(dir.join("one-shot.toml"), small(ONE_SHOT, 3)).unwrap();
    let one_shot_ifca = small(&format!("{ONE_SHOT}\n{THEN_IFCA}"), 7);
    std::fs::write(dir.join("one-shot-ifca.toml"), one_shot_ifca).unwrap();
    let run = |extra: &[&str]| {
        let mut args = vec!["run", "one-shot-ifca.toml", "-q"];
        args.extend(extra);
        fedcluster(&args, &dir)
    };
    let full = run(&["--out", "full"]);
    assert!(
        full.status.success(),
        "{}",
        String::from_utf8_lossy(&full.stderr)
    );

    // Killed once a part of a round is on disk (retried while the kill misses).
    let partial = dir.join("source.partial");
    let killed_within = (0..8).any(|_| {
        let _ = std::fs::remove_dir_all(&partial);
        let _ = std::fs::remove_dir_all(dir.join("source"));
        let args = [
            "run",
            "one-shot.toml",
            "-q",
            "--out",
            "source",
            "--threads",
            "1",
            "--checkpoint-within-rounds",
        ];
        let mut child = spawn(&dir, &args);
        while child.try_wait().unwrap().is_none() && !within_a_round(&partial) {
            std::thread::sleep(Duration::from_micros(200));
        }
        let _ = child.kill();
        let _ = child.wait();
        within_a_round(&partial)
    });
    assert!(killed_within, "no kill landed within a round in 8 tries");
    let copy = dir.join("copy");
    std::fs::create_dir_all(&copy).unwrap();
    for entry in std::fs::read_dir(&partial).unwrap() {
        let path = entry.unwrap().path();
        std::fs::copy(&path, copy.join(path.file_name().unwrap())).unwrap();
    }
    assert!(
        copy.join("config.toml").exists(),
        "the run wrote no config.toml"
    );
    let contents = || -> Vec<Vec<u8>> {
        let mut names: Vec<_> = std::fs::read_dir(&copy)
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        names.sort();
        names.iter().map(|p| std::fs::read(p).unwrap()).collect()
    };
    let before = contents();

    let forked = run(&["--out", "forked", "--threads", "2", "--fork-from", "copy"]);
    let log = String::from_utf8_lossy(&forked.stderr);
    assert!(forked.status.success(), "{log}");
    assert!(log.contains("forked: forking from copy"), "{log}");
    same_as_full(&dir, "forked", "ONE_SHOT-IFCA forked within ONE_SHOT");
    // The forked run names where its first rounds ran; the full run has no note.
    let note = std::fs::read_to_string(dir.join("forked/forked-from.txt")).unwrap();
    let source = format!(
        "source: {}",
        Path::new("copy").join("checkpoint.bin").display()
    );
    assert!(note.contains(&source), "{note}");
    assert!(note.contains("(srfca)\nran there: "), "{note}");
    assert!(note.contains("'s clients\n"), "a part, named: {note}");
    assert!(!dir.join("full/forked-from.txt").exists());
    assert!(
        contents() == before,
        "the fork changed the directory it forked from"
    );

    std::fs::remove_file(copy.join("config.toml")).unwrap();
    let refused = run(&["--out", "refused", "--fork-from", "copy"]);
    let error = String::from_utf8_lossy(&refused.stderr);
    assert!(!refused.status.success());
    assert!(
        error.contains("--fork-from copy: no config.toml"),
        "{error}"
    );
    assert!(!dir.join("refused").exists() && !dir.join("refused.partial").exists());
    let _ = std::fs::remove_dir_all(&dir);
}
