//! LEAF Shakespeare (Caldas et al. 2018): one user per speaking role of a
//! play, samples the role's 80-character windows labelled with the next
//! character, split per user into a training prefix and a test suffix.
//!
//! From the plain Gutenberg plays ([`users_from_plays`]), following LEAF's
//! `preprocess_shakespeare.py`, `shake_utils.py` and `split_data.py`:
//! 1. each play's roles ([`super::plays`]), each role's lines without the
//!    characters outside LEAF's alphabet (LEAF encodes them as -1, which its
//!    models cannot take; here they are dropped and counted);
//! 2. a role with at least 3 lines is a user, its id LEAF's
//!    `re.sub(r'\W+', '_', (play + '_' + role).replace(' ', '_'))`; its text
//!    the lines joined by spaces ([`super::samples::normalise`]), its
//!    `len - 80` windows its samples; a user needs at least one;
//! 3. LEAF's by-sample split ([`super::samples::leaf_split`], fraction 0.8):
//!    users without a test window are dropped.
//!
//! Or from a LEAF directory ([`super::dir::read_leaf_dir`]), LEAF's own output
//! or ours. [`shakespeare`] then samples the federation's clients from the
//! users, as the SR-FCA paper's code does (uniformly without replacement).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::alphabet::{SEQ_LEN, SYMBOLS, symbol};
use super::dir::{SplitUser, is_leaf_dir, read_leaf_dir};
use super::json::LeafSamples;
use super::plays::{Play, parse_play};
use super::sample_users;
use super::samples::{leaf_split, normalise};
use crate::data_set::DataSet;
use crate::dataset::{ClientData, FederatedData, GroundTruth, TargetsOwned, Task};
use crate::error::{DataError, Result};
use crate::table::{DataKind, Files, required_dir};

/// `[data] kind = "shakespeare"`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ShakespeareSpec {
    /// The plays (`*.txt`, Project Gutenberg) or a LEAF directory (`train/`
    /// and `test/` of JSON files).
    #[serde(default)]
    pub data_dir: Option<PathBuf>,
    /// Clients sampled from the users, uniformly without replacement by the
    /// seed (SR-FCA: 50); 0 takes every user.
    #[serde(default = "default_clients")]
    pub clients: usize,
    /// LEAF's training fraction of each user's windows (plain texts only; a
    /// LEAF directory comes split).
    #[serde(default = "default_fraction")]
    pub train_fraction: f64,
    /// Keep each client's first this many training windows (0: all).
    #[serde(default)]
    pub max_train_samples: usize,
    /// Keep each client's first this many test windows (0: all).
    #[serde(default)]
    pub max_test_samples: usize,
}

fn default_clients() -> usize {
    50
}

fn default_fraction() -> f64 {
    0.8
}

impl ShakespeareSpec {
    /// Checks every field; the error names the first bad one.
    pub fn validate(&self) -> Result<()> {
        if !(self.train_fraction > 0.0 && self.train_fraction < 1.0) {
            return Err(DataError::invalid(
                "train_fraction",
                format!("must be in (0, 1), got {}", self.train_fraction),
            ));
        }
        Ok(())
    }
}

/// What building the users from the plays found, beside LEAF's published
/// statistics.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct PlayStats {
    /// Files read as plays.
    pub plays: usize,
    /// Files without an act heading, skipped (the poems).
    pub skipped: Vec<String>,
    /// Roles found.
    pub roles: usize,
    /// Users before the split (at least 3 lines and one window): LEAF's
    /// `all_data`, which its statistics count.
    pub users: usize,
    /// Their windows.
    pub samples: usize,
    /// Median windows per user.
    pub median_samples: f64,
    /// Mean windows per user.
    pub mean_samples: f64,
    /// Population standard deviation of the windows per user (LEAF's
    /// `np.std`).
    pub std_samples: f64,
    /// Users kept by the split (a test window).
    pub split_users: usize,
    /// Their training and test windows.
    pub train_samples: usize,
    /// Test windows.
    pub test_samples: usize,
    /// Characters outside LEAF's alphabet, dropped, with their counts.
    pub dropped_characters: BTreeMap<char, usize>,
}

/// LEAF's user id of `role` in `play`: spaces made `_`, then every run of
/// other non-word characters one `_`.
pub fn leaf_user_id(play: &str, role: &str) -> String {
    let joined = format!("{play}_{role}").replace(' ', "_");
    let mut id = String::with_capacity(joined.len());
    let mut in_run = false;
    for c in joined.chars() {
        if c.is_alphanumeric() || c == '_' {
            id.push(c);
            in_run = false;
        } else if !in_run {
            id.push('_');
            in_run = true;
        }
    }
    id
}

/// Reads every `*.txt` play in `dir` (sorted by file name) into LEAF users.
pub fn users_from_plays(dir: &Path, train_fraction: f64) -> Result<(Vec<SplitUser>, PlayStats)> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| DataError::io(dir, e))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "txt"))
        .collect();
    files.sort();
    if files.is_empty() {
        return Err(DataError::format(
            dir,
            "no .txt play files in this directory",
        ));
    }
    let mut plays = Vec::new();
    let mut stats = PlayStats::default();
    for path in &files {
        // A play is a few hundred kB; 64 MiB is far above any.
        let bytes = crate::regular::read(path, 64 << 20)?;
        // Gutenberg texts are ASCII or Latin-1: read bytes as Latin-1.
        let text: String = bytes.iter().map(|&b| char::from(b)).collect();
        match parse_play(&text) {
            Some(play) => plays.push(play),
            None => stats.skipped.push(
                path.file_name()
                    .unwrap_or_default()
                    .to_string_lossy()
                    .into(),
            ),
        }
    }
    if plays.is_empty() {
        return Err(DataError::format(
            dir,
            format!(
                "none of its {} .txt files is a play (no title and roles found)",
                files.len()
            ),
        ));
    }
    let users = users_from_parsed(&plays, train_fraction, &mut stats);
    Ok((users, stats))
}

/// LEAF users of parsed plays; fills `stats`.
pub fn users_from_parsed(plays: &[Play], fraction: f64, stats: &mut PlayStats) -> Vec<SplitUser> {
    let mut counts = Vec::new();
    let mut users = Vec::new();
    let mut seen = std::collections::HashSet::new();
    stats.plays = plays.len();
    for play in plays {
        for role in &play.roles {
            stats.roles += 1;
            let lines: Vec<String> = role
                .lines
                .iter()
                .map(|line| {
                    let kept: String = line
                        .chars()
                        .filter(|&c| {
                            let known = symbol(c).is_some();
                            if !known {
                                *stats.dropped_characters.entry(c).or_default() += 1;
                            }
                            known
                        })
                        .collect();
                    kept.trim().to_string()
                })
                .filter(|l| !l.is_empty())
                .collect();
            if lines.len() < 3 {
                continue;
            }
            let text: Vec<u8> = normalise(&lines).chars().filter_map(symbol).collect();
            if text.len() <= SEQ_LEN {
                continue;
            }
            counts.push(text.len() - SEQ_LEN);
            let Some((train, test)) = leaf_split(&text, fraction) else {
                continue;
            };
            let mut id = leaf_user_id(&play.title, &role.name);
            while !seen.insert(id.clone()) {
                id.push_str("_2");
            }
            stats.train_samples += train.len();
            stats.test_samples += test.len();
            users.push(SplitUser {
                id,
                hierarchy: Some(play.title.clone()),
                train: LeafSamples::Text(train),
                test: LeafSamples::Text(test),
            });
        }
    }
    stats.users = counts.len();
    stats.samples = counts.iter().sum();
    stats.split_users = users.len();
    if !counts.is_empty() {
        let n = counts.len() as f64;
        stats.mean_samples = stats.samples as f64 / n;
        stats.std_samples = (counts
            .iter()
            .map(|&c| (c as f64 - stats.mean_samples).powi(2))
            .sum::<f64>()
            / n)
            .sqrt();
        counts.sort_unstable();
        let mid = counts.len() / 2;
        stats.median_samples = if counts.len() % 2 == 1 {
            counts[mid] as f64
        } else {
            (counts[mid - 1] + counts[mid]) as f64 / 2.0
        };
    }
    users.sort_by(|a, b| a.id.cmp(&b.id));
    users
}

/// The users of `dir`: a LEAF directory, or plays split at `fraction`.
pub fn load_users(dir: &Path, fraction: f64) -> Result<Vec<SplitUser>> {
    if is_leaf_dir(dir) {
        read_leaf_dir(dir)
    } else {
        users_from_plays(dir, fraction).map(|(users, _)| users)
    }
}

/// The federation of [`ShakespeareSpec`]: `clients` users sampled by `seed`
/// (in id order), each a training client and its test split the test client
/// of the same index. The clusters are unknown.
pub fn shakespeare(spec: &ShakespeareSpec, seed: u64) -> Result<FederatedData> {
    spec.validate()?;
    let dir = spec.data_dir.as_deref().ok_or_else(|| {
        DataError::invalid(
            "data_dir",
            "Shakespeare needs the directory of the plays or of LEAF's JSON files",
        )
    })?;
    let users = load_users(dir, spec.train_fraction)?;
    shakespeare_from_users(spec, users, seed, dir)
}

/// [`shakespeare`] over users already loaded from `dir`.
pub fn shakespeare_from_users(
    spec: &ShakespeareSpec,
    mut users: Vec<SplitUser>,
    seed: u64,
    dir: &Path,
) -> Result<FederatedData> {
    users.sort_by(|a, b| a.id.cmp(&b.id));
    let picked = sample_users(spec.clients, users.len(), seed, "users", dir)?;
    let count = picked.len();
    let mut train = Vec::with_capacity(count);
    let mut test = Vec::with_capacity(count);
    let mut names = Vec::with_capacity(count);
    for &i in &picked {
        let user = &users[i];
        let client = |samples: &LeafSamples, cap: usize| -> Result<ClientData> {
            let LeafSamples::Text(t) = samples else {
                return Err(DataError::format(
                    dir,
                    format!(
                        "user `{}`: numeric samples, not Shakespeare's text windows",
                        user.id
                    ),
                ));
            };
            if t.seq_len != SEQ_LEN && !t.is_empty() {
                return Err(DataError::format(
                    dir,
                    format!(
                        "user `{}`: windows of {} characters, not {SEQ_LEN}",
                        user.id, t.seq_len
                    ),
                ));
            }
            let mut t = t.clone();
            t.truncate(cap);
            let (x, y) = t.features();
            Ok(ClientData {
                x,
                y: TargetsOwned::Class(y),
            })
        };
        train.push(client(&user.train, spec.max_train_samples)?);
        test.push(client(&user.test, spec.max_test_samples)?);
        names.push(user.id.clone());
    }
    if let Some(at) = train.iter().position(ClientData::is_empty) {
        return Err(DataError::format(
            dir,
            format!("user `{}` has no training samples", names[at]),
        ));
    }
    Ok(FederatedData {
        name: "shakespeare".into(),
        dim: SEQ_LEN,
        task: Task::Classification { classes: SYMBOLS },
        image: None,
        train,
        test,
        truth: GroundTruth::unknown(),
    })
}

/// `kind = "shakespeare"`: [`ShakespeareSpec`], read from the plays or a LEAF
/// directory.
pub struct Shakespeare;

impl DataKind for Shakespeare {
    type Spec = ShakespeareSpec;

    const FILES: Option<Files> = Some(Files {
        title: "Shakespeare",
        directory: "the directory of the plays or of LEAF's train/ and test/ JSON files",
        dir_name: "shakespeare",
        fetch: None,
    });

    fn validate(spec: &Self::Spec) -> Result<()> {
        spec.validate()
    }

    fn data_dir(spec: &Self::Spec) -> Option<&Path> {
        spec.data_dir.as_deref()
    }

    fn data_dir_mut(spec: &mut Self::Spec) -> Option<&mut Option<PathBuf>> {
        Some(&mut spec.data_dir)
    }

    fn build(spec: &Self::Spec, seed: u64) -> Result<DataSet> {
        required_dir::<Self>(spec)?;
        shakespeare(spec, seed).map(DataSet::Stored)
    }
}
