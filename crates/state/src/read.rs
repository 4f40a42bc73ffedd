//! Bounded reads: regular files only, sizes checked before reading.
//!
//! A FIFO, a device, a socket or a directory is refused by name from its
//! metadata; the file is then opened without blocking (`O_NONBLOCK` on Unix)
//! and checked again, so a FIFO swapped in between never hangs the reader.
//! The size is checked against the caller's limit before a byte is read, and
//! the read stops at the limit even if the file grows meanwhile.

use std::fs::{File, Metadata};
use std::io::Read as _;
use std::path::Path;

use crate::StateError;

/// What `meta` is, in words, when it is not a regular file.
fn not_regular(meta: &Metadata) -> Option<&'static str> {
    let t = meta.file_type();
    if t.is_file() {
        return None;
    }
    if t.is_dir() {
        return Some("directory");
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt as _;
        if t.is_fifo() {
            return Some("FIFO");
        }
        if t.is_char_device() || t.is_block_device() {
            return Some("device");
        }
        if t.is_socket() {
            return Some("socket");
        }
    }
    Some("special file")
}

fn refuse(path: &Path, meta: &Metadata, what: &str) -> Result<(), StateError> {
    match not_regular(meta) {
        None => Ok(()),
        Some(kind) => Err(StateError::NotRegular {
            path: path.to_path_buf(),
            kind,
            what: what.to_string(),
        }),
    }
}

/// Opens `path`, which must be a regular file (symbolic links followed),
/// without ever blocking; returns the file and its size. `what` names the
/// kind of file in errors ("checkpoint", "--init-from file", ...).
pub fn open_regular(path: &Path, what: &str) -> Result<(File, u64), StateError> {
    let meta = std::fs::metadata(path).map_err(|e| StateError::io(path, "read", e))?;
    refuse(path, &meta, what)?;
    let mut options = File::options();
    options.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt as _;
        options.custom_flags(libc::O_NONBLOCK);
    }
    let file = options
        .open(path)
        .map_err(|e| StateError::io(path, "open", e))?;
    let meta = file
        .metadata()
        .map_err(|e| StateError::io(path, "read", e))?;
    refuse(path, &meta, what)?;
    Ok((file, meta.len()))
}

/// The whole of the regular file `path`, refused when larger than `limit`
/// bytes (checked before reading).
pub fn read_bounded(path: &Path, what: &str, limit: u64) -> Result<Vec<u8>, StateError> {
    let (file, size) = open_regular(path, what)?;
    let too_large = |size| StateError::TooLarge {
        path: path.to_path_buf(),
        size,
        limit,
        what: what.to_string(),
    };
    if size > limit {
        return Err(too_large(size));
    }
    let mut bytes = Vec::new();
    bytes
        .try_reserve_exact(size as usize)
        .map_err(|e| StateError::io(path, "allocate for", std::io::Error::other(e)))?;
    file.take(limit + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| StateError::io(path, "read", e))?;
    if bytes.len() as u64 > limit {
        return Err(too_large(bytes.len() as u64));
    }
    Ok(bytes)
}

/// [`read_bounded`] as UTF-8 text.
pub fn read_string_bounded(path: &Path, what: &str, limit: u64) -> Result<String, StateError> {
    String::from_utf8(read_bounded(path, what, limit)?).map_err(|_| StateError::Damaged {
        path: path.to_path_buf(),
        what: what.to_string(),
        why: "not UTF-8 text".into(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_regular_file_within_its_limit_is_read_and_a_larger_one_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f.bin");
        std::fs::write(&path, [7u8; 100]).unwrap();
        assert_eq!(read_bounded(&path, "test file", 100).unwrap(), [7u8; 100]);
        let e = read_bounded(&path, "test file", 99)
            .unwrap_err()
            .to_string();
        assert!(e.contains("f.bin: 100 bytes, above the limit of 99"), "{e}");
        let missing = read_bounded(&dir.path().join("none"), "x", 1).unwrap_err();
        assert!(missing.is_missing(), "{missing}");
    }

    #[test]
    fn a_directory_is_refused_by_name() {
        let dir = tempfile::tempdir().unwrap();
        let e = read_bounded(dir.path(), "checkpoint", 1 << 20)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("is a directory, not a regular file (checkpoint)"),
            "{e}"
        );
    }

    #[cfg(unix)]
    #[test]
    fn a_fifo_and_a_device_are_refused_without_blocking() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("pipe");
        let made = std::process::Command::new("mkfifo").arg(&fifo).status();
        assert!(made.unwrap().success());
        let e = read_bounded(&fifo, "round file", 1 << 20)
            .unwrap_err()
            .to_string();
        assert!(e.contains("pipe: is a FIFO, not a regular file"), "{e}");
        let e = read_bounded(Path::new("/dev/zero"), "x", 1 << 20)
            .unwrap_err()
            .to_string();
        assert!(e.contains("is a device"), "{e}");
    }
}
