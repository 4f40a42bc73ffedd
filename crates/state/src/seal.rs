//! Sealed files: content bound to the identity of what it belongs to, under
//! a SHA-256.
//!
//! Layout: `FCSEAL01`, the identity's length (`u32`, little-endian) and its
//! UTF-8 text (e.g. `net round v1; config 3fa9...; round 4`), the content,
//! the content's length (`u64`), then the SHA-256 of every byte before it.
//! A reader checks the digest first (any flipped byte, a file cut short or
//! extended: [`StateError::Damaged`]), then the identity (a whole file of
//! another run, round or format version, e.g. two round files swapped:
//! [`StateError::OtherIdentity`]). The length is stored after the content so
//! that a large state can be streamed out ([`SealWriter`]) and checked in one
//! pass before it is decoded ([`verify_sealed_file`]).

use std::fs::File;
use std::io::{Read, Seek as _, SeekFrom, Write};
use std::path::Path;

use sha2::{Digest as _, Sha256};

use crate::StateError;
use crate::read::open_regular;

/// The first bytes of a sealed file (layout version 1).
pub const MAGIC: &[u8; 8] = b"FCSEAL01";
/// The longest identity.
pub const MAX_IDENTITY: usize = 4096;
/// Bytes after the content: its length and the digest.
const TRAILER: usize = 8 + 32;

/// The SHA-256 of `bytes` in hex, to name a config or a file in an identity.
pub fn digest_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

fn header(identity: &str) -> Vec<u8> {
    assert!(identity.len() <= MAX_IDENTITY, "identity too long");
    let mut h = Vec::with_capacity(12 + identity.len());
    h.extend_from_slice(MAGIC);
    h.extend_from_slice(&(identity.len() as u32).to_le_bytes());
    h.extend_from_slice(identity.as_bytes());
    h
}

/// `body` sealed with `identity`.
pub fn seal(identity: &str, body: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    let mut w = SealWriter::new(&mut out, identity).expect("writing to memory");
    w.write_all(body).expect("writing to memory");
    w.finish().expect("writing to memory");
    out
}

/// Writes a sealed file's content as it streams through.
pub struct SealWriter<W: Write> {
    inner: W,
    hasher: Sha256,
    len: u64,
}

impl<W: Write> SealWriter<W> {
    /// Writes the header of a file of `identity` to `inner`.
    pub fn new(mut inner: W, identity: &str) -> std::io::Result<Self> {
        let h = header(identity);
        inner.write_all(&h)?;
        Ok(Self {
            inner,
            hasher: Sha256::new_with_prefix(&h),
            len: 0,
        })
    }

    /// Writes the trailer (length and digest) and hands `inner` back.
    pub fn finish(mut self) -> std::io::Result<W> {
        let len = self.len.to_le_bytes();
        self.hasher.update(len);
        self.inner.write_all(&len)?;
        self.inner.write_all(&self.hasher.finalize())?;
        Ok(self.inner)
    }
}

impl<W: Write> Write for SealWriter<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.hasher.update(&buf[..n]);
        self.len += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

fn damaged(path: &Path, what: &str, why: &str) -> StateError {
    StateError::Damaged {
        path: path.to_path_buf(),
        what: what.to_string(),
        why: why.to_string(),
    }
}

/// The identity in a header's first bytes and the header's length.
fn parse_header<'a>(
    path: &Path,
    what: &str,
    bytes: &'a [u8],
) -> Result<(&'a [u8], usize), StateError> {
    if bytes.len() < 12 || &bytes[..8] != MAGIC {
        return Err(damaged(
            path,
            what,
            "it does not start as a sealed fedcluster file",
        ));
    }
    let id_len = u32::from_le_bytes(bytes[8..12].try_into().expect("4 bytes")) as usize;
    if id_len > MAX_IDENTITY || bytes.len() < 12 + id_len {
        return Err(damaged(path, what, "its header is cut short or changed"));
    }
    Ok((&bytes[12..12 + id_len], 12 + id_len))
}

fn check_identity(path: &Path, what: &str, found: &[u8], expected: &str) -> Result<(), StateError> {
    if found == expected.as_bytes() {
        return Ok(());
    }
    Err(StateError::OtherIdentity {
        path: path.to_path_buf(),
        what: what.to_string(),
        found: String::from_utf8_lossy(found).into_owned(),
        expected: expected.to_string(),
    })
}

/// The content of the sealed `bytes` (read from `path`), which must be whole
/// and of `identity`.
pub fn unseal<'a>(
    path: &Path,
    what: &str,
    identity: &str,
    bytes: &'a [u8],
) -> Result<&'a [u8], StateError> {
    let (found, start) = parse_header(path, what, bytes)?;
    if bytes.len() < start + TRAILER {
        return Err(damaged(path, what, "it is cut short"));
    }
    let end = bytes.len() - TRAILER;
    let len = u64::from_le_bytes(bytes[end..end + 8].try_into().expect("8 bytes"));
    if len != (end - start) as u64 {
        return Err(damaged(
            path,
            what,
            "its length does not match: cut short or extended",
        ));
    }
    if Sha256::digest(&bytes[..end + 8]).as_slice() != &bytes[end + 8..] {
        return Err(damaged(
            path,
            what,
            "its SHA-256 does not match its content",
        ));
    }
    check_identity(path, what, found, identity)?;
    Ok(&bytes[start..end])
}

/// Checks the sealed file `path` (a regular file of at most `limit` bytes)
/// in one streaming pass, without holding it in memory, and returns it
/// opened at its content with the content's length.
pub fn verify_sealed_file(
    path: &Path,
    what: &str,
    identity: &str,
    limit: u64,
) -> Result<(File, u64), StateError> {
    let (mut file, size) = open_regular(path, what)?;
    if size > limit {
        return Err(StateError::TooLarge {
            path: path.to_path_buf(),
            size,
            limit,
            what: what.to_string(),
        });
    }
    let io = |e| StateError::io(path, "read", e);
    let mut head = vec![0u8; (12 + MAX_IDENTITY).min(size as usize)];
    file.read_exact(&mut head).map_err(io)?;
    let (found, start) = parse_header(path, what, &head)?;
    let found = found.to_vec();
    if size < (start + TRAILER) as u64 {
        return Err(damaged(path, what, "it is cut short"));
    }
    let body_len = size - (start + TRAILER) as u64;
    let mut hasher = Sha256::new();
    file.seek(SeekFrom::Start(0)).map_err(io)?;
    let mut rest = size - 32;
    let mut buf = vec![0u8; 1 << 20];
    let mut last8 = [0u8; 8];
    while rest > 0 {
        let n = (rest as usize).min(buf.len());
        file.read_exact(&mut buf[..n]).map_err(io)?;
        hasher.update(&buf[..n]);
        rest -= n as u64;
        if rest == 0 {
            last8.copy_from_slice(&buf[n - 8..n]);
        }
    }
    let mut digest = [0u8; 32];
    file.read_exact(&mut digest).map_err(io)?;
    if u64::from_le_bytes(last8) != body_len {
        return Err(damaged(
            path,
            what,
            "its length does not match: cut short or extended",
        ));
    }
    if hasher.finalize().as_slice() != digest {
        return Err(damaged(
            path,
            what,
            "its SHA-256 does not match its content",
        ));
    }
    check_identity(path, what, &found, identity)?;
    file.seek(SeekFrom::Start(start as u64)).map_err(io)?;
    Ok((file, body_len))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sealed_body_comes_back_and_every_damage_is_refused() {
        let p = Path::new("round-000001.bin");
        let sealed = seal("round 1", b"replies");
        assert_eq!(
            unseal(p, "round file", "round 1", &sealed).unwrap(),
            b"replies"
        );
        for i in 0..sealed.len() {
            for bit in [0x01u8, 0x80] {
                let mut bad = sealed.clone();
                bad[i] ^= bit;
                let e = unseal(p, "round file", "round 1", &bad).unwrap_err();
                assert!(matches!(e, StateError::Damaged { .. }), "byte {i}: {e}");
            }
        }
        for cut in 0..sealed.len() {
            assert!(unseal(p, "round file", "round 1", &sealed[..cut]).is_err());
        }
        let mut longer = sealed.clone();
        longer.push(0);
        assert!(unseal(p, "round file", "round 1", &longer).is_err());
        let e = unseal(p, "round file", "round 2", &sealed)
            .unwrap_err()
            .to_string();
        assert!(e.contains("belongs to `round 1`, not to `round 2`"), "{e}");
    }

    #[test]
    fn a_sealed_file_is_checked_in_one_streaming_pass() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("checkpoint.bin");
        let body: Vec<u8> = (0..3_000_000u32).map(|i| (i % 251) as u8).collect();
        std::fs::write(&path, seal("run x", &body)).unwrap();
        let (mut file, len) = verify_sealed_file(&path, "checkpoint", "run x", 1 << 30).unwrap();
        let mut back = Vec::new();
        (&mut file).take(len).read_to_end(&mut back).unwrap();
        assert_eq!(back, body);
        let e = verify_sealed_file(&path, "checkpoint", "run x", 1000).unwrap_err();
        assert!(matches!(e, StateError::TooLarge { .. }), "{e}");
        let mut bad = std::fs::read(&path).unwrap();
        bad[2_000_000] ^= 4;
        std::fs::write(&path, &bad).unwrap();
        let e = verify_sealed_file(&path, "checkpoint", "run x", 1 << 30).unwrap_err();
        assert!(e.to_string().contains("SHA-256 does not match"), "{e}");
    }
}
