//! [`TestPick::LowestLoss`] and [`TestPick::HighestAccuracy`]: each test
//! client is a new client that picks one of the replica's models from its own
//! data (the algorithm's newcomer rule, or the model of highest accuracy), and
//! is scored on it; the scores are weighted by samples.

use rayon::prelude::*;

use fedcluster_core::model::argmin_f64;
use fedcluster_core::{NewcomerRule, ReplicaView};

use super::{Scratch, TestPick, TestSet};

/// What the test clients make of one replica.
pub(super) struct Evaluation {
    /// Sample-weighted mean test loss.
    pub(super) loss: Option<f64>,
    /// Sample-weighted test accuracy (classification).
    pub(super) accuracy: Option<f64>,
    /// The model each test client picked.
    pub(super) chosen: Vec<Option<usize>>,
}

/// Mean test loss and accuracy (sample-weighted) of one replica, and the model
/// each test client picked (`None` where the newcomer rule placed it nowhere:
/// accuracy 0, infinite loss).
pub(super) fn evaluate(
    view: &ReplicaView<'_>,
    test: &TestSet<'_>,
    newcomer: &dyn NewcomerRule,
) -> Evaluation {
    let per_client: Vec<(f64, Option<usize>, usize, Option<usize>)> = (0..test
        .clients
        .num_clients())
        .into_par_iter()
        .map_init(Scratch::default, |Scratch(ws, buf), i| {
            let batch = test.clients.batch(i, buf);
            // Each model is scored once, by what picks it; the pick's other
            // number is computed once more.
            match test.pick {
                TestPick::LowestLoss => {
                    let placed = newcomer
                        .place(&view.models, batch, test.model, ws)
                        .filter(|p| p.model < view.models.len());
                    let Some(placed) = placed else {
                        return (f64::INFINITY, Some(0), batch.len(), None);
                    };
                    let params = view.models[placed.model];
                    let loss = (placed.loss).unwrap_or_else(|| test.model.loss(params, batch, ws));
                    let correct = test.model.count_correct(params, batch, ws);
                    (loss, correct, batch.len(), Some(placed.model))
                }
                TestPick::HighestAccuracy
                | TestPick::Assigned
                | TestPick::Own
                | TestPick::Personal => {
                    let correct: Vec<Option<usize>> = (view.models.iter())
                        .map(|m| test.model.count_correct(m, batch, ws))
                        .collect();
                    let errors: Vec<f64> = (correct.iter())
                        .map(|c| (batch.len() - c.unwrap_or(0)) as f64)
                        .collect();
                    let pick = argmin_f64(&errors);
                    let loss = test.model.loss(view.models[pick], batch, ws);
                    (loss, correct[pick], batch.len(), Some(pick))
                }
            }
        })
        .collect();
    let chosen = per_client.iter().map(|c| c.3).collect();
    let samples: usize = per_client.iter().map(|c| c.2).sum();
    if samples == 0 {
        return Evaluation {
            loss: None,
            accuracy: None,
            chosen,
        };
    }
    let loss = per_client.iter().map(|c| c.0 * c.2 as f64).sum::<f64>() / samples as f64;
    let accuracy = per_client
        .iter()
        .map(|c| c.1.map(|k| k as f64))
        .sum::<Option<f64>>()
        .map(|correct| correct / samples as f64);
    Evaluation {
        loss: Some(loss),
        accuracy,
        chosen,
    }
}
