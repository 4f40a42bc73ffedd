//! Data files opened as regular files only: a FIFO, a device or a directory
//! where a data file should be is refused by name and never blocks a reader
//! (through `fedcluster_state::read`), as a [`DataError`].

use std::fs::File;
use std::path::Path;

use fedcluster_state::StateError;

use crate::error::{DataError, Result};

fn data_error(path: &Path, e: StateError) -> DataError {
    match e {
        StateError::Missing { .. } => {
            DataError::io(path, std::io::Error::from(std::io::ErrorKind::NotFound))
        }
        StateError::Io { source, .. } => DataError::io(path, source),
        StateError::NotRegular { kind, .. } => {
            DataError::format(path, format!("is a {kind}, not a regular file"))
        }
        other => DataError::format(path, other.to_string()),
    }
}

/// `path` opened for reading, with its size; refused unless a regular file.
pub fn open(path: &Path) -> Result<(File, u64)> {
    fedcluster_state::open_regular(path, "data file").map_err(|e| data_error(path, e))
}

/// The whole of the regular file `path`, refused above `limit` bytes before
/// reading.
pub fn read(path: &Path, limit: u64) -> Result<Vec<u8>> {
    fedcluster_state::read_bounded(path, "data file", limit).map_err(|e| data_error(path, e))
}

/// Checks the data set directory `dir` against its `checksums.sha256`
/// (written by `fedcluster data`): `true` when checked, `false` when `dir`
/// has no list (a user's own directory, read unchecked), else the error
/// naming the file that differs.
pub fn verify_listed(dir: &Path) -> Result<bool> {
    fedcluster_state::verify_listed(dir).map_err(|e| match e {
        StateError::Damaged { path, what, why } => DataError::format(
            &path,
            format!("damaged {what} ({why}); it is refused rather than used"),
        ),
        StateError::NotRegular { path, kind, .. } => {
            DataError::format(&path, format!("is a {kind}, not a regular file"))
        }
        StateError::Missing { path } => DataError::format(
            &path,
            format!("no such file, but {} lists it", fedcluster_state::CHECKSUMS),
        ),
        StateError::Io { path, source, .. } => DataError::io(&path, source),
        other => DataError::format(dir, other.to_string()),
    })
}

/// Writes `dir/checksums.sha256` over every file under `dir`, under
/// `identity`; the last file a data set's writer writes.
pub fn write_listed(dir: &Path, identity: &str) -> Result<()> {
    fedcluster_state::write_listed(dir, identity).map_err(|e| match e {
        StateError::Io { path, source, .. } => DataError::io(&path, source),
        other => DataError::format(dir, other.to_string()),
    })
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    #[test]
    fn a_fifo_is_refused_by_name_without_blocking() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("all_data_0.json");
        let made = std::process::Command::new("mkfifo").arg(&fifo).status();
        assert!(made.unwrap().success());
        let e = open(&fifo).unwrap_err().to_string();
        assert!(
            e.contains("all_data_0.json") && e.contains("is a FIFO"),
            "{e}"
        );
        let e = read(&fifo, 10).unwrap_err().to_string();
        assert!(e.contains("is a FIFO"), "{e}");
        let missing = read(&dir.path().join("none"), 10).unwrap_err();
        assert!(matches!(missing, DataError::Io { .. }), "{missing}");
    }
}
