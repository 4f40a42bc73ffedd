//! Errors of the models crate: a batch whose shape or targets do not fit a model.
//!
//! The [`Model`](fedcluster_core::Model) trait methods cannot fail (they are the hot
//! path), so data is validated once, when a client is built, with
//! [`check_targets`](crate::check_targets) or a model's `check_batch`.

use thiserror::Error;

/// A batch does not fit the model it is meant for.
#[derive(Debug, Error, PartialEq)]
pub enum ModelError {
    /// The model trains on the other kind of targets (class vs real).
    #[error("model `{model}` needs {expected} targets, got {got} targets")]
    TargetKind {
        model: &'static str,
        expected: &'static str,
        got: &'static str,
    },
    /// A class index is not below the model's number of classes.
    #[error(
        "model `{model}`: sample {index} has class {class}, but the model has {classes} classes"
    )]
    ClassOutOfRange {
        model: &'static str,
        index: usize,
        class: u32,
        classes: usize,
    },
    /// A feature or real target is NaN or infinite.
    #[error("model `{model}`: non-finite {what} at index {index}")]
    NonFinite {
        model: &'static str,
        what: &'static str,
        index: usize,
    },
    /// Samples have a different number of features than the model expects, or the
    /// feature buffer does not hold `len * dim` values.
    #[error("model `{model}`: expected {expected} features per sample, got {got}")]
    Dim {
        model: &'static str,
        expected: usize,
        got: usize,
    },
    /// The batch has no samples.
    #[error("model `{model}`: empty batch")]
    Empty { model: &'static str },
    /// A model hyperparameter is out of range.
    #[error("model `{model}`: {why}")]
    Invalid { model: &'static str, why: String },
    /// A `[model]` key does not fit the data (a config's `build`).
    #[error("field `model.{field}`: {why}")]
    Field { field: &'static str, why: String },
}

/// Result alias of the models crate.
pub type Result<T, E = ModelError> = std::result::Result<T, E>;
