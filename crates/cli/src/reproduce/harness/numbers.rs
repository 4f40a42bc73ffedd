//! Numbers as the report and the claims show them: the decimals of each
//! metric and the mean and standard deviation over seeds.

use super::spec::{Field, Metric};

/// Decimals to show for `metric`.
pub(super) fn digits(metric: Metric) -> usize {
    match metric {
        Metric::Final(f)
        | Metric::AtEval(f, _)
        | Metric::AtRound(f, _)
        | Metric::BestReplica(f)
        | Metric::MeanOverLast(f, _) => match f {
            Field::ParamError | Field::TestLoss | Field::TrainLoss => 4,
            Field::ClustersFound => 1,
            _ => 2,
        },
        Metric::IfcaSuccess { .. } | Metric::MsPerRound { .. } | Metric::BestTestAccuracy => 2,
        Metric::Seconds | Metric::SettledAt(_) => 1,
    }
}

/// Mean and sample standard deviation (0 for fewer than two values).
pub(super) fn mean_std(v: &[f64]) -> (f64, f64) {
    let n = v.len().max(1) as f64;
    let mean = v.iter().sum::<f64>() / n;
    let var = v.iter().map(|x| (x - mean).powi(2)).sum::<f64>()
        / (v.len().saturating_sub(1).max(1)) as f64;
    (mean, var.sqrt())
}
