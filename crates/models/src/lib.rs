//! fedcluster-models: architectures over flat `f32` parameters.
//!
//! - [`linear`]: [`LinearRegression`], squared loss, the IFCA synthetic-data model,
//!   with batched kernels for evaluating many models and for the IFCA client step;
//!   its `[model]` config [`LinearConfig`].
//! - [`logistic`]: [`LogisticRegression`], multinomial (softmax) regression, and
//!   [`LogisticConfig`].
//! - [`mlp`], [`cnn`]: [`Mlp`] and [`Cnn`], the papers' MNIST networks (the
//!   CNN with valid or same padding: LEAF's FEMNIST CNN too).
//! - [`resnet9`]: [`ResNet9`] (Page 2019) with batch normalisation, its
//!   running statistics in the flat vector (the burn tier's `resnet9` on the
//!   same flat vector), or the SR-FCA public code's variant of it.
//! - [`tf_cifar`]: [`TfCifarCnn`], the IFCA public code's CIFAR-10 network (the
//!   TF CIFAR-10 tutorial's: local response normalisation, 24x24 crops and
//!   per-image standardisation as its input stage, label smoothing).
//! - [`lstm`]: [`CharLstm`], LEAF's Shakespeare character LSTM (the burn
//!   tier's `char-lstm` on the same flat vector).
//! - Local training is `fedcluster_core::train` (its tests on these models
//!   are `tests/train.rs`).
//! - [`gradcheck`]: analytic gradients against central finite differences.
//!
//! Models implement [`fedcluster_core::Model`], whose methods cannot fail. Data is
//! therefore validated once, when a client is built: call [`check_targets`] (or a
//! model's `check_batch`, which also checks shapes and finiteness). A batch that was
//! not validated never makes a model panic: mismatched targets or shapes give a NaN
//! loss and a NaN gradient, which the caller's divergence check catches.

pub mod cnn;
pub mod error;
pub mod gradcheck;
pub mod init;
pub mod linear;
pub mod logistic;
pub mod lstm;
pub mod mlp;
pub mod resnet9;
pub mod tf_cifar;

pub use cnn::Cnn;
pub use error::{ModelError, Result};
pub use linear::{LinearConfig, LinearRegression};
pub use logistic::{LogisticConfig, LogisticRegression};
pub use lstm::CharLstm;
pub use mlp::Mlp;
pub use resnet9::ResNet9;
pub use tf_cifar::TfCifarCnn;

use fedcluster_core::{Batch, Targets};

/// The kind of targets a model trains on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TargetKind {
    /// Real-valued targets ([`Targets::Real`]).
    Real,
    /// Class indices ([`Targets::Class`]) below `classes`.
    Class { classes: usize },
}

/// Checks that `batch` carries the targets `expected` by the model named `model`:
/// the right kind, class indices in range, real targets finite.
pub fn check_targets(model: &'static str, expected: TargetKind, batch: Batch<'_>) -> Result<()> {
    let kind_err = |expected, got| ModelError::TargetKind {
        model,
        expected,
        got,
    };
    match (expected, batch.y) {
        (TargetKind::Real, Targets::Real(y)) => match y.iter().position(|v| !v.is_finite()) {
            Some(index) => Err(ModelError::NonFinite {
                model,
                what: "target",
                index,
            }),
            None => Ok(()),
        },
        (TargetKind::Class { classes }, Targets::Class(y)) => {
            match y.iter().position(|&c| c as usize >= classes) {
                Some(index) => Err(ModelError::ClassOutOfRange {
                    model,
                    index,
                    class: y[index],
                    classes,
                }),
                None => Ok(()),
            }
        }
        (TargetKind::Real, Targets::Class(_)) => Err(kind_err("real", "class")),
        (TargetKind::Class { .. }, Targets::Real(_)) => Err(kind_err("class", "real")),
    }
}

/// Checks everything a model assumes of a batch: non-empty, `dim` features per
/// sample, finite features, and the targets (see [`check_targets`]).
pub fn check_batch(
    model: &'static str,
    dim: usize,
    expected: TargetKind,
    batch: Batch<'_>,
) -> Result<()> {
    if batch.is_empty() {
        return Err(ModelError::Empty { model });
    }
    if !fits(batch, dim) {
        return Err(ModelError::Dim {
            model,
            expected: dim,
            got: batch.dim,
        });
    }
    if let Some(index) = batch.x.iter().position(|v| !v.is_finite()) {
        return Err(ModelError::NonFinite {
            model,
            what: "feature",
            index,
        });
    }
    check_targets(model, expected, batch)
}

/// Whether the batch has `dim` features per sample and exactly `len * dim` values
/// (the fields of [`Batch`] are public, so an unchecked batch may not).
pub(crate) fn fits(batch: Batch<'_>, dim: usize) -> bool {
    batch.dim == dim && Some(batch.x.len()) == batch.len().checked_mul(dim)
}

/// The class labels of a batch that fits `dim` features per sample; `None`
/// for real targets or a batch of another shape.
pub(crate) fn class_targets(batch: Batch<'_>, dim: usize) -> Option<&[u32]> {
    match batch.y {
        Targets::Class(y) if fits(batch, dim) => Some(y),
        _ => None,
    }
}

/// `1 / n` as the scale of a mean; `0` for an empty batch, whose mean loss and
/// gradient are defined as zero.
pub(crate) fn inv_len(n: usize) -> f64 {
    if n == 0 { 0.0 } else { 1.0 / n as f64 }
}

#[cfg(test)]
pub(crate) mod testutil;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn check_targets_reports_kind_range_and_finiteness() {
        let x = [0.0f32; 4];
        let classes = [0u32, 2];
        let reals = [1.0f32, f32::NAN];
        let cls = Batch::new(&x, Targets::Class(&classes), 2).unwrap();
        let real = Batch::new(&x, Targets::Real(&reals), 2).unwrap();
        assert!(matches!(
            check_targets("linear", TargetKind::Real, cls),
            Err(ModelError::TargetKind { .. })
        ));
        assert!(matches!(
            check_targets("logistic", TargetKind::Class { classes: 3 }, real),
            Err(ModelError::TargetKind { .. })
        ));
        assert_eq!(
            check_targets("logistic", TargetKind::Class { classes: 2 }, cls),
            Err(ModelError::ClassOutOfRange {
                model: "logistic",
                index: 1,
                class: 2,
                classes: 2
            })
        );
        assert_eq!(
            check_targets("logistic", TargetKind::Class { classes: 3 }, cls),
            Ok(())
        );
        assert!(matches!(
            check_targets("linear", TargetKind::Real, real),
            Err(ModelError::NonFinite { index: 1, .. })
        ));
    }

    #[test]
    fn check_batch_reports_shape_and_features() {
        let y = [1.0f32, 2.0];
        let x = [0.0f32, 1.0, f32::INFINITY, 3.0];
        let b = Batch::new(&x, Targets::Real(&y), 2).unwrap();
        assert!(matches!(
            check_batch("linear", 3, TargetKind::Real, b),
            Err(ModelError::Dim { .. })
        ));
        assert!(matches!(
            check_batch("linear", 2, TargetKind::Real, b),
            Err(ModelError::NonFinite { index: 2, .. })
        ));
        let empty = Batch::new(&[], Targets::Real(&[]), 2).unwrap();
        assert!(matches!(
            check_batch("linear", 2, TargetKind::Real, empty),
            Err(ModelError::Empty { .. })
        ));
    }
}
