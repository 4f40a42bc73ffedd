//! LEAF (Caldas et al. 2018) data: its JSON format and its Shakespeare
//! preprocessing.
//!
//! - [`alphabet`]: LEAF's 80-symbol Shakespeare alphabet.
//! - [`plays`]: speaking roles from the Project Gutenberg plays.
//! - [`samples`]: text windows stored compactly, LEAF's text normalisation
//!   and its per-user train/test split.
//! - [`json`]: one LEAF JSON file (`users`, `num_samples`, `user_data`),
//!   read streaming and written.
//! - [`dir`]: a LEAF directory (`train/`, `test/`), read and written.
//! - [`shakespeare`]: LEAF Shakespeare from the plays or a LEAF directory, and
//!   the federation of `[data] kind = "shakespeare"`.
//! - [`femnist`]: LEAF FEMNIST (one client per writer, 28x28 greyscale
//!   characters of 62 classes) from a LEAF directory, the federation of
//!   `[data] kind = "femnist"`.

pub mod alphabet;
pub mod dir;
pub mod femnist;
pub mod json;
pub mod plays;
pub mod samples;
pub mod shakespeare;

pub use dir::{SplitUser, read_leaf_dir, read_leaf_dir_checked, write_leaf_dir};
pub use femnist::{FemnistSpec, femnist};
pub use json::{
    LeafSamples, LeafUser, Split, UserCheck, read_leaf_json, read_leaf_json_checked,
    write_leaf_json,
};
pub use shakespeare::{PlayStats, ShakespeareSpec, shakespeare, users_from_plays};

use std::path::Path;

use rand::seq::index::sample;

use fedcluster_core::{Purpose, stream};

use crate::error::{DataError, Result};

/// The indices, sorted, of `clients` of `available` users (0: all of them),
/// drawn by `seed` uniformly without replacement, as the SR-FCA paper's code
/// samples its clients; more clients than users is an error naming `clients`,
/// what the users are (`users`, `writers`) and `dir`.
pub(crate) fn sample_users(
    clients: usize,
    available: usize,
    seed: u64,
    what: &str,
    dir: &Path,
) -> Result<Vec<usize>> {
    let count = match clients {
        0 => available,
        c if c > available => {
            return Err(DataError::invalid(
                "clients",
                format!("{c} clients from {available} {what} in {}", dir.display()),
            ));
        }
        c => c,
    };
    let mut picked = sample(
        &mut stream(seed, Purpose::Partition, 0, 0),
        available,
        count,
    )
    .into_vec();
    picked.sort_unstable();
    Ok(picked)
}

#[cfg(test)]
mod tests;
