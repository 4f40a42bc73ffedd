//! Networked federation: the same algorithm code across processes and
//! machines.
//!
//! A [`Coordinator`] runs the algorithm's server half through the engine (it
//! is a [`fedcluster_sim::Transport`]); each client process holds one client's
//! data, [joins](Session::join) the coordinator and [serves](Session::serve)
//! its rounds with the algorithm's client half. The protocol is gRPC (tonic and
//! prost) over TLS, in the versioned package `fedcluster.v1`
//! (`proto/fedcluster/v1/federation.proto`): clients dial out and pull their
//! work; payloads cross in SHA-256-checked chunks of at most 4 MiB.

pub mod checkpoint;
pub mod chunk;
pub mod client;
pub mod codec;
pub mod coordinator;
pub mod security;

pub use client::{ClientStats, JoinOptions, Session};
pub use coordinator::{Coordinator, CoordinatorOptions, NetStats, ReplyIssue};
pub use security::{ClientTls, ServerTls};

use thiserror::Error;

/// Generated protocol types and service stubs.
#[allow(missing_docs, clippy::all, clippy::pedantic)]
pub mod pb {
    tonic::include_proto!("fedcluster.v1");
}

/// The protocol version this build speaks.
pub const PROTOCOL_VERSION: u32 = 1;

/// What can go wrong on the wire.
#[derive(Debug, Error)]
pub enum NetError {
    /// A bad option (address, TLS material, token).
    #[error("{0}")]
    Config(String),
    /// Sockets and runtimes.
    #[error("{0}")]
    Io(String),
    /// The peer answered with an error status.
    #[error("{code:?}: {message}")]
    Rpc {
        /// The gRPC status code.
        code: tonic::Code,
        /// Its message.
        message: String,
    },
    /// A chunk failed its checks.
    #[error("chunk: {0}")]
    Chunk(String),
    /// A message did not encode or decode.
    #[error("codec: {0}")]
    Codec(String),
    /// The peer broke the protocol.
    #[error("protocol: {0}")]
    Protocol(String),
    /// Too few clients or replies in time.
    #[error("{0}")]
    Timeout(String),
    /// The algorithm's client half failed.
    #[error("algorithm: {0}")]
    Algorithm(String),
}

impl NetError {
    /// Whether trying again later may succeed (the coordinator is not up yet).
    pub fn is_retryable(&self) -> bool {
        match self {
            NetError::Io(_) => true,
            NetError::Rpc { code, .. } => *code == tonic::Code::Unavailable,
            _ => false,
        }
    }
}

impl From<tonic::Status> for NetError {
    fn from(s: tonic::Status) -> Self {
        NetError::Rpc {
            code: s.code(),
            message: s.message().to_string(),
        }
    }
}
