//! The `fedcluster` command's library: the commands over the run library
//! (`fedcluster-run`), the reproduction harness, benchmarks, plots, tables,
//! progress bars, certificates and data-set downloads. [`main_with_args`] is
//! the whole command line (clap's parsing, the dispatch, the exit status): the
//! binary in `main.rs` and the Python package's `fedcluster` console command
//! both call it.

pub mod app;
pub mod bench;
pub mod certs;
pub mod data_command;
pub mod data_export;
pub mod fetch;
pub mod net_commands;
pub mod plot;
pub mod progress;
pub mod reproduce;
pub mod reproduce_command;
pub mod run_command;
pub mod table;

pub use app::main_with_args;
