//! Mechanics shared by several algorithms: validated configs, model
//! initialisation, client sampling, per-cluster aggregation, k-means,
//! threshold-graph components, agglomerative clustering, a model's head
//! trained behind a frozen trunk, and the step size over a run's rounds.

pub mod agglomerative;
pub mod aggregate;
pub mod checked;
pub mod graph;
pub mod head_only;
pub mod init;
pub mod kmeans;
pub mod messages;
pub mod mixture;
pub mod optimizer;
pub mod recipe;
pub mod round_schedule;
pub mod sampling;
pub mod trainer;

#[cfg(test)]
mod round_schedule_tests;
