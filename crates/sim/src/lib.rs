//! fedcluster-sim: the in-process federation engine.
//!
//! [`run`] drives an algorithm's server half round by round through a
//! [`Transport`]; [`InProcess`] is the transport that runs every client half in
//! this process, in parallel over a rayon pool (clients with the most samples
//! first, each thread taking the next as it frees up), and returns the replies in
//! client-id order so that results are bit-identical whatever the thread count.
//! After every round the engine hands a [`RoundEvent`] to an observer (metrics,
//! progress), and it rejects non-finite replies or models, naming the round and
//! the client. A run may exchange a long round in parts and checkpoint
//! between them ([`parts`]).

mod engine;
mod error;
mod largest_first;
pub mod parts;
pub mod record;
mod transport;

pub use engine::{RoundEvent, Rounds, run, run_from, run_in_parts};
pub use error::EngineError;
pub use transport::{InProcess, Transport, check_plan, refused_shape};
