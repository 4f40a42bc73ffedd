//! Errors of state files, each naming the file.

use std::path::PathBuf;

/// Why a state file cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum StateError {
    /// There is no such file.
    #[error("{}: no such file", path.display())]
    Missing {
        /// The file.
        path: PathBuf,
    },
    /// Not a regular file (a FIFO, a device, a socket or a directory).
    #[error("{}: is a {kind}, not a regular file ({what})", path.display())]
    NotRegular {
        /// The path.
        path: PathBuf,
        /// What it is.
        kind: &'static str,
        /// What the file was to be.
        what: String,
    },
    /// Larger than files of its kind may be.
    #[error("{}: {size} bytes, above the limit of {limit} bytes for {what}", path.display())]
    TooLarge {
        /// The file.
        path: PathBuf,
        /// Its size.
        size: u64,
        /// The limit.
        limit: u64,
        /// What the file was to be.
        what: String,
    },
    /// Reading it failed.
    #[error("{}: cannot {action}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// What was being done.
        action: &'static str,
        /// The error.
        source: std::io::Error,
    },
    /// Damaged: cut short, extended, or a byte changed.
    #[error("{}: damaged {what} ({why}); it is refused rather than used", path.display())]
    Damaged {
        /// The file.
        path: PathBuf,
        /// What the file was to be.
        what: String,
        /// What did not match.
        why: String,
    },
    /// Whole, but written for another run, round or format version.
    #[error("{}: this {what} belongs to `{found}`, not to `{expected}`", path.display())]
    OtherIdentity {
        /// The file.
        path: PathBuf,
        /// What the file was to be.
        what: String,
        /// The identity it carries.
        found: String,
        /// The identity asked for.
        expected: String,
    },
}

impl StateError {
    /// Whether the file is simply not there.
    pub fn is_missing(&self) -> bool {
        matches!(self, StateError::Missing { .. })
    }

    pub(crate) fn io(path: &std::path::Path, action: &'static str, source: std::io::Error) -> Self {
        if source.kind() == std::io::ErrorKind::NotFound {
            return StateError::Missing {
                path: path.to_path_buf(),
            };
        }
        StateError::Io {
            path: path.to_path_buf(),
            action,
            source,
        }
    }
}
