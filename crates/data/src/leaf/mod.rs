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

pub mod alphabet;
pub mod dir;
pub mod json;
pub mod plays;
pub mod samples;
pub mod shakespeare;

pub use dir::{SplitUser, read_leaf_dir, write_leaf_dir};
pub use json::{LeafSamples, LeafUser, Split, read_leaf_json, write_leaf_json};
pub use shakespeare::{PlayStats, ShakespeareSpec, shakespeare, users_from_plays};

#[cfg(test)]
mod tests;
