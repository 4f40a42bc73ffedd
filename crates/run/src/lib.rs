//! fedcluster's run library: everything that assembles, drives and persists one
//! experiment, shared by the `fedcluster` command (`fedcluster-cli`) and the
//! Python extension (`fedcluster-python`).
//!
//! A config ([`config::RunConfig`]) names a data set, a model and an algorithm;
//! [`experiment`] builds them and drives the rounds in process, [`network`] and
//! [`hosted_client`] across machines, [`bridge`] under an outside driver (the
//! Python halves, Flower). [`rundir`] writes what a run produced, [`checkpoint`]
//! lets it resume ([`fork`]: or start from another config's checkpoint),
//! [`model_file`] reads and writes its final models, [`chart`] draws its
//! curves (and the reproductions' plots).

pub mod bridge;
pub mod chart;
pub mod checkpoint;
pub mod config;
pub mod experiment;
pub mod fork;
pub mod hosted_client;
pub mod memory;
mod mid_round;
pub mod model;
pub mod model_file;
pub mod network;
pub mod outcome;
pub mod own_clients;
pub mod rundir;
pub mod whole_file;
