//! Reader of the IDX files of MNIST (LeCun, Cortes, Burges).
//!
//! An IDX file is a big-endian header followed by the values, row-major: the
//! magic number `0x0000_08DD` (type `08`: unsigned bytes; `DD` dimensions), then
//! one `u32` size per dimension. Images are `0x0000_0803` (count, rows, cols),
//! labels `0x0000_0801` (count).
//!
//! A file starting with the gzip magic bytes `1f 8b` is decompressed in memory,
//! whatever its name, up to one byte past the length its header declares;
//! any other file is read as it is. No file may exceed [`MAX_IDX_BYTES`]. A file must hold exactly
//! what its header declares: a shorter payload is reported as truncated, and
//! bytes after the payload are rejected as well (the canonical files have none,
//! so extra bytes mean a wrong or damaged file). Every error is a
//! [`DataError::Io`] or [`DataError::Format`] whose message starts with the
//! file's path.

use std::io::Read;
use std::path::Path;

use flate2::read::GzDecoder;

use crate::error::{DataError, Result};

/// Magic number of an IDX file of unsigned-byte images (3 dimensions).
pub const IMAGES_MAGIC: u32 = 0x0000_0803;
/// Magic number of an IDX file of unsigned-byte labels (1 dimension).
pub const LABELS_MAGIC: u32 = 0x0000_0801;
/// The first two bytes of a gzip stream.
const GZIP_MAGIC: [u8; 2] = [0x1f, 0x8b];
/// Largest label of a digit.
const MAX_DIGIT: u8 = 9;

/// The contents of an IDX images file: `count` images of `rows x cols` bytes,
/// one after the other, each row-major.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IdxImages {
    /// Number of images.
    pub count: usize,
    /// Rows per image.
    pub rows: usize,
    /// Columns per image.
    pub cols: usize,
    /// `count * rows * cols` pixel values.
    pub pixels: Vec<u8>,
}

/// Reads an IDX images file (plain or gzipped).
pub fn read_images(path: &Path) -> Result<IdxImages> {
    parse_images(path, &read_maybe_gz(path)?)
}

/// Reads an IDX labels file (plain or gzipped) of digits: every label must be
/// in `0..=9`.
pub fn read_labels(path: &Path) -> Result<Vec<u32>> {
    parse_labels(path, &read_maybe_gz(path)?)
}

/// Most bytes an IDX file may hold, compressed or decompressed (MNIST's
/// largest file, the training images, holds 47 MB).
pub const MAX_IDX_BYTES: usize = 1 << 31;

/// The bytes of the file at `path`, decompressed if they start with the gzip
/// magic bytes. Decompression stops one byte past what the header declares
/// (and at [`MAX_IDX_BYTES`]), so a small file that inflates to gigabytes is
/// refused by the length check without being inflated.
pub fn read_maybe_gz(path: &Path) -> Result<Vec<u8>> {
    let size = std::fs::metadata(path)
        .map_err(|e| DataError::io(path, e))?
        .len();
    if size > MAX_IDX_BYTES as u64 {
        return Err(DataError::format(
            path,
            format!("{size} bytes, more than an IDX file may hold ({MAX_IDX_BYTES})"),
        ));
    }
    let raw = crate::regular::read(path, MAX_IDX_BYTES as u64)?;
    if !raw.starts_with(&GZIP_MAGIC) {
        return Ok(raw);
    }
    let damaged = |e: std::io::Error| DataError::format(path, format!("damaged gzip data: {e}"));
    let mut decoder = GzDecoder::new(raw.as_slice());
    let mut out = Vec::new();
    // The magic number, then one size per dimension.
    (&mut decoder)
        .take(4)
        .read_to_end(&mut out)
        .map_err(damaged)?;
    let dims = out.get(3).map_or(0, |d| u64::from(*d));
    (&mut decoder)
        .take(4 * dims)
        .read_to_end(&mut out)
        .map_err(damaged)?;
    let limit = declared_len(&out).map_or(out.len(), |n| n.min(MAX_IDX_BYTES));
    let rest = (limit.saturating_sub(out.len()) + 1) as u64;
    out.reserve(rest as usize);
    (&mut decoder)
        .take(rest)
        .read_to_end(&mut out)
        .map_err(damaged)?;
    Ok(out)
}

/// The length of a whole IDX file of unsigned bytes whose header starts
/// `head` (the magic number and every size), if it can be addressed.
fn declared_len(head: &[u8]) -> Option<usize> {
    let dims = usize::from(*head.get(3)?);
    let mut len = 4 * (1 + dims);
    let mut payload = 1usize;
    for i in 1..=dims {
        let b = head.get(4 * i..4 * i + 4)?;
        payload = payload.checked_mul(u32::from_be_bytes([b[0], b[1], b[2], b[3]]) as usize)?;
    }
    len = len.checked_add(payload)?;
    Some(len)
}

/// Parses the bytes of an IDX images file; `path` only names the file in errors.
pub fn parse_images(path: &Path, bytes: &[u8]) -> Result<IdxImages> {
    let (dims, body) = header(path, bytes, IMAGES_MAGIC)?;
    let [count, rows, cols] = [dims[0], dims[1], dims[2]];
    if rows == 0 || cols == 0 {
        return Err(DataError::format(
            path,
            format!("header declares images of {rows}x{cols} pixels"),
        ));
    }
    let need = count
        .checked_mul(rows)
        .and_then(|v| v.checked_mul(cols))
        .ok_or_else(|| {
            DataError::format(
                path,
                format!("header declares {count} images of {rows}x{cols}, too many to address"),
            )
        })?;
    check_payload(
        path,
        body.len(),
        need,
        &format!("{count} images of {rows}x{cols}"),
    )?;
    Ok(IdxImages {
        count,
        rows,
        cols,
        pixels: body.to_vec(),
    })
}

/// Parses the bytes of an IDX labels file of digits; `path` only names the file
/// in errors.
pub fn parse_labels(path: &Path, bytes: &[u8]) -> Result<Vec<u32>> {
    let (dims, body) = header(path, bytes, LABELS_MAGIC)?;
    let count = dims[0];
    check_payload(path, body.len(), count, &format!("{count} labels"))?;
    if let Some(i) = body.iter().position(|l| *l > MAX_DIGIT) {
        return Err(DataError::format(
            path,
            format!(
                "label {} at index {i} is not a digit 0-{MAX_DIGIT}",
                body[i]
            ),
        ));
    }
    Ok(body.iter().map(|l| u32::from(*l)).collect())
}

/// Checks the magic number and reads the sizes; returns them and the payload.
fn header<'a>(path: &Path, bytes: &'a [u8], magic: u32) -> Result<(Vec<usize>, &'a [u8])> {
    let dims = (magic & 0xff) as usize;
    let len = 4 * (1 + dims);
    let truncated = || {
        DataError::format(
            path,
            format!(
                "truncated header: {} bytes, {} needs {len}",
                bytes.len(),
                describe(magic)
            ),
        )
    };
    let word = |i: usize| -> Option<u32> {
        let b = bytes.get(4 * i..4 * i + 4)?;
        Some(u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    };
    let found = word(0).ok_or_else(truncated)?;
    if found != magic {
        return Err(DataError::format(
            path,
            format!(
                "wrong magic number 0x{found:08x} ({}), expected 0x{magic:08x} ({})",
                describe(found),
                describe(magic)
            ),
        ));
    }
    let sizes = (1..=dims)
        .map(|i| word(i).map(|w| w as usize))
        .collect::<Option<Vec<usize>>>()
        .ok_or_else(truncated)?;
    Ok((sizes, &bytes[len..]))
}

/// Checks that the payload holds exactly `need` bytes.
fn check_payload(path: &Path, have: usize, need: usize, what: &str) -> Result<()> {
    if have < need {
        Err(DataError::format(
            path,
            format!(
                "truncated: header declares {what} ({need} bytes) but only {have} bytes follow"
            ),
        ))
    } else if have > need {
        Err(DataError::format(
            path,
            format!(
                "trailing data: {} bytes after the {what} ({need} bytes) the header declares",
                have - need
            ),
        ))
    } else {
        Ok(())
    }
}

/// What a magic number stands for, for error messages.
fn describe(magic: u32) -> &'static str {
    match magic {
        IMAGES_MAGIC => "an IDX images file",
        LABELS_MAGIC => "an IDX labels file",
        m if m >> 16 == 0 && (m >> 8) & 0xff == 0x08 => "an IDX file of another shape",
        m if m >> 16 == 0 => "an IDX file of another value type",
        _ => "not an IDX file",
    }
}
