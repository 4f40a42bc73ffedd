//! The errors of a federated run, shared by the engine and the transports.

use thiserror::Error;

use fedcluster_core::{AlgoError, ClientId};

/// Errors of a federated run.
#[derive(Debug, Error)]
pub enum EngineError {
    /// The engine could not be set up.
    #[error("setup: {0}")]
    Setup(String),
    /// The server produced an invalid plan.
    #[error("invalid plan: {0}")]
    Plan(String),
    /// A client half failed. (The message includes the cause, so it is not
    /// also the error's source: `{:#}` would print it twice.)
    #[error("round {round}, client {client}: {error}")]
    Client {
        round: usize,
        client: ClientId,
        error: AlgoError,
    },
    /// The server half failed.
    #[error("round {round}: {error}")]
    Server { round: usize, error: AlgoError },
    /// A reply or a model holds NaN or infinity.
    #[error("non-finite values at round {round}{}: {what}", client.map(|c| format!(", client {c}")).unwrap_or_default())]
    NonFinite {
        round: usize,
        client: Option<ClientId>,
        what: String,
    },
    /// The observer asked to stop (e.g. a metrics sink failed).
    #[error("stopped by observer: {0}")]
    Stopped(String),
    /// The transport failed (networked mode: too few replies, IO).
    #[error("transport: {0}")]
    Transport(String),
}
