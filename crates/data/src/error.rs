//! Errors of the data crate.

use thiserror::Error;

/// Errors raised when a data specification or a data set is not consistent.
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
}

impl DataError {
    /// An [`DataError::Invalid`] for `field`.
    pub fn invalid(field: impl Into<String>, why: impl Into<String>) -> Self {
        Self::Invalid {
            field: field.into(),
            why: why.into(),
        }
    }

    /// Path of the offending field.
    pub fn field(&self) -> &str {
        match self {
            Self::Invalid { field, .. } => field,
        }
    }
}

/// Result alias of the data crate.
pub type Result<T, E = DataError> = std::result::Result<T, E>;
