//! Inputs that must be refused by name, before anything is read or run: a
//! FIFO or device where a file is read, a dangling `--out`, a second writer,
//! a reproduction into another run's directory, an oversized `join --data`
//! range, an `--init-from` file with tensors the model does not have. Each
//! refusal is quick and small (peak memory in docs/run-directory.md).

mod common;

use std::process::Stdio;
use std::time::{Duration, Instant};

use common::{command, fedcluster, scratch, small};

const IFCA: &str =
    "name = \"ifca\"\nclusters = 2\nlr = 0.1\ninit = { kind = \"gaussian\", std = 1.0 }";

fn stderr(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Asserts that `o` failed with every one of `needles` in its stderr, and
/// returns that stderr.
fn refused(o: &std::process::Output, needles: &[&str]) -> String {
    let e = stderr(o);
    assert!(
        !o.status.success() && needles.iter().all(|n| e.contains(n)),
        "{e}"
    );
    e
}

/// Runs `args` in `dir`; fails the test if it takes 20 s (a read that blocks).
fn bounded(args: &[&str], dir: &std::path::Path) -> std::process::Output {
    let mut child = command(args, dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let start = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > Duration::from_secs(20) {
            let _ = child.kill();
            panic!("{args:?} blocked");
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    child.wait_with_output().unwrap()
}

fn mkfifo(path: &std::path::Path) {
    let made = std::process::Command::new("mkfifo").arg(path).status();
    assert!(made.unwrap().success());
}

#[test]
fn a_fifo_as_init_from_or_checkpoint_is_refused_without_blocking() {
    let dir = scratch("refuse-fifo");
    std::fs::write(dir.join("cfg.toml"), small(IFCA, 3)).unwrap();
    mkfifo(&dir.join("models.safetensors"));
    let o = bounded(
        &[
            "run",
            "cfg.toml",
            "-q",
            "--out",
            "a",
            "--init-from",
            "models.safetensors",
        ],
        &dir,
    );
    refused(&o, &["models.safetensors: is a FIFO"]);
    assert!(!dir.join("a.lock").exists(), "the lock is left behind");
    std::fs::create_dir(dir.join("b.partial")).unwrap();
    mkfifo(&dir.join("b.partial/checkpoint.bin"));
    let o = bounded(&["run", "cfg.toml", "-q", "--out", "b", "--resume"], &dir);
    refused(&o, &["checkpoint.bin: is a FIFO"]);
    let o = bounded(
        &[
            "run",
            "cfg.toml",
            "-q",
            "--out",
            "c",
            "--init-from",
            "/dev/zero",
        ],
        &dir,
    );
    refused(&o, &["/dev/zero: is a device"]);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn an_init_from_file_with_a_tensor_the_model_lacks_is_refused() {
    let dir = scratch("refuse-tensors");
    std::fs::write(dir.join("cfg.toml"), small(IFCA, 2)).unwrap();
    let o = fedcluster(&["run", "cfg.toml", "-q", "--out", "first"], &dir);
    assert!(o.status.success(), "{}", stderr(&o));
    // The same models with cluster 1 renamed 7: no cluster of this run.
    let mut bytes = std::fs::read(dir.join("first/models.safetensors")).unwrap();
    let at = bytes.windows(9).position(|w| w == b"cluster1.").unwrap();
    bytes[at + 7] = b'7';
    std::fs::write(dir.join("odd.safetensors"), &bytes).unwrap();
    let o = fedcluster(
        &[
            "run",
            "cfg.toml",
            "-q",
            "--out",
            "b",
            "--init-from",
            "odd.safetensors",
        ],
        &dir,
    );
    refused(&o, &["tensor `cluster7."]);
    let _ = std::fs::remove_dir_all(&dir);
}

#[cfg(unix)]
#[test]
fn a_dangling_symbolic_link_as_out_is_refused_before_the_run() {
    let dir = scratch("refuse-dangling");
    std::fs::write(dir.join("cfg.toml"), small(IFCA, 2)).unwrap();
    std::os::unix::fs::symlink(dir.join("nowhere/at-all"), dir.join("link")).unwrap();
    let o = fedcluster(&["run", "cfg.toml", "-q", "--out", "link"], &dir);
    refused(&o, &["symbolic link"]);
    assert!(!dir.join("link.partial").exists());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_second_data_writer_is_refused_while_the_first_holds_the_lock() {
    let dir = scratch("refuse-data-lock");
    let out = dir.join("leaf");
    let _held = fedcluster_run::rundir::DirLock::take(&out).unwrap();
    let o = fedcluster(
        &[
            "data",
            "leaf-shakespeare",
            "--out",
            "leaf",
            "--plays",
            "plays",
        ],
        &dir,
    );
    let e = refused(&o, &["another fedcluster process is writing"]);
    assert!(!e.contains("--out"), "suggests a flag: {e}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_reproduction_into_a_run_directory_is_refused() {
    let dir = scratch("refuse-reproduce-out");
    std::fs::write(dir.join("cfg.toml"), small(IFCA, 2)).unwrap();
    assert!(
        fedcluster(&["run", "cfg.toml", "-q", "--out", "r"], &dir)
            .status
            .success()
    );
    let o = fedcluster(&["reproduce", "ifca-synthetic-success", "--out", "r"], &dir);
    refused(&o, &["the directory of a `fedcluster run`"]);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_huge_join_range_is_refused_before_anything_is_allocated() {
    let dir = scratch("refuse-join");
    let o = fedcluster(
        &[
            "join",
            "--insecure",
            "--server",
            "127.0.0.1:1",
            "--data",
            "partition:0-4000000000",
        ],
        &dir,
    );
    refused(&o, &["above the limit of 10000"]);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_fifo_as_a_play_is_refused_without_blocking_and_leaves_no_lock() {
    let dir = scratch("refuse-play-fifo");
    std::fs::create_dir(dir.join("plays")).unwrap();
    mkfifo(&dir.join("plays/hamlet.txt"));
    let o = bounded(
        &[
            "data",
            "leaf-shakespeare",
            "--out",
            "leaf",
            "--plays",
            "plays",
        ],
        &dir,
    );
    refused(&o, &["hamlet.txt", "is a FIFO"]);
    assert!(!dir.join("leaf.lock").exists() && !dir.join("leaf").exists());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_plays_directory_without_a_play_is_refused_by_name() {
    let dir = scratch("refuse-no-plays");
    std::fs::create_dir(dir.join("plays")).unwrap();
    std::fs::write(dir.join("plays/notes.txt"), "not a play at all\n").unwrap();
    let args = [
        "data",
        "leaf-shakespeare",
        "--out",
        "leaf",
        "--plays",
        "plays",
    ];
    let o = bounded(&args, &dir);
    let e = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{e}");
    assert!(
        e.contains("plays") && e.contains("none of its 1 .txt files is a play"),
        "{e}"
    );
    assert!(!dir.join("leaf").exists() && !dir.join("leaf.lock").exists());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn an_empty_server_name_is_refused() {
    let dir = scratch("refuse-empty-server-name");
    let o = bounded(&["certs", "--out", "pki", "--server-name", ""], &dir);
    let e = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{e}");
    assert!(e.contains("--server-name: a name must not be empty"), "{e}");
    assert!(!dir.join("pki").exists());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_second_data_export_is_refused_while_the_first_holds_the_lock() {
    let dir = scratch("refuse-export-lock");
    std::fs::write(dir.join("c.toml"), small(IFCA, 1)).unwrap();
    let out = dir.join("fed");
    let held = fedcluster_run::rundir::DirLock::take(&out).unwrap();
    let o = fedcluster(&["data", "export", "c.toml", "--out", "fed"], &dir);
    refused(&o, &["another fedcluster process is writing"]);
    assert!(!out.exists(), "wrote while locked");
    drop(held);
    let o = fedcluster(&["data", "export", "c.toml", "--out", "fed"], &dir);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(out.join("federation.json").exists());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_certificate_with_another_key_is_refused_naming_both_files() {
    let dir = scratch("refuse-wrong-key");
    for pki in ["a", "b"] {
        let o = fedcluster(&["certs", "--out", pki], &dir);
        assert!(o.status.success(), "{}", stderr(&o));
    }
    std::fs::write(dir.join("cfg.toml"), small(IFCA, 1)).unwrap();
    let serve = [
        "serve",
        "cfg.toml",
        "--listen",
        "127.0.0.1:0",
        "--out",
        "r",
        "--tls-cert",
        "a/server.pem",
        "--tls-key",
        "b/server.key",
    ];
    let o = bounded(&serve, &dir);
    let e = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{e}");
    assert!(
        e.contains("b/server.key is not the private key of a/server.pem"),
        "{e}"
    );
    let join = [
        "join",
        "--server",
        "127.0.0.1:1",
        "--ca",
        "a/ca.pem",
        "--cert",
        "a/client.pem",
        "--key",
        "b/client.key",
        "--data",
        "partition:0",
    ];
    let o = bounded(&join, &dir);
    let e = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{e}");
    assert!(
        e.contains("b/client.key is not the private key of a/client.pem"),
        "{e}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
