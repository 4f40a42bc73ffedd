//! One LEAF JSON file: `users` (ids), `num_samples` (one count per user),
//! `user_data` (`{id: {"x": [...], "y": [...]}}`) and optionally
//! `hierarchies` (Shakespeare: each user's play). Samples are text windows
//! (`x` strings over LEAF's alphabet, `y` one-character strings: Shakespeare)
//! or feature vectors (`x` arrays of numbers, `y` class indices: FEMNIST).
//!
//! The reader streams: each user's samples are decoded into their compact
//! form as they are parsed, never held as JSON values. Errors name the file,
//! and the user where there is one.

use std::fs::File;
use std::io::{BufReader, BufWriter, Write};
use std::path::Path;

use serde::Deserializer as _;

use super::alphabet::character;
use super::samples::TextSamples;
use crate::error::{DataError, Result};

mod stream;

use stream::FileVisitor;

/// A user's samples.
#[derive(Clone, Debug, PartialEq)]
pub enum LeafSamples {
    /// Text windows over LEAF's alphabet and their next characters.
    Text(TextSamples),
    /// Feature vectors of `dim` values, row-major, and class indices.
    Features {
        /// Values per sample.
        dim: usize,
        /// `len * dim` values.
        x: Vec<f32>,
        /// One class per sample.
        y: Vec<u32>,
    },
}

impl LeafSamples {
    /// Number of samples.
    pub fn len(&self) -> usize {
        match self {
            Self::Text(t) => t.len(),
            Self::Features { y, .. } => y.len(),
        }
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Values per sample: the window length or the feature count (0 when
    /// there are no samples to tell).
    pub fn dim(&self) -> usize {
        match self {
            Self::Text(t) => t.seq_len,
            Self::Features { dim, .. } => *dim,
        }
    }
}

/// One user of a file.
#[derive(Clone, Debug, PartialEq)]
pub struct LeafUser {
    /// The user id.
    pub id: String,
    /// Its hierarchy entry (Shakespeare: the play), when the file has them.
    pub hierarchy: Option<String>,
    /// Its samples.
    pub samples: LeafSamples,
}

/// Which split a file holds: LEAF's Shakespeare test files state
/// `num_samples` `SEQ_LEN - 1` higher than the windows they hold (its split
/// counts the gap), which the reader accepts in test files only.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Split {
    /// `train/*.json`.
    Train,
    /// `test/*.json`.
    Test,
}

/// A check of each user as read, given the file it is in and its split (a
/// data set's own rules: FEMNIST's image size and classes); its error is
/// returned as is.
pub type UserCheck<'a> = &'a dyn Fn(&Path, Split, &LeafUser) -> Result<()>;

/// Reads the LEAF JSON file at `path`; the users in the order of its `users`.
pub fn read_leaf_json(path: &Path, split: Split) -> Result<Vec<LeafUser>> {
    read_leaf_json_checked(path, split, &|_, _, _| Ok(()))
}

/// [`read_leaf_json`], each user passed to `check` once the file's parts
/// agree, before its users are compared with each other (so that a data
/// set's own message, such as FEMNIST's image size, comes first).
pub fn read_leaf_json_checked(
    path: &Path,
    split: Split,
    check: UserCheck<'_>,
) -> Result<Vec<LeafUser>> {
    let (file, _) = crate::regular::open(path)?;
    let mut de = serde_json::Deserializer::from_reader(BufReader::with_capacity(1 << 20, file));
    let raw = de
        .deserialize_map(FileVisitor)
        .and_then(|raw| de.end().map(|()| raw))
        .map_err(|e| DataError::format(path, format!("not a LEAF JSON file: {e}")))?;
    let users = raw
        .check(split)
        .map_err(|why| DataError::format(path, why))?;
    for user in &users {
        check(path, split, user)?;
    }
    one_kind(&users).map_err(|why| DataError::format(path, why))?;
    Ok(users)
}

/// A user to write: borrowed parts of a [`LeafUser`].
#[derive(Clone, Copy, Debug)]
pub struct UserRef<'a> {
    /// The user id.
    pub id: &'a str,
    /// Its hierarchy entry, if any (written only when every user has one).
    pub hierarchy: Option<&'a str>,
    /// Its samples.
    pub samples: &'a LeafSamples,
}

impl<'a> From<&'a LeafUser> for UserRef<'a> {
    fn from(u: &'a LeafUser) -> Self {
        Self {
            id: &u.id,
            hierarchy: u.hierarchy.as_deref(),
            samples: &u.samples,
        }
    }
}

/// Writes `users` as a LEAF JSON file at `path`, `num_samples` being each
/// user's number of samples.
pub fn write_leaf_json(path: &Path, users: &[UserRef<'_>]) -> Result<()> {
    let file = File::create(path).map_err(|e| DataError::io(path, e))?;
    let mut out = BufWriter::with_capacity(1 << 20, file);
    write_users(&mut out, users)
        .and_then(|()| out.flush())
        .map_err(|e| DataError::io(path, e))
}

fn write_users(out: &mut impl Write, users: &[UserRef<'_>]) -> std::io::Result<()> {
    let ids: Vec<&str> = users.iter().map(|u| u.id).collect();
    let counts: Vec<usize> = users.iter().map(|u| u.samples.len()).collect();
    write!(out, "{{\"users\": ")?;
    serde_json::to_writer(&mut *out, &ids)?;
    if users.iter().all(|u| u.hierarchy.is_some()) {
        let plays: Vec<&str> = users.iter().filter_map(|u| u.hierarchy).collect();
        write!(out, ", \"hierarchies\": ")?;
        serde_json::to_writer(&mut *out, &plays)?;
    }
    write!(out, ", \"num_samples\": ")?;
    serde_json::to_writer(&mut *out, &counts)?;
    write!(out, ", \"user_data\": {{")?;
    for (i, user) in users.iter().enumerate() {
        if i > 0 {
            write!(out, ", ")?;
        }
        serde_json::to_writer(&mut *out, user.id)?;
        write!(out, ": {{\"x\": [")?;
        match user.samples {
            LeafSamples::Text(t) => {
                let mut window = String::with_capacity(t.seq_len);
                for j in 0..t.len() {
                    window.clear();
                    window.extend(t.window(j).iter().map(|&s| character(s)));
                    write!(out, "{}", if j > 0 { ", " } else { "" })?;
                    serde_json::to_writer(&mut *out, &window)?;
                }
                write!(out, "], \"y\": [")?;
                for (j, &label) in t.labels.iter().enumerate() {
                    write!(out, "{}", if j > 0 { ", " } else { "" })?;
                    serde_json::to_writer(&mut *out, &character(label).to_string())?;
                }
            }
            LeafSamples::Features { dim, x, y } => {
                for (j, row) in x.chunks_exact((*dim).max(1)).enumerate() {
                    write!(out, "{}", if j > 0 { ", " } else { "" })?;
                    serde_json::to_writer(&mut *out, row)?;
                }
                write!(out, "], \"y\": ")?;
                serde_json::to_writer(&mut *out, y)?;
                write!(out, "}}")?;
                continue;
            }
        }
        write!(out, "]}}")?;
    }
    writeln!(out, "}}}}")
}

/// A file as parsed, before its parts are checked against each other.
struct RawFile {
    users: Option<Vec<String>>,
    num_samples: Option<Vec<u64>>,
    hierarchies: Option<Vec<Option<String>>>,
    user_data: Option<Vec<(String, LeafSamples)>>,
}

impl RawFile {
    /// Users in `users` order; the error names the first inconsistency.
    fn check(self, split: Split) -> Result<Vec<LeafUser>, String> {
        let users = self.users.ok_or("no `users` list")?;
        let counts = self.num_samples.ok_or("no `num_samples` list")?;
        let mut data = self.user_data.ok_or("no `user_data` object")?;
        if counts.len() != users.len() {
            return Err(format!(
                "`num_samples` has {} entries for {} users",
                counts.len(),
                users.len()
            ));
        }
        let hierarchies = match self.hierarchies {
            Some(h) if h.len() != users.len() => {
                return Err(format!(
                    "`hierarchies` has {} entries for {} users",
                    h.len(),
                    users.len()
                ));
            }
            Some(h) => h,
            None => vec![None; users.len()],
        };
        data.sort_by(|a, b| a.0.cmp(&b.0));
        if let Some(w) = data.windows(2).find(|w| w[0].0 == w[1].0) {
            return Err(format!("user `{}` appears twice in `user_data`", w[0].0));
        }
        let mut taken = vec![false; data.len()];
        let mut out = Vec::with_capacity(users.len());
        for ((id, count), hierarchy) in users.into_iter().zip(counts).zip(hierarchies) {
            let at = data
                .binary_search_by(|(k, _)| k.as_str().cmp(&id))
                .map_err(|_| format!("user `{id}` is in `users` but missing from `user_data`"))?;
            if std::mem::replace(&mut taken[at], true) {
                return Err(format!("user `{id}` appears twice in `users`"));
            }
            let samples =
                std::mem::replace(&mut data[at].1, LeafSamples::Text(TextSamples::new(0)));
            let n = samples.len() as u64;
            let gap = match (&samples, split) {
                (LeafSamples::Text(t), Split::Test) => t.seq_len as u64 - 1,
                _ => 0,
            };
            if count != n && !(gap > 0 && count == n + gap) {
                return Err(format!(
                    "user `{id}`: `num_samples` says {count} but `user_data` holds {n} samples"
                ));
            }
            out.push(LeafUser {
                id,
                hierarchy,
                samples,
            });
        }
        // LEAF's `split_data.py` (by sample) leaves an empty entry in
        // `user_data` for every user it drops (fewer than 2 samples): skipped.
        if let Some(at) = (0..data.len()).find(|&at| !taken[at] && !data[at].1.is_empty()) {
            return Err(format!(
                "user `{}` is in `user_data` but not in `users`",
                data[at].0
            ));
        }
        Ok(out)
    }
}

/// Fails unless the users' samples are all text or all numbers, of one
/// length.
fn one_kind(users: &[LeafUser]) -> Result<(), String> {
    let mut with_samples = users.iter().filter(|u| !u.samples.is_empty());
    let Some(first) = with_samples.next() else {
        return Ok(());
    };
    let is_text = |u: &LeafUser| matches!(u.samples, LeafSamples::Text(_));
    for user in with_samples {
        if is_text(user) != is_text(first) {
            return Err(format!(
                "user `{}`: text and numeric samples in one file",
                user.id
            ));
        }
        if user.samples.dim() != first.samples.dim() {
            return Err(format!(
                "user `{}`: samples of {} values where user `{}` has {}",
                user.id,
                user.samples.dim(),
                first.id,
                first.samples.dim()
            ));
        }
    }
    Ok(())
}
