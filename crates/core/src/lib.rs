//! fedcluster-core: the vocabulary every other crate shares.
//!
//! - [`params`]: flat `f32` parameter vectors and their math (axpy, means,
//!   coordinate-wise trimmed mean and median, distances).
//! - [`linalg`]: the one place that calls the GEMM kernel.
//! - [`model`]: the [`Model`] trait (an architecture over a flat parameter slice),
//!   [`Batch`] views of local data and per-thread [`Workspace`]s.
//! - [`train`]: local training in one place: the full-batch, minibatch (SGD,
//!   Adam, augmentation) and proximal loops, and the optimizers' specs and state.
//! - [`rng`]: random streams derived from `(seed, purpose, round, client)`.
//! - [`federation`]: the seam between algorithms and transports: the server half,
//!   the client half and the messages they exchange.
//! - [`newcomer`]: how an algorithm places a client it has not assigned (a
//!   new client, a client never sampled) among its models, for metrics.
//! - [`input`]: [`Input`], what a data set declares of one sample (features,
//!   image shape, [`Task`]) and a model is built from.
//! - [`shards`]: the clients' local data, stored or produced on demand.
//! - [`limits`]: the upper limit of every size a config or a file may declare.
//!
//! No IO happens in this crate.

pub mod error;
pub mod federation;
pub mod input;
pub mod kernels;
pub mod limits;
pub mod linalg;
pub mod model;
pub mod newcomer;
pub mod params;
pub mod rng;
pub mod shards;

pub use error::{CoreError, Result};
pub use federation::{
    AlgoError, ClientEnv, ClientHalf, ClientId, Message, ReplicaView, RoundCtx, ServerHalf,
    Snapshot,
};
pub use input::{ImageShape, Input, Task};
pub use model::{Batch, MinibatchScratch, Model, Targets, TensorSpec, Workspace, train};
pub use newcomer::{LowestLoss, NewcomerRule, Placed};
pub use rng::{Purpose, Rng, stream};
pub use shards::{ShardBuf, Shards};
