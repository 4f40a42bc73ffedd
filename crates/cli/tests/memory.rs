//! The memory estimate (`fedcluster_run::memory`): a run that would not fit
//! `--max-memory` is refused with the estimate and its biggest term before
//! anything large is allocated, the estimate follows the measured peak of a
//! real run, and an allocation that fails is one error line and exit 1, not
//! an abort.

mod common;

use std::process::Stdio;
use std::time::{Duration, Instant};

use common::{command, fedcluster, scratch};
use fedcluster_run::config::RunConfig;
use fedcluster_run::experiment::{build_data_set, build_model};
use fedcluster_run::memory;

/// IFCA on mixed regression of `clients` clients of one 2-feature point.
fn config(clients: usize) -> String {
    format!(
        "name = \"m\"\nseed = 1\nrounds = 1\nthreads = 1\n\
         [data]\nkind = \"mixed-regression\"\ndim = 2\nclusters = 2\nprobs = [0.5, 0.5]\n\
         client_sizes = [{{ count = {clients}, points = 1 }}]\ntest_points_per_client = 1\n\
         [model]\nkind = \"linear\"\n\
         [algorithm]\nname = \"ifca\"\nclusters = 2\naggregation = \"gradient\"\nlr = 0.5\n"
    )
}

fn stderr(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn a_run_above_max_memory_is_refused_with_its_biggest_term() {
    let dir = scratch("memory-refused");
    std::fs::write(dir.join("big.toml"), config(100_000_000)).unwrap();
    let o = fedcluster(
        &["run", "big.toml", "--out", "r", "--max-memory", "2G"],
        &dir,
    );
    let e = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{e}");
    assert_eq!(e.lines().count(), 1, "{e}");
    assert!(e.contains("run needs about"), "{e}");
    assert!(e.contains("(biggest: "), "{e}");
    assert!(e.contains("100000000 clients"), "{e}");
    assert!(e.contains("2.0 GiB available (--max-memory)"), "{e}");
    assert!(!dir.join("r").exists() && !dir.join("r.partial").exists());
    let bad = fedcluster(&["run", "big.toml", "--max-memory", "2X"], &dir);
    assert_eq!(bad.status.code(), Some(2), "{}", stderr(&bad));
    assert!(stderr(&bad).contains("--max-memory"), "{}", stderr(&bad));
}

#[test]
fn a_small_run_fits_and_a_tiny_limit_refuses_it() {
    let dir = scratch("memory-tiny");
    std::fs::write(dir.join("small.toml"), config(100)).unwrap();
    let o = fedcluster(
        &["run", "small.toml", "--out", "r", "--max-memory", "1M"],
        &dir,
    );
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("1.0 MiB available (--max-memory)"));
    let o = fedcluster(
        &[
            "run",
            "small.toml",
            "--out",
            "r",
            "-q",
            "--max-memory",
            "1G",
        ],
        &dir,
    );
    assert!(o.status.success(), "{}", stderr(&o));
}

/// The peak resident memory (`VmHWM`, KiB) of `fedcluster run` on `toml`,
/// as last read while it ran.
fn measured_peak(dir: &std::path::Path, toml: &str) -> u64 {
    let mut child = command(&["run", toml, "--out", &format!("{toml}.out"), "-q"], dir)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let status = format!("/proc/{}/status", child.id());
    let (start, mut peak) = (Instant::now(), 0);
    while child.try_wait().unwrap().is_none() {
        assert!(start.elapsed() < Duration::from_secs(30), "the run hangs");
        let text = std::fs::read_to_string(&status).unwrap_or_default();
        let hwm = text.lines().find_map(|l| l.strip_prefix("VmHWM:"));
        let kib = hwm.and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok());
        peak = peak.max(kib.unwrap_or(0));
        std::thread::sleep(Duration::from_millis(2));
    }
    assert!(child.wait().unwrap().success());
    peak
}

/// Local training on mixed regression of `clients` clients of one
/// 500-feature point: each client's own 2,004-byte model.
fn local_config(clients: usize) -> String {
    format!(
        "name = \"m\"\nseed = 1\nrounds = 1\nthreads = 1\nlocal_eval_models = 10\n\
         [data]\nkind = \"mixed-regression\"\ndim = 500\nclusters = 2\nprobs = [0.5, 0.5]\n\
         client_sizes = [{{ count = {clients}, points = 1 }}]\ntest_points_per_client = 1\n\
         [model]\nkind = \"linear\"\n\
         [algorithm]\nname = \"local\"\nlr = 0.1\nlocal_steps = 1\n"
    )
}

fn estimated(toml: &str) -> u128 {
    let config = RunConfig::parse(toml, &[], "test").unwrap();
    let data_set = build_data_set(&config).unwrap();
    let data = data_set.view();
    let model = build_model(&config, &data).unwrap();
    memory::estimate(&config, &data, model.as_ref()).total()
}

/// The estimate's growth between two sizes of `config` is within a factor
/// of 1.5 of the growth of the measured peak (Linux: `/proc`).
fn estimate_follows_the_measured_peak(name: &str, config: fn(usize) -> String, sizes: [usize; 2]) {
    if !std::path::Path::new("/proc/self/status").exists() {
        eprintln!("skipped: no /proc");
        return;
    }
    let dir = scratch(name);
    let [small, large] = sizes.map(config);
    std::fs::write(dir.join("small.toml"), &small).unwrap();
    std::fs::write(dir.join("large.toml"), &large).unwrap();
    let measured = (measured_peak(&dir, "large.toml") - measured_peak(&dir, "small.toml")) * 1024;
    let estimate = (estimated(&large) - estimated(&small)) as f64;
    let ratio = estimate / measured as f64;
    eprintln!("estimate grew {estimate} bytes, the measured peak {measured}: ratio {ratio:.2}");
    assert!(
        (1.0 / 1.5..=1.5).contains(&ratio),
        "estimate grew {estimate} bytes, the measured peak {measured}"
    );
}

#[test]
fn the_estimate_follows_the_measured_peak() {
    estimate_follows_the_measured_peak("memory-measured", config, [20_000, 220_000]);
}

/// Local training holds each client's own model several times
/// (`Algorithm::models_per_client`): without that term its estimate grew by
/// 0.30 of the measured peak's growth.
#[test]
fn local_trainings_own_models_are_in_the_estimate() {
    estimate_follows_the_measured_peak("memory-local", local_config, [4_000, 24_000]);
}

/// Under `ulimit -v`, a run that allocates beyond it (the estimate waved
/// through with a large `--max-memory`) ends with one error line naming the
/// size and exit 1: no abort (signal 6), no backtrace.
#[test]
fn an_allocation_that_fails_is_an_error_line_not_an_abort() {
    if std::process::Command::new("bash")
        .arg("-c")
        .arg("true")
        .status()
        .is_err()
    {
        eprintln!("skipped: no bash");
        return;
    }
    let dir = scratch("memory-ulimit");
    std::fs::write(dir.join("run.toml"), config(1_000_000)).unwrap();
    let bin = env!("CARGO_BIN_EXE_fedcluster");
    let script =
        format!("ulimit -v 300000; exec '{bin}' run run.toml --out r -q --max-memory 100G");
    let o = std::process::Command::new("bash")
        .args(["-c", &script])
        .current_dir(&dir)
        .output()
        .unwrap();
    let e = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{:?}: {e}", o.status);
    assert_eq!(e.lines().count(), 1, "{e}");
    assert!(
        e.starts_with("error: out of memory: an allocation of "),
        "{e}"
    );
    assert!(e.contains(" bytes failed"), "{e}");
}

/// `join --max-memory` below what its clients need is refused, one line
/// naming the limit, before their data is built; the coordinator is left
/// waiting (and killed here).
#[test]
fn a_join_above_max_memory_is_refused() {
    use std::io::BufRead as _;
    let dir = scratch("memory-join");
    std::fs::write(dir.join("small.toml"), config(4)).unwrap();
    let mut serve = command(
        &[
            "serve",
            "small.toml",
            "--listen",
            "127.0.0.1:0",
            "--insecure",
        ],
        &dir,
    )
    .args(["-q", "--out", "net"])
    .stdout(Stdio::piped())
    .stderr(Stdio::null())
    .spawn()
    .unwrap();
    let mut line = String::new();
    std::io::BufReader::new(serve.stdout.as_mut().unwrap())
        .read_line(&mut line)
        .unwrap();
    let addr = line
        .trim()
        .strip_prefix("listening on ")
        .unwrap()
        .to_string();
    let join = |limit: &str| {
        fedcluster(
            &[
                "join",
                "--server",
                &addr,
                "--data",
                "partition:0-1",
                "--insecure",
            ]
            .into_iter()
            .chain(["--connect-timeout", "10", "--max-memory", limit])
            .collect::<Vec<_>>(),
            &dir,
        )
    };
    let o = join("1M");
    let _ = serve.kill();
    let _ = serve.wait();
    let e = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{e}");
    assert_eq!(e.lines().count(), 1, "{e}");
    assert!(e.contains("run needs about"), "{e}");
    assert!(e.contains("1.0 MiB available (--max-memory)"), "{e}");
    let bad = fedcluster(
        &[
            "join",
            "--server",
            &addr,
            "--data",
            "partition:0",
            "--max-memory",
            "2X",
        ],
        &dir,
    );
    assert_eq!(bad.status.code(), Some(2), "{}", stderr(&bad));
}

/// `reproduce --max-memory` below what a run needs is refused, naming the
/// run and the limit, before any run is built or saved.
#[test]
fn a_reproduction_above_max_memory_is_refused() {
    let dir = scratch("memory-reproduce");
    let args = ["reproduce", "mixed-regression", "--quick", "--out", "r"];
    let o = fedcluster(&[&args[..], &["--max-memory", "1M"]].concat(), &dir);
    let e = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{e}");
    assert!(e.contains("run needs about"), "{e}");
    assert!(e.contains("1.0 MiB available (--max-memory)"), "{e}");
    assert!(e.contains("seed 1"), "names the run: {e}");
    assert!(!dir.join("r/runs").exists(), "a run was saved");
}
