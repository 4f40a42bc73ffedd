//! State files: what fedcluster writes and later reads back to decide what
//! it computes (run checkpoints, a coordinator's round files, the finished
//! runs of a reproduction), and how every such read is bounded.
//!
//! - [`seal`]: a file's content with its identity (config, round, seed,
//!   format version) and a SHA-256 over both; a file that was damaged, cut
//!   short, swapped for another or written for another run is refused by
//!   name, never turned into a different result.
//! - [`read`]: regular files only (a FIFO, a device or a directory is refused
//!   by name without blocking), their size checked against the limit of that
//!   kind of file before a byte is read.
//!
//! - [`listed`]: a directory's files under the SHA-256 of each
//!   (`checksums.sha256`), for the data sets fedcluster writes; checked when
//!   read back, a directory without a list read unchecked.
//!
//! No workspace crate below it, so `run`, `net`, `cli` and `data` can all use
//! it; errors are [`StateError`], each naming its file.

pub mod error;
pub mod listed;
pub mod read;
pub mod seal;

pub use error::StateError;
pub use listed::{CHECKSUMS, verify_listed, write_listed};
pub use read::{open_regular, read_bounded, read_string_bounded};
pub use seal::{SealWriter, digest_hex, seal, unseal, verify_sealed_file};
