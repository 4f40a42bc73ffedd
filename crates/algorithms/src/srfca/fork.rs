//! Forking an SR-FCA run before ONE_SHOT's clustering (`--fork-from`): SR-FCA
//! and ONE_SHOT-IFCA share ONE_SHOT (the local models and their pairwise
//! losses, hours of a large model's run), so one run's checkpoint taken
//! before the clusters are found goes on as the other.
//!
//! Until ONE_SHOT clusters (the end of the pairwise-loss round, or of the last
//! local round with the ℓ2 distance) the server and the clients have used
//! the fields that train and score the local models and nothing else. The
//! fields below are read only from the clustering on, so a fork may change
//! them; every other field must be the checkpoint's. The client halves are
//! kept: none of these fields is held by a client (its resampling blocks
//! and REFINE schedule follow `then` too, but only with `resample` or
//! `refine_schedule`, which may not change and which `then = "ifca"`
//! refuses, so both configs have neither).

use super::config::Config;
use super::server::{SrFcaServer, Stage};
use crate::common::checked::Checked;

/// The fields a fork before ONE_SHOT's clustering may change (relative to
/// `[algorithm]`).
pub const FORKABLE: [&str; 6] = [
    "then",
    "threshold",
    "min_size",
    "clustering",
    "trim",
    "clients_per_round",
];

/// `config` with the [`FORKABLE`] fields of `to`.
fn with_forkable_of(config: &Config, to: &Config) -> Config {
    Config {
        then: to.then,
        threshold: to.threshold,
        min_size: to.min_size,
        clustering: to.clustering,
        trim: to.trim,
        clients_per_round: to.clients_per_round,
        ..config.clone()
    }
}

/// `server` goes on under `config` when it has not clustered yet and the
/// configs differ only in [`FORKABLE`] fields; `differing` names the
/// fields that differ, for the error.
pub(super) fn continue_under(
    server: &mut SrFcaServer,
    config: &Checked<Config>,
    differing: &[String],
) -> Result<(), String> {
    let before_clustering = matches!(server.stage, Stage::Local | Stage::PairLosses);
    if !before_clustering || server.lambda.is_some() {
        return Err(format!(
            "the checkpoint is past ONE_SHOT's clustering (stage {:?}): an SR-FCA run forks \
             only before its clusters are found",
            server.stage
        ));
    }
    let fixed: Vec<&str> = differing
        .iter()
        .map(String::as_str)
        .filter(|field| !FORKABLE.contains(&field.split('.').next().unwrap_or(field)))
        .collect();
    if !fixed.is_empty() || with_forkable_of(&server.config, config) != **config {
        return Err(format!(
            "a fork before ONE_SHOT's clustering may change only {}; this config also changes {}",
            FORKABLE.join(", "),
            if fixed.is_empty() {
                "a field the checkpoint used".to_string()
            } else {
                fixed.join(", ")
            }
        ));
    }
    server.config = config.clone();
    Ok(())
}
