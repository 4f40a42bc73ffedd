//! The record format of CIFAR's binary version, its reader over one file (or
//! archive member) and its writers.
//!
//! A file is a sequence of fixed-length records with nothing between them:
//! CIFAR-10's `<label><3072 pixels>` ([`CIFAR10_RECORD_BYTES`]), CIFAR-100's
//! `<coarse label><fine label><3072 pixels>` ([`CIFAR100_RECORD_BYTES`]).
//! The pixels are three 32x32 planes, red, green, blue, each row-major; the
//! reader writes them channels-last (pixel `(y, x)` at `3 * (32 * y + x)`,
//! its red, green and blue values next to each other), scaled to `[0, 1]`.
//!
//! A file must be a whole, non-zero number of records of at most
//! [`MAX_FILE_BYTES`], and every label byte within its range (a CIFAR-100
//! record's coarse label is checked even when its fine label is the one
//! kept).

use std::io::{BufWriter, Read, Write};
use std::path::Path;

use super::split::{Decoded, Member, Split};
use super::{Cifar, Cifar100Labels, IMAGE_BYTES, IMAGE_SIDE};
use crate::error::{DataError, Result};

/// Bytes of a CIFAR-10 record: the label, then the pixels.
pub const CIFAR10_RECORD_BYTES: usize = 1 + IMAGE_BYTES;
/// Bytes of a CIFAR-100 record: the coarse label, the fine label, then the
/// pixels.
pub const CIFAR100_RECORD_BYTES: usize = 2 + IMAGE_BYTES;
/// Most bytes a file (or archive member) may hold; the largest real one,
/// CIFAR-100's `train.bin`, holds 153,700,000.
pub const MAX_FILE_BYTES: u64 = 1 << 30;

/// Records decoded per read.
const CHUNK_RECORDS: usize = 256;
/// Values per plane.
pub(crate) const PLANE: usize = IMAGE_SIDE * IMAGE_SIDE;

/// How a set's records are laid out, and which label a reader keeps.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct RecordFormat {
    set: Cifar,
    /// Which label byte of the record becomes the class.
    keep: usize,
}

impl RecordFormat {
    /// The records of `set`, keeping CIFAR-100's `labels` (ignored for
    /// CIFAR-10).
    pub(crate) fn new(set: Cifar, labels: Cifar100Labels) -> Self {
        let keep = match (set, labels) {
            (Cifar::Cifar10, _) | (Cifar::Cifar100, Cifar100Labels::Coarse) => 0,
            (Cifar::Cifar100, Cifar100Labels::Fine) => 1,
        };
        Self { set, keep }
    }

    /// Bytes per record.
    pub(crate) fn len(self) -> usize {
        self.set.record_bytes()
    }

    /// Number of classes of the label kept.
    pub(crate) fn classes(self) -> usize {
        usize::from(self.label_bytes()[self.keep].1)
    }

    /// Each label byte of a record: its name in errors and how many classes
    /// it may name.
    fn label_bytes(self) -> &'static [(&'static str, u8)] {
        match self.set {
            Cifar::Cifar10 => &[("label", 10)],
            Cifar::Cifar100 => &[("coarse label", 20), ("fine label", 100)],
        }
    }

    /// The number of records in a file of `size` bytes, or why it cannot be
    /// one of this set's files.
    pub(crate) fn records(self, size: u64) -> std::result::Result<usize, String> {
        let len = self.len() as u64;
        if size == 0 {
            Err("empty file".into())
        } else if size > MAX_FILE_BYTES {
            Err(format!(
                "{size} bytes, more than a {} file may hold ({MAX_FILE_BYTES})",
                self.set.title()
            ))
        } else if !size.is_multiple_of(len) {
            Err(format!(
                "truncated or damaged: {size} bytes is not a whole number of {len}-byte \
                 {} records ({} whole records and {} bytes over)",
                self.set.title(),
                size / len,
                size % len
            ))
        } else {
            Ok((size / len) as usize)
        }
    }
}

/// Why decoding records failed.
#[derive(Debug)]
pub(crate) enum DecodeError {
    /// Reading failed inside record `record`.
    Read {
        /// Index of the record in its file.
        record: usize,
        /// The reader's error (`UnexpectedEof`: the data ended early).
        source: std::io::Error,
    },
    /// A label byte is out of its range.
    Label {
        /// Index of the record in its file.
        record: usize,
        /// Which label (`label`, `coarse label`, `fine label`).
        name: &'static str,
        /// The byte found.
        value: u8,
        /// Classes that label may name.
        classes: u8,
    },
    /// The records do not fit in memory.
    Memory,
}

impl DecodeError {
    /// What went wrong, without the file's name.
    pub(crate) fn why(&self) -> String {
        match self {
            Self::Read { record, source } if source.kind() == std::io::ErrorKind::UnexpectedEof => {
                format!("truncated: the data end inside record {record}")
            }
            Self::Read { record, source } => format!("cannot read record {record}: {source}"),
            Self::Label {
                record,
                name,
                value,
                classes,
            } => format!(
                "record {record}: {name} {value} is out of range (0-{})",
                classes - 1
            ),
            Self::Memory => "its images do not fit in memory".into(),
        }
    }
}

/// Decodes `n` records of `format` from `reader` into `out` (`3072` values
/// per record, channels-last, in `[0, 1]`, and the label kept), a chunk at a
/// time, each chunk read before its room is made.
pub(crate) fn decode(
    reader: &mut impl Read,
    format: RecordFormat,
    n: usize,
    out: &mut Member<'_>,
) -> std::result::Result<(), DecodeError> {
    let scale: [f32; 256] = std::array::from_fn(|b| b as f32 / 255.0);
    let len = format.len();
    let checks = format.label_bytes();
    let mut buf = vec![0u8; CHUNK_RECORDS.min(n) * len];
    let mut first = 0;
    while first < n {
        let count = CHUNK_RECORDS.min(n - first);
        let buf = &mut buf[..count * len];
        fill(reader, buf).map_err(|(filled, source)| DecodeError::Read {
            record: first + filled / len,
            source,
        })?;
        let (images, labels) = out.chunk(count).map_err(|_| DecodeError::Memory)?;
        for (i, ((record, label), image)) in buf
            .chunks_exact(len)
            .zip(labels.iter_mut())
            .zip(images.chunks_exact_mut(IMAGE_BYTES))
            .enumerate()
        {
            let (head, pixels) = record.split_at(checks.len());
            for (&value, &(name, classes)) in head.iter().zip(checks) {
                if value >= classes {
                    return Err(DecodeError::Label {
                        record: first + i,
                        name,
                        value,
                        classes,
                    });
                }
            }
            *label = u32::from(head[format.keep]);
            let (red, rest) = pixels.split_at(PLANE);
            let (green, blue) = rest.split_at(PLANE);
            for (((out, r), g), b) in image.chunks_exact_mut(3).zip(red).zip(green).zip(blue) {
                out[0] = scale[usize::from(*r)];
                out[1] = scale[usize::from(*g)];
                out[2] = scale[usize::from(*b)];
            }
        }
        first += count;
    }
    Ok(())
}

/// Fills `buf` from `reader`; on failure, how many bytes were read first
/// and why (`UnexpectedEof` when the data ended).
fn fill(
    reader: &mut impl Read,
    buf: &mut [u8],
) -> std::result::Result<(), (usize, std::io::Error)> {
    let mut filled = 0;
    while filled < buf.len() {
        match reader.read(&mut buf[filled..]) {
            Ok(0) => return Err((filled, std::io::ErrorKind::UnexpectedEof.into())),
            Ok(n) => filled += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err((filled, e)),
        }
    }
    Ok(())
}

/// Reads the binary files of `set` from the extracted directory `dir`: the
/// training split, then the test split.
pub(crate) fn read_dir(dir: &Path, set: Cifar, format: RecordFormat) -> Result<[Decoded; 2]> {
    let mut counts = Vec::new();
    for name in set.files() {
        let path = dir.join(name);
        let meta = match std::fs::metadata(&path) {
            Ok(meta) => meta,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(DataError::format(
                    dir,
                    format!(
                        "no `{name}` in this directory (the binary version of {} holds {})",
                        set.title(),
                        set.files().collect::<Vec<_>>().join(", ")
                    ),
                ));
            }
            Err(e) => return Err(DataError::io(&path, e)),
        };
        if !meta.is_file() {
            return Err(DataError::format(&path, "not a file"));
        }
        counts.push(
            format
                .records(meta.len())
                .map_err(|why| DataError::format(&path, why))?,
        );
    }
    let trains = set.train_files().len();
    let train = read_split(dir, set.train_files(), &counts[..trains], format)?;
    let test = read_split(dir, &[set.test_file()], &counts[trains..], format)?;
    Ok([train, test])
}

/// Reads the files `names` of `dir`, holding `counts` records, as one split.
fn read_split(
    dir: &Path,
    names: &[&str],
    counts: &[usize],
    format: RecordFormat,
) -> Result<Decoded> {
    let mut split = Split::known(counts).map_err(|_| too_large(dir, counts.iter().sum()))?;
    for (k, (name, &n)) in names.iter().zip(counts).enumerate() {
        let path = dir.join(name);
        let (mut file, _) = crate::regular::open(&path)?;
        let mut member = split.member(k, n).map_err(|_| too_large(&path, n))?;
        decode(&mut file, format, n, &mut member).map_err(|e| match e {
            DecodeError::Read { source, .. }
                if source.kind() != std::io::ErrorKind::UnexpectedEof =>
            {
                DataError::io(&path, source)
            }
            e => DataError::format(&path, e.why()),
        })?;
        split.complete(k).map_err(|_| too_large(&path, n))?;
    }
    split
        .finish()
        .map_err(|_| too_large(dir, counts.iter().sum()))
}

/// The error for `images` images that do not fit in memory.
pub(crate) fn too_large(path: &Path, images: usize) -> DataError {
    DataError::format(
        path,
        format!("{images} images of 32x32x3 do not fit in memory"),
    )
}

/// Writes a CIFAR-10 binary file at `path`: one record per label, `labels[i]`
/// then the 3072 bytes `images_chw[3072 * i..3072 * (i + 1)]` (the red,
/// green and blue planes, each 32x32 row-major). Labels are written as
/// given, even out of range (tests write bad files with it). Fails if
/// `images_chw` does not hold 3072 bytes per label, or on an IO error.
pub fn write_cifar10_batch(path: &Path, labels: &[u8], images_chw: &[u8]) -> Result<()> {
    write_records(path, &[labels], images_chw)
}

/// Writes a CIFAR-100 binary file at `path`: one record per image,
/// `coarse[i]`, `fine[i]`, then the 3072 bytes of `images_chw` (as
/// [`write_cifar10_batch`]). Labels are written as given, even out of range.
/// Fails if `coarse` and `fine` differ in length or `images_chw` does not
/// hold 3072 bytes per label, or on an IO error.
pub fn write_cifar100_batch(
    path: &Path,
    coarse: &[u8],
    fine: &[u8],
    images_chw: &[u8],
) -> Result<()> {
    write_records(path, &[coarse, fine], images_chw)
}

/// Writes records made of one byte of each of `labels` then 3072 bytes of
/// `images_chw`.
fn write_records(path: &Path, labels: &[&[u8]], images_chw: &[u8]) -> Result<()> {
    let bytes = record_bytes(labels, images_chw)?;
    let file = std::fs::File::create(path).map_err(|e| DataError::io(path, e))?;
    let mut out = BufWriter::new(file);
    out.write_all(&bytes)
        .and_then(|()| out.flush())
        .map_err(|e| DataError::io(path, e))
}

/// The bytes of a file of records: one byte of each of `labels` then 3072
/// bytes of `images_chw`, per record.
pub(crate) fn record_bytes(labels: &[&[u8]], images_chw: &[u8]) -> Result<Vec<u8>> {
    let count = labels.first().map_or(0, |l| l.len());
    if let Some(i) = labels.iter().position(|l| l.len() != count) {
        return Err(DataError::invalid(
            format!("labels[{i}]"),
            format!("{} labels, but the first list has {count}", labels[i].len()),
        ));
    }
    if images_chw.len() != count * IMAGE_BYTES {
        return Err(DataError::invalid(
            "images_chw",
            format!(
                "{} bytes for {count} images of {IMAGE_BYTES} bytes",
                images_chw.len()
            ),
        ));
    }
    let mut out = Vec::with_capacity(count * (labels.len() + IMAGE_BYTES));
    for (i, pixels) in images_chw.chunks_exact(IMAGE_BYTES).enumerate() {
        out.extend(labels.iter().map(|l| l[i]));
        out.extend_from_slice(pixels);
    }
    Ok(out)
}
