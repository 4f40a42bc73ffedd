//! The upper limit of every size a config or a data file may declare, checked
//! before anything of that size is allocated (with the field named), so an
//! absurd value is a clear error instead of an exhausted machine. The limits
//! sit far above every paper's experiment and the `many-clients` benchmark
//! (10,000,000 clients); docs/run-directory.md's "Limits" lists them.

/// Clients of a data set (training or test): 10^8.
pub const MAX_CLIENTS: usize = 100_000_000;
/// Clusters an algorithm or a synthetic data set may have.
pub const MAX_CLUSTERS: usize = 10_000;
/// Replicas run side by side (IFCA's restarts times swept step sizes).
pub const MAX_REPLICAS: usize = 10_000;
/// Worker threads.
pub const MAX_THREADS: usize = 1_024;
/// Federated rounds.
pub const MAX_ROUNDS: usize = 100_000_000;
/// Feature values of one client's samples (2^28, 1 GiB of `f32`).
pub const MAX_CLIENT_VALUES: u128 = 1 << 28;
/// Feature values a stored data set may hold in all (2^31, 8 GiB of `f32`);
/// larger synthetic regression sets are generated client by client instead.
pub const MAX_STORED_VALUES: u128 = 1 << 31;
/// Model coordinates a server may hold at once (replicas x clusters x
/// parameters: 2^31, 8 GiB of `f32`).
pub const MAX_MODEL_VALUES: u128 = 1 << 31;
/// Bytes of a config file.
pub const MAX_CONFIG_BYTES: u64 = 1 << 20;

/// `None` when `value <= limit`, else why not (for an error naming the
/// field); `what` says what `value` counts when it is not the field itself.
pub fn exceeds(what: &str, value: u128, limit: u128) -> Option<String> {
    (value > limit).then(|| {
        let what = if what.is_empty() {
            String::new()
        } else {
            format!("{what}: ")
        };
        format!("{what}{value} is above the limit of {limit}")
    })
}
