//! Where a run directory goes, and the guarantees around it: a run writes into
//! `DIR.partial` and renames it to `DIR` only when complete; it replaces only a
//! directory that a fedcluster run wrote (every entry one of [`RUN_FILES`]),
//! never `.`, `..`, `/`, the home directory or a directory holding the current
//! one; and one writer at a time holds `DIR.lock` (an advisory lock that the
//! kernel releases when the process dies, so a `kill -9` leaves no stale lock).

use std::fs::{self, File};
use std::path::{Component, Path, PathBuf};

use anyhow::{Context, Result, bail};

/// The resolved config of a run: in a finished run directory, and in the
/// `DIR.partial` of a run under way (`crate::fork::record_config`), where a fork
/// reads it.
pub const CONFIG_FILE: &str = "config.toml";

/// Every file a run directory may hold; a directory with anything else in it
/// is not a run directory and is never replaced.
pub const RUN_FILES: &[&str] = &[
    CONFIG_FILE,
    // config.toml on its way into `DIR.partial` as a run starts
    // (`crate::fork::record_config`).
    ".config.toml.partial",
    "metrics.csv",
    "replicas.csv",
    "timing.csv",
    "summary.json",
    "curves.svg",
    "models.safetensors",
    "replies.csv",
    "diverged.txt",
    "error.txt",
    "checkpoint.bin",
    "checkpoint.bin.tmp",
    "checkpoint.part.bin",
    "checkpoint.part.bin.tmp",
    "checksums.sha256",
    // `crate::fork::FORKED_FROM_FILE`, and its way into the directory.
    "forked-from.txt",
    ".forked-from.txt.partial",
];

/// `path` with its redundant parts gone (`newdir/` → `newdir`, `a/./b` →
/// `a/b`), refused when it names no directory of its own (`.`, `..`, `/`, a
/// path ending in `..`).
pub fn normalise(path: &Path) -> Result<PathBuf> {
    let clean: PathBuf = path.components().collect();
    match clean.components().next_back() {
        Some(Component::Normal(_)) => Ok(clean),
        _ => bail!(
            "--out {}: not a directory a run can own (choose a new or a run directory, not `.`, `..` or `/`)",
            path.display()
        ),
    }
}

/// `DIR.<suffix>` beside `dir` (normalised).
pub fn sibling(dir: &Path, suffix: &str) -> PathBuf {
    let mut name = dir.as_os_str().to_owned();
    name.push(".");
    name.push(suffix);
    PathBuf::from(name)
}

/// Fails unless `dir` may be replaced: it must hold only [`RUN_FILES`] (a run
/// directory) and must not be the home directory or hold the current one.
pub(super) fn check_replaceable(dir: &Path) -> Result<()> {
    let canonical =
        fs::canonicalize(dir).with_context(|| format!("cannot resolve {}", dir.display()))?;
    let cwd = std::env::current_dir()
        .ok()
        .and_then(|d| fs::canonicalize(d).ok());
    let home = std::env::var_os("HOME").and_then(|h| fs::canonicalize(h).ok());
    if cwd.is_some_and(|c| c.starts_with(&canonical)) || home.as_ref() == Some(&canonical) {
        bail!(
            "refusing to replace {}: it is the current or home directory or holds it",
            dir.display()
        );
    }
    if !canonical.is_dir() {
        bail!("{} exists and is not a directory", dir.display());
    }
    let entries = fs::read_dir(dir).with_context(|| format!("cannot list {}", dir.display()))?;
    for entry in entries {
        let entry = entry.with_context(|| format!("cannot list {}", dir.display()))?;
        let name = entry.file_name();
        let known = name.to_str().is_some_and(|n| RUN_FILES.contains(&n));
        if !known || !entry.file_type().is_ok_and(|t| t.is_file()) {
            bail!(
                "refusing to replace {}: it is not a fedcluster run directory (it holds {:?}); \
                 choose another --out",
                dir.display(),
                name
            );
        }
    }
    Ok(())
}

/// Checks that a run may write `target` (see the module docs) and returns it
/// normalised. Without `overwrite` an existing non-empty `target` is refused.
pub fn check_target(target: &Path, overwrite: bool) -> Result<PathBuf> {
    let target = normalise(target)?;
    // A symbolic link to nothing: the run would write `DIR.partial` and fail
    // only at its final rename.
    if fs::symlink_metadata(&target).is_ok_and(|m| m.file_type().is_symlink()) && !target.exists() {
        bail!(
            "--out {}: a symbolic link to {}, which does not exist; choose another --out",
            target.display(),
            fs::read_link(&target).unwrap_or_default().display()
        );
    }
    let occupied = target.exists()
        && fs::read_dir(&target)
            .map(|mut d| d.next().is_some())
            .unwrap_or(true);
    if occupied {
        if !overwrite {
            bail!(
                "output directory {} already exists; pass --overwrite to replace it or choose another --out",
                target.display()
            );
        }
        check_replaceable(&target)?;
    }
    Ok(target)
}

/// The lock on `DIR.lock`, held while a run writes `DIR` (released and the
/// file removed on drop; the kernel releases it if the process dies).
#[derive(Debug)]
pub struct DirLock {
    path: PathBuf,
    _file: File,
}

impl DirLock {
    /// Takes the lock of `dir`, failing at once when another process holds it.
    pub fn take(dir: &Path) -> Result<Self> {
        let path = sibling(dir, "lock");
        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            fs::create_dir_all(parent)
                .with_context(|| format!("cannot create {}", parent.display()))?;
        }
        // A lock file removed by its last holder between our open and our
        // lock would lock a file nobody else sees: retry on a fresh open.
        for _ in 0..8 {
            let file = File::options()
                .create(true)
                .truncate(false)
                .write(true)
                .open(&path)
                .with_context(|| format!("cannot open the lock {}", path.display()))?;
            match file.try_lock() {
                Ok(()) => {}
                Err(fs::TryLockError::WouldBlock) => bail!(
                    "another fedcluster process is writing {} (it holds {}); wait for it to finish, or write elsewhere",
                    dir.display(),
                    path.display()
                ),
                Err(fs::TryLockError::Error(e)) => {
                    return Err(e).with_context(|| format!("cannot lock {}", path.display()));
                }
            }
            if same_file(&file, &path) {
                return Ok(Self { path, _file: file });
            }
        }
        bail!("cannot lock {}: it keeps being replaced", path.display())
    }
}

impl Drop for DirLock {
    fn drop(&mut self) {
        let _ = fs::remove_file(&self.path);
    }
}

/// Whether the open `file` is the one `path` names now.
#[cfg(not(unix))]
fn same_file(_file: &File, _path: &Path) -> bool {
    true
}

/// Whether the open `file` is the one `path` names now.
#[cfg(unix)]
fn same_file(file: &File, path: &Path) -> bool {
    use std::os::unix::fs::MetadataExt as _;
    match (file.metadata(), fs::metadata(path)) {
        (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
        _ => false,
    }
}
