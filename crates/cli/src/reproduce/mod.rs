//! `fedcluster reproduce NAME`: one command per paper experiment, writing a
//! report with the paper's result beside ours.

pub mod ifca_success;

/// Reproductions that `fedcluster reproduce` knows, with a one-line description.
pub const EXPERIMENTS: &[(&str, &str)] = &[(
    "ifca-synthetic-success",
    "IFCA paper Fig. 3(a): success probability over (sigma, R), m=100, n=100, d=1000, k=2",
)];
