//! Checksum lists: a directory's files under the SHA-256 of each, in
//! `checksums.sha256` beside them, for the data sets fedcluster writes.
//!
//! The list is a `# identity` line, then `<SHA-256>  <path>` per file (paths
//! relative to the directory, `/`-separated, sorted), the lines `sha256sum -c`
//! reads. It is written last, so a directory holding it is complete. A reader
//! ([`verify_listed`]) checks every listed file, streamed, and refuses a file
//! that is not listed: a damaged, swapped or added file is an error naming it,
//! never a different data set. A directory without a list (a user's own, or one
//! written by an older fedcluster) is reported as unchecked, not refused.

use std::io::Read as _;
use std::path::{Component, Path, PathBuf};

use sha2::{Digest as _, Sha256};

use crate::StateError;
use crate::read::{open_regular, read_string_bounded};

/// The list's file name.
pub const CHECKSUMS: &str = "checksums.sha256";
/// The largest list (16 MiB: about 150,000 files).
const MAX_LIST_BYTES: u64 = 16 << 20;
/// The deepest directory listed.
const MAX_DEPTH: usize = 8;

/// The SHA-256 of the regular file `path` in hex, streamed.
pub fn file_digest_hex(path: &Path, what: &str) -> Result<String, StateError> {
    let (mut file, _) = open_regular(path, what)?;
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 1 << 16];
    loop {
        match file.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => hasher.update(&buf[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(StateError::io(path, "read", e)),
        }
    }
    Ok(hasher
        .finalize()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect())
}

/// Every file under `dir` but the list, relative and `/`-separated, sorted.
fn files_under(dir: &Path) -> Result<Vec<String>, StateError> {
    fn walk(root: &Path, rel: &str, depth: usize, out: &mut Vec<String>) -> Result<(), StateError> {
        let here = root.join(rel);
        let entries = std::fs::read_dir(&here).map_err(|e| StateError::io(&here, "list", e))?;
        for entry in entries {
            let entry = entry.map_err(|e| StateError::io(&here, "list", e))?;
            let name = entry.file_name().to_string_lossy().into_owned();
            let path = if rel.is_empty() {
                name
            } else {
                format!("{rel}/{name}")
            };
            let kind = entry
                .file_type()
                .map_err(|e| StateError::io(&entry.path(), "read", e))?;
            if kind.is_dir() && depth < MAX_DEPTH {
                walk(root, &path, depth + 1, out)?;
            } else if path != CHECKSUMS {
                out.push(path);
            }
        }
        Ok(())
    }
    let mut out = Vec::new();
    walk(dir, "", 0, &mut out)?;
    out.sort();
    Ok(out)
}

/// Writes `dir/checksums.sha256` over every file under `dir`, under
/// `identity` (e.g. `fedcluster data set v1; leaf-shakespeare`). Call it once
/// every other file is written.
pub fn write_listed(dir: &Path, identity: &str) -> Result<(), StateError> {
    let mut text = format!("# {identity}\n");
    for name in files_under(dir)? {
        let sum = file_digest_hex(&dir.join(&name), "data file")?;
        text.push_str(&format!("{sum}  {name}\n"));
    }
    let path = dir.join(CHECKSUMS);
    std::fs::write(&path, text).map_err(|e| StateError::io(&path, "write", e))
}

/// A listed path, refused unless plainly inside the directory.
fn listed_path(list: &Path, name: &str) -> Result<PathBuf, StateError> {
    let path = Path::new(name);
    let inside = !name.is_empty() && path.components().all(|c| matches!(c, Component::Normal(_)));
    if !inside {
        return Err(StateError::Damaged {
            path: list.to_path_buf(),
            what: "checksum list".into(),
            why: format!("`{name}` is not a path inside its directory"),
        });
    }
    Ok(path.to_path_buf())
}

/// Checks `dir` against its checksum list: `Ok(true)` when every listed file
/// has its SHA-256 and no other file is there, `Ok(false)` when `dir` has no
/// list (read unchecked), else the error naming the first file that differs.
pub fn verify_listed(dir: &Path) -> Result<bool, StateError> {
    let list = dir.join(CHECKSUMS);
    let text = match read_string_bounded(&list, "checksum list", MAX_LIST_BYTES) {
        Ok(text) => text,
        Err(e) if e.is_missing() => return Ok(false),
        Err(e) => return Err(e),
    };
    let damaged = |why: String| StateError::Damaged {
        path: list.clone(),
        what: "checksum list".into(),
        why,
    };
    let mut lines = text.lines();
    if !lines.next().is_some_and(|l| l.starts_with("# ")) {
        return Err(damaged(
            "it does not start with its `# identity` line".into(),
        ));
    }
    let mut listed = Vec::new();
    for line in lines {
        let (sum, name) = line
            .split_once("  ")
            .filter(|(s, _)| s.len() == 64 && s.bytes().all(|b| b.is_ascii_hexdigit()))
            .ok_or_else(|| damaged(format!("malformed line `{line}`")))?;
        let file = dir.join(listed_path(&list, name)?);
        if file_digest_hex(&file, "data file")? != sum {
            return Err(StateError::Damaged {
                path: file,
                what: "data file".into(),
                why: format!("its SHA-256 differs from the one in {CHECKSUMS}"),
            });
        }
        listed.push(name.to_string());
    }
    listed.sort();
    if let Some(extra) = files_under(dir)?
        .into_iter()
        .find(|f| listed.binary_search(f).is_err())
    {
        return Err(StateError::Damaged {
            path: dir.join(extra),
            what: "data file".into(),
            why: format!("it is not in {CHECKSUMS}: the data set was changed after it was written"),
        });
    }
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn data_dir() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("train")).unwrap();
        std::fs::write(dir.path().join("train/a.json"), b"{\"users\": []}").unwrap();
        std::fs::write(dir.path().join("stats.md"), b"# stats\n").unwrap();
        write_listed(dir.path(), "test data v1").unwrap();
        dir
    }

    #[test]
    fn a_written_list_verifies_and_a_directory_without_one_is_unchecked() {
        let dir = data_dir();
        let text = std::fs::read_to_string(dir.path().join(CHECKSUMS)).unwrap();
        assert!(text.starts_with("# test data v1\n"), "{text}");
        assert!(text.contains("  train/a.json\n"), "{text}");
        assert!(verify_listed(dir.path()).unwrap());
        std::fs::remove_file(dir.path().join(CHECKSUMS)).unwrap();
        assert!(!verify_listed(dir.path()).unwrap());
    }

    #[test]
    fn a_changed_added_or_removed_file_is_refused_by_name() {
        let dir = data_dir();
        std::fs::write(dir.path().join("train/a.json"), b"{\"users\": [1]}").unwrap();
        let e = verify_listed(dir.path()).unwrap_err().to_string();
        assert!(e.contains("train/a.json") && e.contains("SHA-256"), "{e}");

        let dir = data_dir();
        std::fs::write(dir.path().join("train/b.json"), b"{}").unwrap();
        let e = verify_listed(dir.path()).unwrap_err().to_string();
        assert!(e.contains("train/b.json") && e.contains("not in"), "{e}");

        let dir = data_dir();
        std::fs::remove_file(dir.path().join("stats.md")).unwrap();
        let e = verify_listed(dir.path()).unwrap_err().to_string();
        assert!(e.contains("stats.md") && e.contains("no such file"), "{e}");
    }

    #[test]
    fn a_list_naming_a_path_outside_its_directory_is_refused() {
        let dir = data_dir();
        let sum = "0".repeat(64);
        let text = format!("# x\n{sum}  ../escape\n");
        std::fs::write(dir.path().join(CHECKSUMS), text).unwrap();
        let e = verify_listed(dir.path()).unwrap_err().to_string();
        assert!(e.contains(CHECKSUMS) && e.contains("../escape"), "{e}");
    }
}
