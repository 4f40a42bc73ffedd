//! Errors of the core crate.

use thiserror::Error;

/// Errors raised by core routines when their inputs do not fit together.
#[derive(Debug, Error, PartialEq)]
pub enum CoreError {
    /// Two buffers that must have related lengths do not.
    #[error("shape mismatch in {what}: expected {expected}, got {got}")]
    Shape {
        what: &'static str,
        expected: usize,
        got: usize,
    },
    /// An aggregation was asked to combine nothing.
    #[error("{what}: no vectors to aggregate")]
    Empty { what: &'static str },
    /// A parameter is outside its valid range.
    #[error("{what}: {why}")]
    Invalid { what: &'static str, why: String },
}

/// Result alias of the core crate.
pub type Result<T, E = CoreError> = std::result::Result<T, E>;
