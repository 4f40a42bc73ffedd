//! fedcluster-sim: the in-process federation engine.
//!
//! [`run`] drives an algorithm's server half round by round through a
//! [`Transport`]; [`InProcess`] is the transport that runs every client half in
//! this process, in parallel over a rayon pool, and returns the replies in
//! client-id order so that results are bit-identical whatever the thread count.
//! After every round the engine hands a [`RoundEvent`] to an observer (metrics,
//! progress), and it rejects non-finite replies or models, naming the round and
//! the client.

mod engine;
mod error;
pub mod record;
mod transport;

pub use engine::{RoundEvent, run, run_from};
pub use error::EngineError;
pub use transport::{InProcess, Transport, check_plan, refused_shape};
