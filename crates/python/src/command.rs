//! `fedcluster._native.main`: the `fedcluster` command line for the Python
//! package's console command (`fedcluster.cli`), the Rust binary's own
//! [`fedcluster_cli::main_with_args`]: the same subcommands, flags, output and
//! exit statuses.

use std::ffi::OsString;
use std::panic::{AssertUnwindSafe, catch_unwind};

use pyo3::prelude::*;

/// The exit status of a Rust program that panicked (the panic's message is
/// printed by the panic hook, as the binary prints it).
const PANICKED: u8 = 101;

/// Runs the `fedcluster` command with `argv` (the first is the program's
/// name) and returns its exit status. The GIL is released while it runs; it
/// prints to the process's standard output and error and never exits the
/// interpreter.
#[pyfunction]
pub fn main(py: Python<'_>, argv: Vec<OsString>) -> u8 {
    py.detach(move || {
        catch_unwind(AssertUnwindSafe(|| fedcluster_cli::main_with_args(argv))).unwrap_or(PANICKED)
    })
}
