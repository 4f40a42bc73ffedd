//! What fedcluster's tests share (a dev-dependency only): where the real data
//! sets are, and how a test that cannot run says so where the user sees it.
//!
//! - **Real data** comes from `$FEDCLUSTER_DATA/<dir_name>` only (`mnist/`,
//!   `shakespeare/`, ...: the data-set table's `Files::dir_name`), the same
//!   variable `fedcluster run` reads. No path beside the workspace is guessed:
//!   without the variable, a test on real data skips.
//! - **A skip is visible.** [`skip`] writes `SKIPPED <test>: <why>` to stderr
//!   (cargo shows it only for failing tests) and appends `<test>: <why>` to
//!   the skip log, `<target dir>/fedcluster-skipped-tests.txt` ([`skip_log`]),
//!   which `scripts/test` clears before the tests and sums up after them.
//! - **Fail closed.** Where `$FEDCLUSTER_REQUIRE_DATA` lists a data set
//!   (comma-separated `dir_name`s; CI sets `mnist,shakespeare`), a test that
//!   would skip for lack of it fails instead, naming it.

use std::io::Write as _;
use std::path::{Path, PathBuf};

/// The variable naming the data root (`fedcluster_data::table::DATA_ROOT_VAR`;
/// this crate depends on no other of the workspace).
pub const DATA_ROOT_VAR: &str = "FEDCLUSTER_DATA";

/// The variable listing the data sets whose tests must not skip.
pub const REQUIRE_DATA_VAR: &str = "FEDCLUSTER_REQUIRE_DATA";

/// The skip log's file name, in the target directory.
pub const SKIP_LOG_NAME: &str = "fedcluster-skipped-tests.txt";

/// The workspace root (this crate is `crates/testkit`).
pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The skip log: `$CARGO_TARGET_DIR` (relative to the workspace root when
/// relative), else the workspace's `target/`, then [`SKIP_LOG_NAME`].
pub fn skip_log() -> PathBuf {
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .filter(|dir| !dir.is_empty())
        .map_or_else(|| PathBuf::from("target"), PathBuf::from);
    workspace_root().join(target).join(SKIP_LOG_NAME)
}

/// Records that `test` did not run, and why: one line on stderr and one in
/// the [`skip_log`] (appended in one write, so that tests skipping at once
/// on several threads or processes do not mix their lines).
pub fn skip(test: &str, why: &str) {
    let why = why.replace('\n', " ");
    let _ = writeln!(std::io::stderr(), "SKIPPED {test}: {why}");
    let log = skip_log();
    if let Some(dir) = log.parent() {
        let _ = std::fs::create_dir_all(dir);
    }
    let line = format!("{test}: {why}\n");
    let appended = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&log)
        .and_then(|mut f| f.write_all(line.as_bytes()));
    if let Err(e) = appended {
        let _ = writeln!(
            std::io::stderr(),
            "(cannot append to the skip log {}: {e})",
            log.display()
        );
    }
}

/// Whether `$FEDCLUSTER_REQUIRE_DATA` lists `dir_name`.
pub fn required(dir_name: &str) -> bool {
    std::env::var(REQUIRE_DATA_VAR)
        .is_ok_and(|list| list.split(',').any(|name| name.trim() == dir_name))
}

/// The real data set `dir_name` (`title` in messages) for `test`:
/// `$FEDCLUSTER_DATA/<dir_name>` when it is a directory. Otherwise `test` is
/// skipped ([`skip`]) and `None` returned, or, where `$FEDCLUSTER_REQUIRE_DATA`
/// lists `dir_name`, the test fails naming the data set.
pub fn real_data(dir_name: &str, title: &str, test: &str) -> Option<PathBuf> {
    let why = match std::env::var_os(DATA_ROOT_VAR).filter(|root| !root.is_empty()) {
        Some(root) => {
            let dir = PathBuf::from(root).join(dir_name);
            if dir.is_dir() {
                return Some(dir);
            }
            format!("no {title} at {}", dir.display())
        }
        None => format!("no {title}: {DATA_ROOT_VAR} is not set (a directory holding {dir_name}/)"),
    };
    if required(dir_name) {
        panic!(
            "{test}: {why}, but {REQUIRE_DATA_VAR} lists {dir_name}: this test must run, not skip"
        );
    }
    skip(test, &why);
    None
}
