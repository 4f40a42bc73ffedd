//! Reading CIFAR's binary version straight from its `.tar.gz` archive
//! (`cifar-10-binary.tar.gz`, `cifar-100-binary.tar.gz`), streamed once and
//! never extracted.
//!
//! The members read are `<bin dir>/<file>`
//! (`cifar-10-batches-bin/data_batch_1.bin`, `cifar-100-binary/train.bin`,
//! ...; a leading `./` is ignored), in whatever order the archive holds them,
//! each decoded as it streams past straight into the split's final buffers
//! (laid out as if every member were the size of the first one met, true of
//! the real sets; a member of another size is decoded apart and joined at
//! the end). Every other member is skipped. The stream is read to its end,
//! so that the gzip checksum vouches for every byte decoded.
//!
//! Errors name the archive and, where there is one, the member: a file that
//! is not gzip data, damaged compressed or tar data, a member twice or not a
//! regular file, a member whose size or labels are wrong (as in
//! [`super::binary`]), a member missing. An archive of the python version
//! (members under `cifar-10-batches-py/` or `cifar-100-python/`) is reported
//! as such.

use std::io::{BufReader, Read, Seek};
use std::path::Path;

use flate2::read::MultiGzDecoder;

use super::binary::{DecodeError, RecordFormat, decode, too_large};
use super::split::{Decoded, Split};
use super::{Cifar, python_version};
use crate::error::{DataError, Result};

/// The first two bytes of a gzip stream.
const GZIP_MAGIC: [u8; 2] = [0x1f, 0x8b];

/// Reads the binary files of `set` from the archive at `path`: the training
/// split, then the test split.
pub(crate) fn read_archive(path: &Path, set: Cifar, format: RecordFormat) -> Result<[Decoded; 2]> {
    let (mut file, _) = crate::regular::open(path)?;
    let mut magic = [0u8; 2];
    let mut head = 0;
    while head < magic.len() {
        match file.read(&mut magic[head..]) {
            Ok(0) => break,
            Ok(n) => head += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(DataError::io(path, e)),
        }
    }
    match head {
        0 => return Err(DataError::format(path, "empty file")),
        2 if magic == GZIP_MAGIC => {}
        _ => {
            return Err(DataError::format(
                path,
                format!(
                    "not a .tar.gz archive (gzip data start with the bytes 1f 8b); \
                     expected {} or its extracted directory `{}/`",
                    set.archive(),
                    set.bin_dir()
                ),
            ));
        }
    }
    file.rewind().map_err(|e| DataError::io(path, e))?;
    let mut archive = tar::Archive::new(MultiGzDecoder::new(BufReader::new(file)));
    let damaged = |e: std::io::Error| DataError::format(path, format!("damaged archive: {e}"));

    let trains = set.train_files().len();
    let mut splits = [Split::guessed(trains), Split::guessed(1)];
    let mut python = false;
    let prefix = format!("{}/", set.bin_dir());
    let python_prefix = format!("{}/", set.python_names()[0]);
    for entry in archive.entries().map_err(damaged)? {
        let mut entry = entry.map_err(damaged)?;
        let name = member_name(&entry.path_bytes());
        python |= name.starts_with(&python_prefix);
        let Some(file) = name.strip_prefix(&prefix) else {
            continue;
        };
        let Some(index) = set.files().position(|f| f == file) else {
            continue;
        };
        let (split, k) = if index < trains {
            (&mut splits[0], index)
        } else {
            (&mut splits[1], 0)
        };
        let member = |why: String| DataError::format(path, format!("member `{name}`: {why}"));
        if split.has(k) {
            return Err(member("appears twice in the archive".into()));
        }
        if !entry.header().entry_type().is_file() {
            return Err(member("not a regular file".into()));
        }
        let n = format.records(entry.size()).map_err(member)?;
        let mut out = split.member(k, n).map_err(|_| too_large(path, n))?;
        decode(&mut entry, format, n, &mut out).map_err(|e| match e {
            DecodeError::Read { record, source }
                if source.kind() == std::io::ErrorKind::UnexpectedEof =>
            {
                member(format!("damaged archive: it ends inside record {record}"))
            }
            DecodeError::Read { record, source } => {
                member(format!("damaged archive: {source} (in record {record})"))
            }
            e => member(e.why()),
        })?;
        split.complete(k).map_err(|_| too_large(path, n))?;
    }
    // The rest of the compressed stream, so that its checksum is verified.
    std::io::copy(&mut archive.into_inner(), &mut std::io::sink()).map_err(damaged)?;

    let missing: Vec<String> = splits[0]
        .missing()
        .map(|k| set.train_files()[k])
        .chain(splits[1].missing().map(|_| set.test_file()))
        .map(|f| format!("`{prefix}{f}`"))
        .collect();
    if !missing.is_empty() {
        if python {
            return Err(python_version(path, set));
        }
        return Err(DataError::format(
            path,
            format!(
                "no member {} in this archive (the binary version of {} holds {} under `{prefix}`)",
                missing.join(", "),
                set.title(),
                set.files().collect::<Vec<_>>().join(", "),
            ),
        ));
    }
    let [train, test] = splits.map(|split| {
        let n = split.records();
        split.finish().map_err(|_| too_large(path, n))
    });
    Ok([train?, test?])
}

/// A member's path as text, without leading `./`.
fn member_name(bytes: &[u8]) -> String {
    let name = String::from_utf8_lossy(bytes);
    let mut name: &str = &name;
    while let Some(rest) = name.strip_prefix("./") {
        name = rest;
    }
    name.to_owned()
}
