//! A LEAF data directory: `train/*.json` and `test/*.json`, the same users in
//! both (LEAF's `model_utils.read_data` asserts it), each file one
//! [`super::json`] file. Writing goes through `DIR.partial`, renamed to `DIR`
//! once every file is complete.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::json::{
    LeafSamples, LeafUser, Split, UserCheck, UserRef, read_leaf_json_checked, write_leaf_json,
};
use crate::error::{DataError, Result};

/// A user with its training and test samples.
#[derive(Clone, Debug, PartialEq)]
pub struct SplitUser {
    /// The user id.
    pub id: String,
    /// Its hierarchy entry (Shakespeare: the play), when known.
    pub hierarchy: Option<String>,
    /// Training samples.
    pub train: LeafSamples,
    /// Test samples.
    pub test: LeafSamples,
}

/// Whether `dir` has `train/` and `test/` subdirectories.
pub fn is_leaf_dir(dir: &Path) -> bool {
    dir.join("train").is_dir() && dir.join("test").is_dir()
}

/// The `.json` files of `dir`, sorted; an error when there are none.
fn json_files(dir: &Path) -> Result<Vec<PathBuf>> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| DataError::io(dir, e))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    files.sort();
    if files.is_empty() {
        return Err(DataError::format(dir, "no .json files in this directory"));
    }
    Ok(files)
}

/// Every user of one split's files, by id, each passed to `check`; a user in
/// two files is an error.
fn read_split(
    dir: &Path,
    split: Split,
    check: UserCheck<'_>,
) -> Result<BTreeMap<String, LeafUser>> {
    let mut users = BTreeMap::new();
    let mut origin: BTreeMap<String, PathBuf> = BTreeMap::new();
    for file in json_files(dir)? {
        for user in read_leaf_json_checked(&file, split, check)? {
            if let Some(first) = origin.get(&user.id) {
                return Err(DataError::format(
                    &file,
                    format!("user `{}` is also in {}", user.id, first.display()),
                ));
            }
            origin.insert(user.id.clone(), file.clone());
            users.insert(user.id.clone(), user);
        }
    }
    Ok(users)
}

/// The users of the LEAF directory `dir`, sorted by id.
pub fn read_leaf_dir(dir: &Path) -> Result<Vec<SplitUser>> {
    read_leaf_dir_checked(dir, &|_, _, _| Ok(()))
}

/// [`read_leaf_dir`], each user passed to `check` as it is read, with the
/// file it is in. A directory that fedcluster wrote is first checked against
/// its `checksums.sha256` ([`crate::regular::verify_listed`]); one without
/// (LEAF's own output) is read as it is.
pub fn read_leaf_dir_checked(dir: &Path, check: UserCheck<'_>) -> Result<Vec<SplitUser>> {
    crate::regular::verify_listed(dir)?;
    let (train_dir, test_dir) = (dir.join("train"), dir.join("test"));
    let train = read_split(&train_dir, Split::Train, check)?;
    let mut test = read_split(&test_dir, Split::Test, check)?;
    if let Some(id) = test.keys().find(|id| !train.contains_key(*id)) {
        return Err(DataError::format(
            &test_dir,
            format!("user `{id}` has test samples but no training samples in train/"),
        ));
    }
    train
        .into_values()
        .map(|user| {
            let test = test.remove(&user.id).ok_or_else(|| {
                DataError::format(
                    &test_dir,
                    format!(
                        "user `{}` has training samples but no test samples",
                        user.id
                    ),
                )
            })?;
            Ok(SplitUser {
                hierarchy: user.hierarchy.or(test.hierarchy),
                id: user.id,
                train: user.samples,
                test: test.samples,
            })
        })
        .collect()
}

/// Writes `users` as the LEAF directory `out` (`train/<name>_train.json`,
/// `test/<name>_test.json`, and `extra` files `(name, text)` beside them,
/// then `checksums.sha256` over them all), which must not exist; nothing is
/// left at `out` on failure.
pub fn write_leaf_dir(
    out: &Path,
    name: &str,
    users: &[SplitUser],
    extra: &[(&str, &str)],
) -> Result<()> {
    if out.exists() {
        return Err(DataError::format(
            out,
            "already exists; choose another directory or remove it",
        ));
    }
    let mut partial = out.as_os_str().to_owned();
    partial.push(".partial");
    let partial = PathBuf::from(partial);
    if partial.exists() {
        std::fs::remove_dir_all(&partial).map_err(|e| DataError::io(&partial, e))?;
    }
    let write = || -> Result<()> {
        for (split, pick) in [("train", true), ("test", false)] {
            let dir = partial.join(split);
            std::fs::create_dir_all(&dir).map_err(|e| DataError::io(&dir, e))?;
            let file: Vec<UserRef<'_>> = users
                .iter()
                .map(|u| UserRef {
                    id: &u.id,
                    hierarchy: u.hierarchy.as_deref(),
                    samples: if pick { &u.train } else { &u.test },
                })
                .collect();
            write_leaf_json(&dir.join(format!("{name}_{split}.json")), &file)?;
        }
        for (file, text) in extra {
            let path = partial.join(file);
            std::fs::write(&path, text).map_err(|e| DataError::io(&path, e))?;
        }
        crate::regular::write_listed(&partial, &format!("fedcluster data set v1; LEAF {name}"))
    };
    match write() {
        Ok(()) => std::fs::rename(&partial, out).map_err(|e| DataError::io(out, e)),
        Err(e) => {
            let _ = std::fs::remove_dir_all(&partial);
            Err(e)
        }
    }
}
