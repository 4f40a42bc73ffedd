//! `fedcluster`: run, reproduce and benchmark clustered federated learning.
//! The command itself is [`fedcluster_cli::main_with_args`].

use std::process::ExitCode;

/// mimalloc keeps freed pages for reuse: every round allocates and frees the
/// clients' reply buffers, which with the system allocator cost page faults
/// (16% of a reproduction's time went to the kernel).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    ExitCode::from(fedcluster_cli::main_with_args(std::env::args_os()))
}
