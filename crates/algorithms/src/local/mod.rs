//! Local training: every client trains its own model on its own data and nothing
//! is averaged (the *local model* baseline of the IFCA paper, Section VI-B).
//!
//! Round protocol:
//! 1. The server samples the participating clients and tells them to train.
//! 2. Each participant runs `local_steps` full-batch gradient steps on its own
//!    model (drawn with its client stream the first time) and reports the model,
//!    so that the server can evaluate it.
//! 3. The server keeps the latest model of every client.

mod client;
mod server;

pub use client::LocalClient;
pub use server::{Config, LocalServer, TrainLocally};

#[cfg(test)]
mod tests;
