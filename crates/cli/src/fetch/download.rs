//! One file over HTTP, resumably, kept only if its checksum matches.
//!
//! 1. The bytes go to `NAME.part` beside the final name. A `.part` left by an
//!    earlier, interrupted run is continued: the request asks for
//!    `Range: bytes=N-` (N its length) and a `206 Partial Content` answer is
//!    appended to it. A server that ignores the range answers `200` with the
//!    whole file, which then replaces the `.part` from its first byte; a
//!    `416` (nothing past N) means the `.part` already holds every byte.
//! 2. A broken connection keeps the `.part`, so running again resumes it.
//! 3. The whole `.part` is hashed (MD5; SHA-256 too for the record). When an
//!    expected MD5 is given and differs, the `.part` is deleted and nothing
//!    exists under the final name; otherwise it is synced and renamed to the
//!    final name, which is atomic within a directory.

use std::fs::{File, OpenOptions};
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use sha2::{Digest as _, Sha256};

use crate::progress::byte_bar;

/// What a finished download gave.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Downloaded {
    /// The file's length.
    pub bytes: u64,
    /// The bytes a `.part` already held and the server did not resend.
    pub resumed_from: u64,
    /// Its checksums, lower-case hex.
    pub sums: Sums,
}

/// A file's MD5 and SHA-256, lower-case hex.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Sums {
    /// MD5, what the publishers give.
    pub md5: String,
    /// SHA-256, printed where no MD5 is published.
    pub sha256: String,
}

/// The server has no such file (HTTP 404 or 410): another address may.
#[derive(Debug)]
pub struct NotFound {
    /// What was asked for.
    pub url: String,
    /// The status line's code and text.
    pub status: String,
}

impl std::fmt::Display for NotFound {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "GET {}: HTTP {}", self.url, self.status)
    }
}

impl std::error::Error for NotFound {}

/// `dest` with `.part` appended to its name.
pub fn part_path(dest: &Path) -> PathBuf {
    let mut name = dest.file_name().unwrap_or_default().to_owned();
    name.push(".part");
    dest.with_file_name(name)
}

/// Downloads `url` into `dest` through `dest.part` (resumed if present),
/// checks its MD5 against `md5` when given, and renames it into place.
pub fn download(
    agent: &ureq::Agent,
    url: &str,
    dest: &Path,
    md5: Option<&str>,
) -> Result<Downloaded> {
    let part = part_path(dest);
    let have = match std::fs::metadata(&part) {
        Ok(m) => m.len(),
        Err(e) if e.kind() == io::ErrorKind::NotFound => 0,
        Err(e) => return Err(e).with_context(|| format!("cannot read {}", part.display())),
    };
    let mut request = agent.get(url);
    if have > 0 {
        request = request.set("Range", &format!("bytes={have}-"));
    }
    let (response, start) = match request.call() {
        Ok(r) if r.status() == 206 => {
            let start = range_start(r.header("Content-Range")).unwrap_or(have);
            if start != have {
                bail!("GET {url}: asked for bytes from {have}, the server sent them from {start}");
            }
            (Some(r), have)
        }
        Ok(r) => (Some(r), 0),
        Err(ureq::Error::Status(416, _)) if have > 0 => (None, have),
        Err(ureq::Error::Status(code @ (404 | 410), r)) => {
            return Err(NotFound {
                url: url.to_owned(),
                status: format!("{code} {}", r.status_text()),
            }
            .into());
        }
        Err(ureq::Error::Status(code, r)) => {
            bail!("GET {url}: HTTP {code} {}", r.status_text())
        }
        Err(e @ ureq::Error::Transport(_)) => bail!("GET {url}: {}", transport_reason(&e)),
    };
    if let Some(response) = response {
        let length = response
            .header("Content-Length")
            .and_then(|l| l.parse::<u64>().ok());
        let mut file = if start > 0 {
            OpenOptions::new().append(true).open(&part)
        } else {
            File::create(&part)
        }
        .with_context(|| format!("cannot write {}", part.display()))?;
        let name = dest.file_name().unwrap_or_default().to_string_lossy();
        let bar = byte_bar(&name, length.map(|l| start + l), start);
        let copied = copy(&mut response.into_reader(), &mut file, |n| bar.inc(n));
        bar.finish_and_clear();
        file.flush()
            .and_then(|()| file.sync_all())
            .with_context(|| format!("cannot write {}", part.display()))?;
        match copied {
            Ok(_) => {}
            Err(Copy::Write(e)) => {
                return Err(e).with_context(|| format!("cannot write {}", part.display()));
            }
            Err(Copy::Read(e)) => bail!(
                "GET {url}: the connection broke ({e}); the bytes so far are kept in {}: run the \
                 command again to resume",
                part.display()
            ),
        }
    }
    let sums = sums_of(&part)?;
    if let Some(expected) = md5
        && sums.md5 != expected
    {
        std::fs::remove_file(&part)
            .with_context(|| format!("cannot delete the bad download {}", part.display()))?;
        bail!(
            "{}: MD5 mismatch: expected {expected}, got {} (downloaded from {url}; deleted)",
            dest.display(),
            sums.md5
        );
    }
    let bytes = std::fs::metadata(&part)
        .with_context(|| format!("cannot read {}", part.display()))?
        .len();
    std::fs::rename(&part, dest)
        .with_context(|| format!("cannot rename {} to {}", part.display(), dest.display()))?;
    Ok(Downloaded {
        bytes,
        resumed_from: start,
        sums,
    })
}

/// The MD5 and SHA-256 of the file at `path`.
pub fn sums_of(path: &Path) -> Result<Sums> {
    let mut file = File::open(path).with_context(|| format!("cannot read {}", path.display()))?;
    let mut hashing = Hashing {
        md5: md5::Context::new(),
        sha256: Sha256::new(),
    };
    if let Err(Copy::Read(e) | Copy::Write(e)) = copy(&mut file, &mut hashing, |_| {}) {
        return Err(e).with_context(|| format!("cannot read {}", path.display()));
    }
    Ok(Sums {
        md5: format!("{:x}", hashing.md5.finalize()),
        sha256: hex(&hashing.sha256.finalize()),
    })
}

/// Both hashes, fed as a writer.
struct Hashing {
    md5: md5::Context,
    sha256: Sha256,
}

impl Write for Hashing {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.md5.consume(buf);
        self.sha256.update(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// Lower-case hex of `bytes`.
fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Where a `Content-Range: bytes START-END/TOTAL` starts.
fn range_start(header: Option<&str>) -> Option<u64> {
    let spec = header?.trim().strip_prefix("bytes")?.trim_start();
    spec.split('-').next()?.trim().parse().ok()
}

/// Why a request failed before any status came back, without the URL that
/// ureq's message repeats.
fn transport_reason(e: &ureq::Error) -> String {
    let ureq::Error::Transport(t) = e else {
        return e.to_string();
    };
    let mut reason = t.kind().to_string();
    if let Some(message) = t.message() {
        reason.push_str(": ");
        reason.push_str(message);
    }
    if let Some(source) = std::error::Error::source(e) {
        reason.push_str(": ");
        reason.push_str(&source.to_string());
    }
    reason
}

/// Which side of a copy failed.
enum Copy {
    Read(io::Error),
    Write(io::Error),
}

/// Copies `from` to `to`, reporting each chunk's length to `progress`.
fn copy(
    from: &mut dyn Read,
    to: &mut dyn Write,
    mut progress: impl FnMut(u64),
) -> Result<u64, Copy> {
    let mut buf = vec![0u8; 1 << 16];
    let mut total = 0;
    loop {
        let n = match from.read(&mut buf) {
            Ok(0) => return Ok(total),
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(Copy::Read(e)),
        };
        to.write_all(&buf[..n]).map_err(Copy::Write)?;
        total += n as u64;
        progress(n as u64);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_part_file_sits_beside_its_final_name() {
        assert_eq!(
            part_path(Path::new("data/cifar10/cifar-10-binary.tar.gz")),
            Path::new("data/cifar10/cifar-10-binary.tar.gz.part")
        );
    }

    #[test]
    fn a_content_range_gives_its_first_byte() {
        assert_eq!(range_start(Some("bytes 500-999/1000")), Some(500));
        assert_eq!(range_start(Some("bytes 0-0/*")), Some(0));
        assert_eq!(range_start(Some("items 1-2/3")), None);
        assert_eq!(range_start(None), None);
    }

    #[test]
    fn checksums_match_the_known_digests_of_abc() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("abc");
        std::fs::write(&path, b"abc").unwrap();
        let sums = sums_of(&path).unwrap();
        assert_eq!(sums.md5, "900150983cd24fb0d6963f7d28e17f72");
        assert_eq!(
            sums.sha256,
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }
}
