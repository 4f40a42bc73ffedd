//! Errors of the data crate.
//!
//! Specification and consistency errors ([`DataError::Invalid`]) name the
//! offending field; file errors ([`DataError::Io`], [`DataError::Format`],
//! [`DataError::Missing`]) start their message with the path of the file (or
//! directory) concerned.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use fedcluster_core::ClientId;
use thiserror::Error;

/// Errors raised when a data specification, a data set or a data file is not
/// consistent.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum DataError {
    /// A field of a specification or of a data set has a bad value; `field` is
    /// its path (`probs`, `client_sizes[1].points`, `train[3].x`, ...).
    #[error("invalid `{field}`: {why}")]
    Invalid {
        /// Path of the offending field.
        field: String,
        /// What is wrong with it.
        why: String,
    },
    /// A file or directory could not be read. The message is
    /// `<path>: cannot read`; the operating system's reason is the error's
    /// source (shown by `{:#}` in an `anyhow` chain).
    #[error("{}: cannot read", path.display())]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// The underlying IO error.
        source: SharedIoError,
    },
    /// A file was read but does not hold what it should (wrong magic number,
    /// truncated, inconsistent with another file, bad value). The message is
    /// `<path>: <why>`.
    #[error("{}: {why}", path.display())]
    Format {
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        why: String,
    },
    /// A client id that the data set does not have (a joining process asked
    /// for it).
    #[error("client {id}: the run's data set has {clients} clients")]
    NoSuchClient {
        /// The id asked for.
        id: ClientId,
        /// The data set's training clients.
        clients: usize,
    },
    /// A required file is in a directory under neither of its accepted names
    /// (`name`, plain, or `name.gz`, gzipped).
    #[error("{}: neither `{name}` nor `{name}.gz` is in this directory", dir.display())]
    Missing {
        /// The directory searched.
        dir: PathBuf,
        /// The file's name without `.gz`.
        name: String,
    },
}

impl DataError {
    /// `Ok` when `value <= limit` (one of [`fedcluster_core::limits`]), else
    /// an error naming `field` (and saying what `value` counts, when not
    /// empty).
    pub fn at_most(field: &str, what: &str, value: u128, limit: u128) -> Result<(), DataError> {
        match fedcluster_core::limits::exceeds(what, value, limit) {
            Some(why) => Err(DataError::invalid(field, why)),
            None => Ok(()),
        }
    }

    /// An [`DataError::Invalid`] for `field`.
    pub fn invalid(field: impl Into<String>, why: impl Into<String>) -> Self {
        Self::Invalid {
            field: field.into(),
            why: why.into(),
        }
    }

    /// A [`DataError::Format`] for the file at `path`.
    pub fn format(path: impl Into<PathBuf>, why: impl Into<String>) -> Self {
        Self::Format {
            path: path.into(),
            why: why.into(),
        }
    }

    /// A [`DataError::Io`] for the file or directory at `path`.
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Self::Io {
            path: path.into(),
            source: SharedIoError::from(source),
        }
    }

    /// Path of the offending field of an [`DataError::Invalid`]; empty for the
    /// file errors (see [`DataError::path`]).
    pub fn field(&self) -> &str {
        match self {
            Self::Invalid { field, .. } => field,
            Self::NoSuchClient { .. } => "clients",
            Self::Io { .. } | Self::Format { .. } | Self::Missing { .. } => "",
        }
    }

    /// The file (or, for [`DataError::Missing`], the directory) a file error is
    /// about; `None` for [`DataError::Invalid`].
    pub fn path(&self) -> Option<&Path> {
        match self {
            Self::Invalid { .. } | Self::NoSuchClient { .. } => None,
            Self::Io { path, .. } | Self::Format { path, .. } => Some(path),
            Self::Missing { dir, .. } => Some(dir),
        }
    }
}

/// An [`std::io::Error`] behind an [`Arc`], so that [`DataError`] stays `Clone`
/// and comparable; two are equal when they have the same kind and message.
#[derive(Debug, Clone)]
pub struct SharedIoError(Arc<std::io::Error>);

impl SharedIoError {
    /// The wrapped error.
    pub fn get(&self) -> &std::io::Error {
        &self.0
    }

    /// Its kind.
    pub fn kind(&self) -> std::io::ErrorKind {
        self.0.kind()
    }
}

impl From<std::io::Error> for SharedIoError {
    fn from(e: std::io::Error) -> Self {
        Self(Arc::new(e))
    }
}

impl PartialEq for SharedIoError {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
            || (self.kind() == other.kind() && self.0.to_string() == other.0.to_string())
    }
}

impl Eq for SharedIoError {}

impl std::fmt::Display for SharedIoError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

impl std::error::Error for SharedIoError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.0.source()
    }
}

/// Result alias of the data crate.
pub type Result<T, E = DataError> = std::result::Result<T, E>;
