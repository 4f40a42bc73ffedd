//! Mechanics shared by several algorithms: validated configs, model
//! initialisation, client sampling, per-cluster aggregation and k-means.

pub mod aggregate;
pub mod checked;
pub mod init;
pub mod kmeans;
pub mod messages;
pub mod sampling;
