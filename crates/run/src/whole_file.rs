//! Files written whole or not at all: a reader (or a second process writing
//! the same file) never sees half of one.

use std::path::Path;

use anyhow::{Context, Result};

/// Writes `bytes` to `path` through `.<name>.partial` beside it and a rename,
/// so `path` holds either its old content or all of `bytes`.
pub fn write_whole(path: &Path, bytes: &[u8]) -> Result<()> {
    write_whole_as(path, bytes, false)
}

/// [`write_whole`] for a secret (a private key): on Unix the file is readable
/// by its owner alone from before it holds the secret under its name.
pub fn write_secret(path: &Path, bytes: &[u8]) -> Result<()> {
    write_whole_as(path, bytes, true)
}

fn write_whole_as(path: &Path, bytes: &[u8], secret: bool) -> Result<()> {
    let name = path
        .file_name()
        .with_context(|| format!("cannot write {}: no file name", path.display()))?;
    let partial = path.with_file_name(format!(".{}.partial", name.to_string_lossy()));
    std::fs::write(&partial, bytes)
        .with_context(|| format!("cannot write {}", partial.display()))?;
    #[cfg(unix)]
    if secret {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&partial, std::fs::Permissions::from_mode(0o600))
            .with_context(|| format!("cannot restrict {}", partial.display()))?;
    }
    #[cfg(not(unix))]
    let _ = secret;
    std::fs::rename(&partial, path).with_context(|| format!("cannot write {}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_whole_write_replaces_the_file_and_leaves_no_partial_behind() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("report.md");
        write_whole(&path, b"old").unwrap();
        write_whole(&path, b"new and longer").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"new and longer");
        let names: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, ["report.md"]);
        let missing = dir.path().join("no-such-dir/report.md");
        let e = format!("{:#}", write_whole(&missing, b"x").unwrap_err());
        assert!(e.contains("no-such-dir/.report.md.partial"), "{e}");
    }

    #[cfg(unix)]
    #[test]
    fn a_secret_is_readable_by_its_owner_alone() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("ca.key");
        write_secret(&path, b"key").unwrap();
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }
}
