//! [`Shards`]: the clients' local data sets, stored or produced when a client
//! is asked for.
//!
//! A transport and the metrics see a federation's data only through this
//! trait, so a data set may keep every client in memory (a slice of
//! [`Batch`]es) or regenerate a client's samples from its random stream, or
//! gather them from one shared image array, when the client is sampled: the
//! memory of a run is then the data set once, not once per client. A produced
//! client is written into a caller-owned [`ShardBuf`], reused across clients,
//! so handing out a client allocates nothing once the buffer has grown.

use crate::federation::ClientId;
use crate::model::{Batch, Targets};

/// The local data of every client of a federation.
pub trait Shards: Sync {
    /// Number of clients.
    fn num_clients(&self) -> usize;

    /// Samples held by `client` (below [`Shards::num_clients`]).
    fn samples(&self, client: ClientId) -> usize;

    /// `client`'s data: borrowed from storage, or produced into `buf` and
    /// borrowed from it. The same client always yields the same batch.
    fn batch<'s>(&'s self, client: ClientId, buf: &'s mut ShardBuf) -> Batch<'s>;

    /// A hint that `client` is asked for soon: stored data may be fetched
    /// towards the CPU's caches meanwhile ([`crate::kernels::prefetch`]).
    /// Changes no result; by default nothing.
    fn prefetch(&self, _client: ClientId) {}

    /// A hint that [`Shards::prefetch`] is called for `client` soon: what
    /// finding its data reads (an index entry) may be fetched meanwhile, so
    /// that the prefetch itself does not wait on memory. Changes no result;
    /// by default nothing.
    fn prefetch_entry(&self, _client: ClientId) {}
}

/// Scratch space a produced client is written into; one per worker thread.
#[derive(Debug, Default)]
pub struct ShardBuf {
    /// Features, row-major.
    pub x: Vec<f32>,
    /// Real targets (regression).
    pub real: Vec<f32>,
    /// Class targets (classification).
    pub classes: Vec<u32>,
    /// Working space of the producer (e.g. an image being downsampled).
    pub scratch: Vec<f32>,
}

impl ShardBuf {
    /// The buffer as a regression batch of `n` samples of `dim` features,
    /// both resized (without shrinking capacity) for the caller to fill.
    /// (Only regression sets are produced on demand so far.)
    pub fn real_parts(&mut self, n: usize, dim: usize) -> (&mut [f32], &mut [f32]) {
        self.x.resize(n * dim, 0.0);
        self.real.resize(n, 0.0);
        (&mut self.x, &mut self.real)
    }

    /// The buffer as a classification batch of `n` samples of `dim` features,
    /// and the scratch space, resized (without shrinking capacity) for the
    /// caller to fill.
    pub fn class_parts(
        &mut self,
        n: usize,
        dim: usize,
        scratch: usize,
    ) -> (&mut [f32], &mut [u32], &mut [f32]) {
        self.x.resize(n * dim, 0.0);
        self.classes.resize(n, 0);
        self.scratch.resize(scratch, 0.0);
        (&mut self.x, &mut self.classes, &mut self.scratch)
    }

    /// The classification batch last written by [`ShardBuf::class_parts`].
    pub fn class_batch(&self, dim: usize) -> Batch<'_> {
        Batch {
            x: &self.x,
            y: Targets::Class(&self.classes),
            dim,
        }
    }

    /// The regression batch last written by [`ShardBuf::real_parts`].
    pub fn real_batch(&self, dim: usize) -> Batch<'_> {
        Batch {
            x: &self.x,
            y: Targets::Real(&self.real),
            dim,
        }
    }
}

/// Stored clients: client `i` is `self[i]`.
impl Shards for Vec<Batch<'_>> {
    fn num_clients(&self) -> usize {
        self.len()
    }

    fn samples(&self, client: ClientId) -> usize {
        self[client].len()
    }

    fn batch<'s>(&'s self, client: ClientId, _buf: &'s mut ShardBuf) -> Batch<'s> {
        self[client]
    }
}
