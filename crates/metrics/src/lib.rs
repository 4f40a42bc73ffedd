//! fedcluster-metrics: how well a clustered-FL run recovered the truth.
//!
//! - [`permutation`]: an exact minimum-cost assignment solver (Hungarian method
//!   with potentials, O(k³)), used to match learned models to true clusters.
//! - [`clustering`]: parameter error up to permutation (the IFCA paper's
//!   `dist`), per-client parameter error, misclustering rate under the best
//!   relabelling, and the adjusted Rand index.
//! - [`partition`]: agreement with the truth as partitions, with no matching
//!   of labels: the adjusted Rand index and the normalised mutual information
//!   (arithmetic mean), unassigned clients each a cluster of one.
//!
//! Metrics read ground-truth labels and parameters; algorithms never do.

pub mod clustering;
pub mod error;
pub mod partition;
pub mod permutation;

pub use clustering::{adjusted_rand_index, misclustering, param_error, per_client_param_error};
pub use error::{MetricsError, Result};
pub use partition::{Agreement, agreement, normalized_mutual_info, with_singletons};
pub use permutation::{Assignment, min_cost_assignment};
