//! Errors of the metrics crate.

use thiserror::Error;

/// Errors raised when metric inputs do not fit together.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum MetricsError {
    /// A buffer does not have the length its companion arguments imply.
    #[error("shape mismatch in {what}: expected {expected}, got {got}")]
    Shape {
        /// Which input.
        what: &'static str,
        /// Length implied by the other arguments.
        expected: usize,
        /// Length given.
        got: usize,
    },
    /// An input holds a NaN or infinite value where a finite one is required.
    #[error("{what}: non-finite value at position {at}")]
    NonFinite {
        /// Which input.
        what: &'static str,
        /// Flat index of the first offending value.
        at: usize,
    },
}

/// Result alias of the metrics crate.
pub type Result<T, E = MetricsError> = std::result::Result<T, E>;
