//! How an algorithm gives one of its models to a client it has not assigned:
//! a new client never seen in training, or a training client never sampled.
//!
//! Metrics score such a client with the model this rule picks on the data the
//! client holds, the way the algorithm itself would place a newcomer; a
//! server half names its rule with [`crate::ServerHalf::newcomer`]. The
//! default is IFCA's, [`LowestLoss`]. A rule does no IO and keeps no state
//! between calls.

use crate::model::{Batch, Model, Workspace, argmin_f64};

/// The model a newcomer is given, and its loss on the newcomer's data when
/// the rule computed it (so that scoring need not compute it again).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Placed {
    /// Index of the chosen model among the models the rule was given.
    pub model: usize,
    /// The chosen model's mean loss on the newcomer's data, when known.
    pub loss: Option<f64>,
}

/// An algorithm's rule for placing a newcomer among its models.
pub trait NewcomerRule: Sync + std::fmt::Debug {
    /// A short name for reports and docs (`"lowest-loss"`).
    fn name(&self) -> &'static str;

    /// The model among `models` for a client holding `data`; `None` when
    /// there is no model to give.
    fn place(
        &self,
        models: &[&[f32]],
        data: Batch<'_>,
        model: &dyn Model,
        ws: &mut Workspace,
    ) -> Option<Placed>;
}

/// The model of lowest mean loss on the newcomer's data (IFCA, Ghosh et al.
/// 2022, Algorithm 2 line 6 and Section VI-B); ties go to the lowest index and
/// a NaN loss never wins.
#[derive(Debug, Clone, Copy, Default)]
pub struct LowestLoss;

impl NewcomerRule for LowestLoss {
    fn name(&self) -> &'static str {
        "lowest-loss"
    }

    fn place(
        &self,
        models: &[&[f32]],
        data: Batch<'_>,
        model: &dyn Model,
        ws: &mut Workspace,
    ) -> Option<Placed> {
        if models.is_empty() {
            return None;
        }
        let losses: Vec<f64> = models.iter().map(|m| model.loss(m, data, ws)).collect();
        let pick = argmin_f64(&losses);
        Some(Placed {
            model: pick,
            loss: Some(losses[pick]),
        })
    }
}
