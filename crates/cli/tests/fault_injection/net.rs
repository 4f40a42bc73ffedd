//! Fault injection on a coordinator's checkpoint: a networked run stopped
//! after its last round is logged, then resumed (every round replayed, no
//! client needed) from a copy of its log with one file damaged.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};

use super::cases::{Counts, Fault, copy_dir, damage, faults};
use super::common::{fedcluster, scratch};

const BIN: &str = env!("CARGO_BIN_EXE_fedcluster");
const ROUNDS: usize = 12;

fn config(dir: &Path) {
    let text = format!(
        "seed = 3\nrounds = {ROUNDS}\n[data]\nkind = \"ifca-synthetic\"\nclients = 4\n\
         points_per_client = 60\ntest_points_per_client = 20\ndim = 10\nclusters = 2\n\
         noise_std = 0.1\nseparation = 1.0\n[model]\nkind = \"linear\"\n[algorithm]\n\
         name = \"ifca\"\nclusters = 2\naggregation = \"model\"\nlr = 0.1\nlocal_steps = 3\n\
         restarts = 2\ninit = {{ kind = \"gaussian\", std = 1.0 }}\n"
    );
    std::fs::write(dir.join("cfg.toml"), text).unwrap();
}

/// A networked run of `cfg.toml` whose coordinator stops (as if killed) once
/// its last round is logged: `net.checkpoint` holds every round.
fn logged_run(dir: &Path) {
    let mut serve = Command::new(BIN)
        .args([
            "serve",
            "cfg.toml",
            "--insecure",
            "--listen",
            "127.0.0.1:0",
            "-q",
        ])
        .args(["--out", "net", "--crash-after-round", &ROUNDS.to_string()])
        .current_dir(dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(serve.stdout.as_mut().unwrap())
        .read_line(&mut line)
        .unwrap();
    let addr = line
        .trim()
        .strip_prefix("listening on ")
        .unwrap()
        .to_string();
    let mut clients: Vec<_> = (0..4)
        .map(|id| {
            Command::new(BIN)
                .args(["join", "--insecure", "--server", &addr, "--data"])
                .arg(format!("partition:{id}"))
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .unwrap()
        })
        .collect();
    assert_eq!(serve.wait().unwrap().code(), Some(137), "the injected stop");
    for c in &mut clients {
        let _ = c.kill();
        let _ = c.wait();
    }
}

/// `serve --resume` into `out` from `out.checkpoint`, no client joining.
fn resume(dir: &Path, out: &str) -> std::process::Output {
    Command::new(BIN)
        .args([
            "serve",
            "cfg.toml",
            "--insecure",
            "--listen",
            "127.0.0.1:0",
            "-q",
        ])
        .args(["--out", out, "--resume", "--join-timeout", "2"])
        .current_dir(dir)
        .output()
        .unwrap()
}

pub fn round_files() {
    let dir = scratch("fault-net");
    config(&dir);
    let full = fedcluster(&["run", "cfg.toml", "-q", "--out", "full"], &dir);
    assert!(full.status.success());
    let expected = std::fs::read(dir.join("full/metrics.csv")).unwrap();
    logged_run(&dir);
    copy_dir(&dir.join("net.checkpoint"), &dir.join("snap"));
    let round = |r: usize| format!("round-{r:06}.bin");
    let mut targets: Vec<(String, String)> = (0..3)
        .map(|k| (round(k * 5 % (ROUNDS - 1)), round(k * 5 % (ROUNDS - 1) + 1)))
        .collect();
    targets.push(("config.toml".into(), round(0)));
    // Undamaged, the log replays to the uninterrupted result.
    copy_dir(&dir.join("snap"), &dir.join("control.checkpoint"));
    let o = resume(&dir, "control");
    let control = std::fs::read(dir.join("control/metrics.csv")).ok();
    assert!(
        control == Some(expected.clone()),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    // The last round's file removed is a run stopped before it was logged,
    // not damage: it is never a target here.
    let mut counts = Counts::default();
    let mut case = 0;
    for (t, (file, other)) in targets.iter().enumerate() {
        let len = std::fs::metadata(dir.join("snap").join(file))
            .unwrap()
            .len();
        for fault in faults(len, 99 + t as u64) {
            let out = format!("c{case}");
            case += 1;
            let log = dir.join(format!("{out}.checkpoint"));
            copy_dir(&dir.join("snap"), &log);
            damage(&log.join(file), &fault, &log.join(other));
            let o = Command::new(BIN)
                .args([
                    "serve",
                    "cfg.toml",
                    "--insecure",
                    "--listen",
                    "127.0.0.1:0",
                    "-q",
                ])
                .args(["--out", &out, "--resume", "--join-timeout", "2"])
                .current_dir(&dir)
                .output()
                .unwrap();
            let same = o.status.success().then(|| {
                std::fs::read(dir.join(&out).join("metrics.csv")).ok() == Some(expected.clone())
            });
            let message = String::from_utf8_lossy(&o.stderr);
            let name = if matches!(fault, Fault::Remove) && file != "config.toml" {
                file.as_str()
            } else {
                "checkpoint"
            };
            counts.record(&format!("{file} {fault:?}"), same, &message, name);
            let _ = std::fs::remove_dir_all(dir.join(&out));
            let _ = std::fs::remove_dir_all(&log);
        }
    }
    counts.report("networked round files");
    let _ = std::fs::remove_dir_all(&dir);
}
