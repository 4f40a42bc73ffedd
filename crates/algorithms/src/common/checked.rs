//! Configs go from unchecked to validated: an algorithm accepts only a
//! [`Checked`] config, which can be built only by passing validation.

use std::ops::Deref;

use thiserror::Error;

/// A config value that failed validation, with the path of the offending field
/// relative to the algorithm's config table.
#[derive(Debug, Clone, Error, PartialEq)]
#[error("{field}: {message}")]
pub struct FieldError {
    /// Dotted path of the field, e.g. `clusters`.
    pub field: String,
    /// What is wrong with it.
    pub message: String,
}

impl FieldError {
    /// A new error for `field`.
    pub fn new(field: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            field: field.into(),
            message: message.into(),
        }
    }

    /// The same error with `prefix.` put before the field path.
    pub fn within(mut self, prefix: &str) -> Self {
        self.field = format!("{prefix}.{}", self.field);
        self
    }
}

/// A config that can check itself.
pub trait Validate {
    /// Checks every field, reporting the first bad one.
    fn validate(&self) -> Result<(), FieldError>;
}

/// A config that passed [`Validate::validate`]. It serialises as the config
/// itself and is validated again when read back (a checkpoint).
#[derive(Debug, Clone, serde::Serialize)]
#[serde(transparent)]
pub struct Checked<T>(T);

impl<'de, T: Validate + serde::Deserialize<'de>> serde::Deserialize<'de> for Checked<T> {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Checked::new(T::deserialize(deserializer)?).map_err(serde::de::Error::custom)
    }
}

impl<T: Validate> Checked<T> {
    /// Validates `config`.
    pub fn new(config: T) -> Result<Self, FieldError> {
        config.validate()?;
        Ok(Self(config))
    }
}

impl<T> Checked<T> {
    /// The validated config.
    pub fn into_inner(self) -> T {
        self.0
    }
}

impl<T> Deref for Checked<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.0
    }
}

/// `Ok` when `value > 0`.
pub fn positive(field: &str, value: f64) -> Result<(), FieldError> {
    if value > 0.0 && value.is_finite() {
        Ok(())
    } else {
        Err(FieldError::new(
            field,
            format!("must be a positive number, got {value}"),
        ))
    }
}

/// `Ok` when `value >= 1`.
pub fn at_least_one(field: &str, value: usize) -> Result<(), FieldError> {
    if value >= 1 {
        Ok(())
    } else {
        Err(FieldError::new(field, "must be at least 1, got 0"))
    }
}

/// `Ok` when `0 < value <= 1`.
pub fn fraction(field: &str, value: f64) -> Result<(), FieldError> {
    if value > 0.0 && value <= 1.0 {
        Ok(())
    } else {
        Err(FieldError::new(
            field,
            format!("must lie in (0, 1], got {value}"),
        ))
    }
}

/// `Ok` when `value` is at most `limit` (one of [`fedcluster_core::limits`]).
pub fn at_most(field: &str, value: usize, limit: usize) -> Result<(), FieldError> {
    match fedcluster_core::limits::exceeds("", value as u128, limit as u128) {
        Some(why) => Err(FieldError::new(field, why)),
        None => Ok(()),
    }
}
