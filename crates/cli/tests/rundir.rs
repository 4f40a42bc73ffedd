//! Run directories never destroy what they did not create, sizes have upper
//! limits checked before allocation, and a config that can never run leaves
//! nothing behind: each test is a defect found by probing the CLI.

mod common;
use std::path::{Path, PathBuf};
use std::process::Output;

use common::{fedcluster, small};

const IFCA: &str = "name = \"ifca\"\nclusters = 2\nlr = 0.1";

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// A scratch directory holding `cfg.toml` (a 2-round small IFCA run) and a
/// file of the user's, `keep.txt`.
fn scratch(name: &str) -> PathBuf {
    let dir = common::scratch(&format!("rundir-{name}"));
    std::fs::write(dir.join("cfg.toml"), small(IFCA, 2)).unwrap();
    std::fs::write(dir.join("keep.txt"), "mine").unwrap();
    dir
}

fn names(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[test]
fn overwrite_never_replaces_the_current_directory_or_a_directory_of_other_files() {
    let dir = scratch("dot");
    for out in [".", "./", "..", "/"] {
        let o = fedcluster(
            &["run", "cfg.toml", "-q", "--out", out, "--overwrite"],
            &dir,
        );
        assert!(!o.status.success());
        assert!(
            stderr(&o).contains("not a directory a run can own"),
            "{}",
            stderr(&o)
        );
    }
    // A directory holding the current one.
    let inner = dir.join("inner");
    std::fs::create_dir_all(&inner).unwrap();
    let o = fedcluster(
        &["run", "../cfg.toml", "-q", "--out", "../../", "--overwrite"],
        &inner,
    );
    assert!(!o.status.success());
    let o = fedcluster(
        &["run", "../cfg.toml", "-q", "--out", "..", "--overwrite"],
        &inner,
    );
    assert!(!o.status.success());
    let o = fedcluster(
        &[
            "run",
            "cfg.toml",
            "-q",
            "--out",
            &dir.display().to_string(),
            "--overwrite",
        ],
        &dir,
    );
    assert!(stderr(&o).contains("refusing to replace"), "{}", stderr(&o));
    // A directory of the user's files.
    std::fs::create_dir_all(dir.join("mine")).unwrap();
    std::fs::write(dir.join("mine/notes.txt"), "x").unwrap();
    let o = fedcluster(
        &["run", "cfg.toml", "-q", "--out", "mine", "--overwrite"],
        &dir,
    );
    assert!(
        stderr(&o).contains("not a fedcluster run directory"),
        "{}",
        stderr(&o)
    );
    assert_eq!(
        std::fs::read_to_string(dir.join("mine/notes.txt")).unwrap(),
        "x"
    );
    assert_eq!(names(&dir), ["cfg.toml", "inner", "keep.txt", "mine"]);
    // A run directory is replaced.
    let o = fedcluster(&["run", "cfg.toml", "-q", "--out", "run1"], &dir);
    assert!(o.status.success(), "{}", stderr(&o));
    let o = fedcluster(
        &["run", "cfg.toml", "-q", "--out", "run1", "--overwrite"],
        &dir,
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_trailing_slash_on_a_new_out_keeps_the_run() {
    let dir = scratch("slash");
    let o = fedcluster(&["run", "cfg.toml", "-q", "--out", "newdir/"], &dir);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(dir.join("newdir/metrics.csv").is_file());
    assert_eq!(names(&dir), ["cfg.toml", "keep.txt", "newdir"]);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_second_writer_of_one_out_is_refused_while_the_first_holds_it() {
    let dir = scratch("lock");
    // Another writer of `shared` (as a running `fedcluster run` holds it).
    let holder = fedcluster_run::rundir::DirLock::take(&dir.join("shared")).unwrap();
    let o = fedcluster(&["run", "cfg.toml", "-q", "--out", "shared"], &dir);
    assert!(!o.status.success());
    assert!(
        stderr(&o).contains("another fedcluster process is writing"),
        "{}",
        stderr(&o)
    );
    assert!(!dir.join("shared").exists() && !dir.join("shared.partial").exists());
    drop(holder);
    assert!(
        !dir.join("shared.lock").exists(),
        "the lock file is removed"
    );
    let o = fedcluster(&["run", "cfg.toml", "-q", "--out", "shared"], &dir);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        !dir.join("shared.lock").exists(),
        "the run removes its lock file"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn certs_refuse_to_replace_a_ca_without_overwrite() {
    let dir = scratch("certs");
    assert!(
        fedcluster(&["certs", "--out", "pki"], &dir)
            .status
            .success()
    );
    let ca = std::fs::read(dir.join("pki/ca.pem")).unwrap();
    let o = fedcluster(&["certs", "--out", "pki"], &dir);
    assert!(!o.status.success());
    assert!(
        stderr(&o).contains("ca.pem already exists"),
        "{}",
        stderr(&o)
    );
    assert_eq!(std::fs::read(dir.join("pki/ca.pem")).unwrap(), ca);
    assert!(
        fedcluster(&["certs", "--out", "pki", "--overwrite"], &dir)
            .status
            .success()
    );
    assert_ne!(std::fs::read(dir.join("pki/ca.pem")).unwrap(), ca);
    let _ = std::fs::remove_dir_all(&dir);
}

/// Absurd sizes are refused with the field and the limit named, before
/// anything is allocated or written; so is every value that can be checked
/// before the first round.
#[test]
fn absurd_sizes_and_impossible_setups_fail_before_any_directory_exists() {
    let dir = scratch("limits");
    for (set, field) in [
        ("threads=100000000", "`threads`"),
        ("data.clients=100000000000", "`data.clients`"),
        ("algorithm.restarts=100000000000", "`algorithm.restarts`"),
        ("algorithm.clusters=1000000", "`algorithm.clusters`"),
        ("data.dim=100000000", "`data.points_per_client`"),
        ("rounds=1000000000000", "`rounds`"),
        ("eval_at=[3]", "`eval_at[0]`"),
        ("algorithm.clusters=21", "`algorithm.clusters`"),
    ] {
        let o = fedcluster(&["run", "cfg.toml", "-q", "--out", "r", "--set", set], &dir);
        assert!(!o.status.success(), "{set} ran");
        let e = stderr(&o);
        assert!(e.contains(field), "{set}: {e}");
        assert_eq!(e.lines().count(), 1, "{set}: {e}");
    }
    std::fs::write(dir.join("big.toml"), vec![b'#'; 2 << 20]).unwrap();
    let o = fedcluster(&["run", "big.toml", "-q", "--out", "r"], &dir);
    assert!(
        stderr(&o).contains("larger than 1048576 bytes"),
        "{}",
        stderr(&o)
    );
    assert_eq!(names(&dir), ["big.toml", "cfg.toml", "keep.txt"]);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_diverged_run_says_so_once_and_keeps_its_partial_directory() {
    let dir = scratch("diverged");
    let o = fedcluster(
        &[
            "run",
            "cfg.toml",
            "-q",
            "--out",
            "d",
            "--set",
            "algorithm.lr=1e6",
        ],
        &dir,
    );
    let e = stderr(&o);
    assert!(!o.status.success());
    assert_eq!(e.matches("training diverged").count(), 1, "{e}");
    assert!(dir.join("d.partial/error.txt").is_file());
    let _ = std::fs::remove_dir_all(&dir);
}
