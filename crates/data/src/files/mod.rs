//! A user's own federated data on disk: `[data] kind = "files"`.
//!
//! A federation is a directory holding `federation.json` (the manifest: a
//! versioned `format`, the task and its classes, the input shape, and the
//! clients) and one file of arrays per client, `x` (float32, `[n, ...shape]`)
//! and `y` (`n` integer class labels, or float32 targets), in safetensors or
//! NumPy `.npz`; or, in place of the client list, a LEAF directory of any
//! classification task. docs/data.md is the spec a user writes by hand.
//!
//! - [`manifest`]: `federation.json` and its checks.
//! - [`array`]: an array's shape and values, decoded from bytes.
//! - [`arrays`]: one client's arrays in safetensors or `.npz`, read and
//!   written; [`npy`]: NumPy's `.npy` and `.npz`.
//! - [`read`]: a client's arrays checked against the manifest.
//! - [`leaf_any`]: a LEAF directory's users as clients.
//! - [`write`]: any [`FederatedData`] written as a federation
//!   ([`write_federation`]).
//!
//! Errors are one line naming the file and the client: a manifest that
//! disagrees with the arrays (shape, sample count, a class out of range), a
//! client with no samples, a NaN or infinite value, a missing file, an
//! unknown format version. Every size is checked against
//! [`fedcluster_core::limits`] before anything of that size is allocated.

pub mod array;
pub mod arrays;
pub mod leaf_any;
pub mod manifest;
pub mod npy;
pub mod read;
pub mod write;
pub mod zip_bounds;

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::data_set::DataSet;
use crate::dataset::{FederatedData, GroundTruth};
use crate::error::{DataError, Result};
use crate::table::{DataKind, Files, required_dir};

pub use arrays::ArrayFormat;
pub use manifest::{MANIFEST, Manifest};
pub use write::write_federation;

use arrays::{Values, read_arrays};

/// `[data] kind = "files"`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FilesSpec {
    /// The federation's directory (holding `federation.json`).
    #[serde(default)]
    pub data_dir: Option<PathBuf>,
}

/// What `kind = "files"` reads.
const FEDERATION_FILES: Files = Files {
    title: "Federation files",
    directory: "a directory holding federation.json and the clients' arrays (docs/data.md)",
    dir_name: "federation",
    fetch: None,
};

/// `kind = "files"`: a federation directory ([`read_federation`]).
pub struct FederationFiles;

impl DataKind for FederationFiles {
    type Spec = FilesSpec;
    const FILES: Option<Files> = Some(FEDERATION_FILES);

    fn validate(_spec: &FilesSpec) -> Result<()> {
        Ok(())
    }

    fn data_dir(spec: &FilesSpec) -> Option<&Path> {
        spec.data_dir.as_deref()
    }

    fn data_dir_mut(spec: &mut FilesSpec) -> Option<&mut Option<PathBuf>> {
        Some(&mut spec.data_dir)
    }

    fn build(spec: &FilesSpec, _seed: u64) -> Result<DataSet> {
        read_federation(required_dir::<Self>(spec)?).map(DataSet::Stored)
    }
}

/// The federation in `dir`: every client read and checked against the
/// manifest, the truth from the clients' clusters and `truth_params`.
pub fn read_federation(dir: &Path) -> Result<FederatedData> {
    // Written by `fedcluster data export`: every file checked first.
    crate::regular::verify_listed(dir)?;
    let manifest = Manifest::read(dir)?;
    let task = manifest.task();
    let (input, train, test) = match &manifest.leaf {
        Some(leaf) => leaf_any::leaf_clients(&dir.join(leaf), task, manifest.input())?,
        None => {
            let input = manifest.input().ok_or_else(|| {
                DataError::format(dir.join(MANIFEST), "`features` or `image` is not given")
            })?;
            let mut stored = 0;
            let train = read::read_clients(dir, "train", &manifest.train, &input, &mut stored)?;
            let test = read::read_clients(dir, "test", &manifest.test, &input, &mut stored)?;
            (input, train, test)
        }
    };
    let truth = match manifest.true_clusters() {
        None => GroundTruth::unknown(),
        Some(clusters) => GroundTruth {
            clusters,
            train_labels: manifest.train.iter().filter_map(|c| c.cluster).collect(),
            test_labels: manifest.test.iter().filter_map(|c| c.cluster).collect(),
            params: truth_params(dir, &manifest, clusters)?,
        },
    };
    let name = manifest.name.clone().unwrap_or_else(|| {
        let name = dir.file_name().map(|n| n.to_string_lossy().into_owned());
        name.unwrap_or_else(|| "files".into())
    });
    let data = FederatedData {
        name,
        dim: input.dim,
        task: input.task,
        image: input.image,
        train,
        test,
        truth,
    };
    data.validate()
        .map_err(|e| DataError::format(dir.join(MANIFEST), e.to_string()))?;
    Ok(data)
}

/// The true parameters of `truth_params`: one array `params` of shape
/// `[clusters, P]`, finite.
fn truth_params(dir: &Path, manifest: &Manifest, clusters: usize) -> Result<Option<Vec<Vec<f32>>>> {
    let Some(file) = &manifest.truth_params else {
        return Ok(None);
    };
    let path = dir.join(file);
    let limit = fedcluster_core::limits::MAX_MODEL_VALUES;
    let [params] = read_arrays(&path, ["params"], limit)?;
    let fail = |why: String| DataError::format(&path, why);
    let (Values::Float(values), [k, p]) = (params.values, params.shape.as_slice()) else {
        return Err(fail(
            "`params` must be float32 of shape [clusters, P]".into(),
        ));
    };
    if *k != clusters || *p == 0 {
        return Err(fail(format!(
            "`params` has shape [{k}, {p}] for {clusters} clusters: [{clusters}, P > 0] expected"
        )));
    }
    if values.iter().any(|v| !v.is_finite()) {
        return Err(fail("`params` holds a NaN or infinite value".into()));
    }
    Ok(Some(values.chunks_exact(*p).map(<[f32]>::to_vec).collect()))
}

#[cfg(test)]
mod tests;
