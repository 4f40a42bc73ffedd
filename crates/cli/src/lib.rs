//! The `fedcluster` command's library: the commands over the run library
//! (`fedcluster-run`), the reproduction harness, benchmarks, plots, tables,
//! progress bars, certificates and data-set downloads. The binary in `main.rs` is a thin clap front
//! end over it.

pub mod bench;
pub mod certs;
pub mod data_command;
pub mod fetch;
pub mod net_commands;
pub mod plot;
pub mod progress;
pub mod reproduce;
pub mod reproduce_command;
pub mod table;
