//! LEAF FEMNIST (Caldas et al. 2018): the handwritten digits and letters of
//! NIST Special Database 19 grouped by their writer, 62 classes (`0`-`9` are
//! 0-9, `A`-`Z` 10-35, `a`-`z` 36-61), read from LEAF's JSON files
//! (`train/*.json` and `test/*.json`, [`super::dir`]). One client per writer;
//! test client `i` is the same writer's test samples (LEAF's by-sample split,
//! `preprocess.sh -t sample`, 90% of each writer's images for training).
//!
//! What LEAF stores (its `data/femnist/preprocess/data_to_json.py`): each
//! 128x128 NIST scan converted to 8-bit greyscale (PIL's `convert('L')`),
//! shrunk to 28x28 (`thumbnail`, antialiased), flattened row by row and
//! divided by 255: 784 values in `[0, 1]`, the paper white (1.0) and the
//! strokes dark, the reverse of MNIST; `y` the class index. The values are
//! taken as stored (neither rescaled nor inverted), as LEAF's CNN and the
//! papers' code train on them: 28x28x1 images
//! ([`fedcluster_core::Input::images`]).
//!
//! The federation ([`femnist`]): `clients` writers drawn uniformly without
//! replacement by the seed, as Shakespeare draws its users, in id order; 0
//! takes every writer of the directory.
//! - IFCA (Ghosh et al. 2022, Section VI-C, Table II) trains on every writer
//!   of LEAF's own sample `preprocess.sh -s niid --sf 0.05 -k 100 -t sample`
//!   (its public code's `generate_data.sh`, with LEAF's paper seeds; 173
//!   writers in its logs): `clients = 0`.
//! - SR-FCA (Section 5, Tables 3-4) samples m = 50 writers (`random.sample`
//!   in its public code) of LEAF's `preprocess.sh -s niid --sf 0.05 -k 0 -t
//!   sample` (the flags of its code's README up to 2023; the final README
//!   says only "extract FEMNIST"): `clients = 50`. With `-k 0` LEAF's split
//!   leaves an empty `user_data` entry for each writer of fewer than 2
//!   images, which the reader skips.
//!
//! FEMNIST has no known clusters: as for Shakespeare, the truth is unknown
//! ([`GroundTruth::unknown`]) and the clustering metrics are not computed.
//!
//! Errors are one line naming the file (or directory) and the user: `train/`
//! or `test/` missing; a writer in one split only ([`read_leaf_dir_checked`],
//! Shakespeare's rule); text samples; an image of other than 784 values; a
//! class outside `0..62`; a writer without training images; more `clients`
//! than writers.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use fedcluster_core::ImageShape;
use fedcluster_core::limits::MAX_CLIENTS;

use super::dir::{SplitUser, read_leaf_dir_checked};
use super::json::{LeafSamples, LeafUser, Split};
use super::sample_users;
use crate::data_set::DataSet;
use crate::dataset::{ClientData, FederatedData, GroundTruth, TargetsOwned, Task};
use crate::error::{DataError, Result};
use crate::table::{DataKind, Files, required_dir};

/// Side of LEAF's FEMNIST images.
pub const SIDE: usize = 28;
/// Values per image.
pub const PIXELS: usize = SIDE * SIDE;
/// Classes: 10 digits, 26 upper-case and 26 lower-case letters.
pub const CLASSES: usize = 62;

/// `[data] kind = "femnist"`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FemnistSpec {
    /// LEAF's FEMNIST directory (`data/femnist/data` after `preprocess.sh`):
    /// `train/` and `test/` of JSON files.
    #[serde(default)]
    pub data_dir: Option<PathBuf>,
    /// Clients: writers drawn uniformly without replacement by the seed
    /// (SR-FCA: 50); 0, the default, takes every writer (IFCA).
    #[serde(default)]
    pub clients: usize,
    /// Keep each client's first this many training images (0: all).
    #[serde(default)]
    pub max_train_samples: usize,
    /// Keep each client's first this many test images (0: all).
    #[serde(default)]
    pub max_test_samples: usize,
}

impl FemnistSpec {
    /// Checks every field; the error names the first bad one.
    pub fn validate(&self) -> Result<()> {
        DataError::at_most("clients", "", self.clients as u128, MAX_CLIENTS as u128)
    }
}

/// LEAF's FEMNIST rules for one user of `file`: images of [`PIXELS`] values,
/// classes below [`CLASSES`], at least one training image.
fn check_user(file: &Path, split: Split, user: &LeafUser) -> Result<()> {
    let fail = |why: String| {
        Err(DataError::format(
            file,
            format!("user `{}`: {why}", user.id),
        ))
    };
    match &user.samples {
        s if s.is_empty() && split == Split::Train => fail("no training images".into()),
        s if s.is_empty() => Ok(()),
        LeafSamples::Text(_) => fail(format!(
            "text samples, not FEMNIST's images of {PIXELS} values"
        )),
        LeafSamples::Features { dim, .. } if *dim != PIXELS => fail(format!(
            "x[0] has {dim} values, not {PIXELS} (a {SIDE}x{SIDE} image)"
        )),
        LeafSamples::Features { y, .. } => match y.iter().position(|&c| c as usize >= CLASSES) {
            Some(j) => fail(format!(
                "y[{j}] = {} is not a FEMNIST class (0..{CLASSES})",
                y[j]
            )),
            None => Ok(()),
        },
    }
}

/// The writers of the LEAF directory `dir`, sorted by id, each checked
/// against FEMNIST's rules.
pub fn read_writers(dir: &Path) -> Result<Vec<SplitUser>> {
    let needs = "FEMNIST reads LEAF's train/ and test/ JSON files \
                 (data/femnist/data after LEAF's preprocess.sh ... -t sample)";
    if !dir.is_dir() {
        return Err(DataError::format(
            dir,
            format!("no such directory: {needs}"),
        ));
    }
    for split in ["train", "test"] {
        if !dir.join(split).is_dir() {
            return Err(DataError::format(
                dir,
                format!("no `{split}/` directory: {needs}"),
            ));
        }
    }
    read_leaf_dir_checked(dir, &check_user)
}

/// The federation of [`FemnistSpec`]: `clients` writers drawn by `seed` (in
/// id order), each a training client and its test split the test client of
/// the same index. The clusters are unknown.
pub fn femnist(spec: &FemnistSpec, seed: u64) -> Result<FederatedData> {
    spec.validate()?;
    let dir = spec.data_dir.as_deref().ok_or_else(|| {
        DataError::invalid(
            "data_dir",
            "FEMNIST needs the directory of LEAF's train/ and test/ JSON files",
        )
    })?;
    let writers = read_writers(dir)?;
    femnist_from_writers(spec, writers, seed, dir)
}

/// [`femnist`] over writers already read from `dir` and checked.
pub fn femnist_from_writers(
    spec: &FemnistSpec,
    mut writers: Vec<SplitUser>,
    seed: u64,
    dir: &Path,
) -> Result<FederatedData> {
    writers.sort_by(|a, b| a.id.cmp(&b.id));
    let picked = sample_users(spec.clients, writers.len(), seed, "writers", dir)?;
    let mut train = Vec::with_capacity(picked.len());
    let mut test = Vec::with_capacity(picked.len());
    let mut next = picked.iter().peekable();
    for (i, writer) in writers.into_iter().enumerate() {
        if next.next_if(|&&at| at == i).is_some() {
            train.push(client(writer.train, spec.max_train_samples));
            test.push(client(writer.test, spec.max_test_samples));
        }
    }
    Ok(FederatedData {
        name: "femnist".into(),
        dim: PIXELS,
        task: Task::Classification { classes: CLASSES },
        image: Some(ImageShape {
            height: SIDE,
            width: SIDE,
            channels: 1,
        }),
        train,
        test,
        truth: GroundTruth::unknown(),
    })
}

/// A client of checked samples, its first `cap` images (0: all).
fn client(samples: LeafSamples, cap: usize) -> ClientData {
    let (mut x, mut y) = match samples {
        LeafSamples::Features { x, y, .. } => (x, y),
        // Checked: text only when empty.
        LeafSamples::Text(_) => (Vec::new(), Vec::new()),
    };
    if cap > 0 && y.len() > cap {
        y.truncate(cap);
        x.truncate(cap * PIXELS);
    }
    ClientData {
        x,
        y: TargetsOwned::Class(y),
    }
}

/// `kind = "femnist"`: [`FemnistSpec`], read from LEAF's FEMNIST directory.
pub struct Femnist;

impl DataKind for Femnist {
    type Spec = FemnistSpec;

    const FILES: Option<Files> = Some(Files {
        title: "FEMNIST",
        directory: "LEAF's FEMNIST directory (its train/ and test/ JSON files)",
        dir_name: "femnist",
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
        femnist(spec, seed).map(DataSet::Stored)
    }
}

#[cfg(test)]
mod tests;
