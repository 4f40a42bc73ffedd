//! Paper reproductions: experiments are data ([`experiments`]); [`harness`]
//! runs their grids resumably and writes the report with the paper's numbers
//! beside ours. The `fedcluster reproduce` subcommands are in
//! [`crate::reproduce_command`].

pub mod experiments;
pub mod harness;
