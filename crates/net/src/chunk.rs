//! Payloads in chunks of at most [`MAX_CHUNK`] bytes, each with the SHA-256 of
//! its bytes, and their reassembly with every hash checked.

use prost::bytes::Bytes;
use sha2::{Digest, Sha256};

use crate::NetError;
use crate::pb::Chunk;

/// Largest chunk of payload: 4 MiB.
pub const MAX_CHUNK: usize = 4 << 20;

/// Largest gRPC message either side accepts: one chunk and its envelope.
pub const MAX_MESSAGE: usize = MAX_CHUNK + (64 << 10);

/// SHA-256 of `data`.
pub fn sha256(data: &[u8]) -> Bytes {
    Bytes::copy_from_slice(&Sha256::digest(data))
}

/// Number of chunks `len` bytes take (an empty payload is one empty chunk).
pub fn chunk_count(len: usize) -> usize {
    len.div_ceil(MAX_CHUNK).max(1)
}

/// Chunk `index` of `payload`.
pub fn chunk(payload: &[u8], index: usize) -> Option<Chunk> {
    let total = chunk_count(payload.len());
    if index >= total {
        return None;
    }
    let start = index * MAX_CHUNK;
    let data = &payload[start..(start + MAX_CHUNK).min(payload.len())];
    Some(Chunk {
        index: index as u32,
        total: total as u32,
        data: Bytes::copy_from_slice(data),
        sha256: sha256(data),
    })
}

/// Every chunk of `payload`, hashed once; cloning a chunk shares its bytes.
pub fn chunks(payload: &[u8]) -> Vec<Chunk> {
    (0..chunk_count(payload.len()))
        .filter_map(|i| chunk(payload, i))
        .collect()
}

/// Collects the chunks of one payload, in any order.
#[derive(Debug, Default)]
pub struct Assembler {
    parts: Vec<Option<Bytes>>,
    received: usize,
}

impl Assembler {
    /// Adds `chunk` after checking its hash and its place; returns the whole
    /// payload once every chunk is in.
    pub fn add(&mut self, chunk: Chunk) -> Result<Option<Vec<u8>>, NetError> {
        let (index, total) = (chunk.index as usize, chunk.total as usize);
        if total == 0 || index >= total || chunk.data.len() > MAX_CHUNK {
            return Err(NetError::Chunk(format!(
                "chunk {index} of {total} with {} bytes is out of bounds",
                chunk.data.len()
            )));
        }
        if sha256(&chunk.data) != chunk.sha256 {
            return Err(NetError::Chunk(format!(
                "chunk {index} of {total}: SHA-256 mismatch (corrupted in transit)"
            )));
        }
        if self.parts.is_empty() {
            self.parts = vec![None; total];
        } else if self.parts.len() != total {
            return Err(NetError::Chunk(format!(
                "chunk {index} says {total} chunks, earlier ones said {}",
                self.parts.len()
            )));
        }
        if self.parts[index].replace(chunk.data).is_none() {
            self.received += 1;
        }
        if self.received < total {
            return Ok(None);
        }
        let parts = std::mem::take(&mut self.parts);
        self.received = 0;
        let mut payload = Vec::with_capacity(parts.iter().flatten().map(Bytes::len).sum());
        for part in parts.iter().flatten() {
            payload.extend_from_slice(part);
        }
        Ok(Some(payload))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_payload_crosses_in_chunks_in_any_order() {
        let payload: Vec<u8> = (0..(2 * MAX_CHUNK + 123))
            .map(|i| (i % 251) as u8)
            .collect();
        let total = chunk_count(payload.len());
        assert_eq!(total, 3);
        let mut a = Assembler::default();
        assert_eq!(a.add(chunk(&payload, 2).unwrap()).unwrap(), None);
        assert_eq!(a.add(chunk(&payload, 0).unwrap()).unwrap(), None);
        assert_eq!(a.add(chunk(&payload, 1).unwrap()).unwrap(), Some(payload));
        assert!(chunk(&[], 0).is_some_and(|c| c.total == 1 && c.data.is_empty()));
        assert_eq!(chunks(&[1, 2, 3]).len(), 1);
    }

    #[test]
    fn a_tampered_chunk_is_detected() {
        let payload = vec![7u8; 1000];
        let mut c = chunk(&payload, 0).unwrap();
        let mut data = c.data.to_vec();
        data[10] ^= 1;
        c.data = data.into();
        let err = Assembler::default().add(c).unwrap_err().to_string();
        assert!(err.contains("SHA-256"), "{err}");
    }
}
