//! The `fedcluster` command's library: configs, experiment execution, run
//! directories, reproductions and benchmarks. The only crate that knows every
//! other one; the binary in `main.rs` is a thin clap front end over it.

pub mod bench;
pub mod bridge;
pub mod certs;
pub mod checkpoint;
pub mod config;
pub mod data_command;
pub mod experiment;
pub mod hosted_client;
pub mod model;
pub mod net_commands;
pub mod network;
pub mod own_clients;
pub mod plot;
pub mod progress;
pub mod reproduce;
pub mod reproduce_command;
pub mod rundir;
pub mod table;
pub mod whole_file;
