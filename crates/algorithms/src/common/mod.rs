//! Mechanics shared by several algorithms: validated configs, model
//! initialisation, client sampling, per-cluster aggregation, k-means and
//! threshold-graph components.

pub mod aggregate;
pub mod checked;
pub mod graph;
pub mod init;
pub mod kmeans;
pub mod messages;
pub mod sampling;
pub mod trainer;
