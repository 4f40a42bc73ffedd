//! `federation.json`, the manifest of a federation on disk (docs/data.md
//! has the spec): its format version, task, input shape, clients (each a
//! file of arrays, with its sample count and true cluster when known), or a
//! LEAF directory in their place, and the true cluster parameters.

use std::path::Path;

use serde::{Deserialize, Serialize};

use fedcluster_core::limits::{MAX_CLIENT_VALUES, MAX_CLIENTS, MAX_CLUSTERS};
use fedcluster_core::{ImageShape, Input, Task};

use crate::error::{DataError, Result};

/// The manifest's file name in a federation's directory.
pub const MANIFEST: &str = "federation.json";

/// The format version this reader and writer speak.
pub const FORMAT: u32 = 1;

/// The largest manifest read (a million clients take about 60 MB).
const MAX_MANIFEST_BYTES: u64 = 1 << 30;

/// What the targets are.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TaskName {
    /// Integer class labels in `0..classes`.
    Classification,
    /// float32 targets.
    Regression,
}

/// The images' shape, channels-last.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ImageEntry {
    /// Rows.
    pub height: usize,
    /// Columns.
    pub width: usize,
    /// Channels.
    pub channels: usize,
}

/// One client: its file and what the manifest says of it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClientEntry {
    /// Its arrays `x` and `y`, relative to the federation's directory
    /// (`.safetensors` or `.npz`).
    pub file: String,
    /// Its number of samples, checked against the arrays when given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub samples: Option<usize>,
    /// Its true cluster (ground truth, read by metrics only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster: Option<usize>,
}

/// `federation.json`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Manifest {
    /// The format version: [`FORMAT`].
    pub format: u32,
    /// A short name for reports (default: the directory's name).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// What the targets are.
    pub task: TaskName,
    /// Classes, for a classification task.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub classes: Option<usize>,
    /// Values per sample, when the samples are not images.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub features: Option<usize>,
    /// The samples' image shape, when they are images.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image: Option<ImageEntry>,
    /// True clusters (default: one more than the largest client cluster).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clusters: Option<usize>,
    /// A file of one array `params` of shape `[clusters, P]`: each true
    /// cluster's parameters (synthetic data), for the parameter error.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub truth_params: Option<String>,
    /// Training clients, client `i` the `i`-th.
    #[serde(default)]
    pub train: Vec<ClientEntry>,
    /// Test clients.
    #[serde(default)]
    pub test: Vec<ClientEntry>,
    /// A LEAF directory (`train/` and `test/` JSON files), relative to this
    /// one, instead of `train` and `test`: one client per user, sorted by id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub leaf: Option<String>,
}

impl Manifest {
    /// The manifest of the federation in `dir`, checked ([`Manifest::check`]);
    /// errors start with the manifest's path.
    pub fn read(dir: &Path) -> Result<Self> {
        let path = dir.join(MANIFEST);
        let size = std::fs::metadata(&path)
            .map_err(|e| DataError::io(&path, e))?
            .len();
        if size > MAX_MANIFEST_BYTES {
            return Err(DataError::format(
                &path,
                format!("{size} bytes, above the limit of {MAX_MANIFEST_BYTES}"),
            ));
        }
        let text = std::fs::read(&path).map_err(|e| DataError::io(&path, e))?;
        let manifest: Manifest = serde_json::from_slice(&text)
            .map_err(|e| DataError::format(&path, format!("not a federation manifest: {e}")))?;
        manifest
            .check()
            .map_err(|why| DataError::format(&path, why))?;
        Ok(manifest)
    }

    /// Fails on an unknown format version, a task without its classes (or
    /// classes for a regression), not exactly one of `features` and `image`
    /// (either may be left out for a LEAF directory), sizes above
    /// [`fedcluster_core::limits`], no training client, or cluster labels on
    /// some clients only.
    pub fn check(&self) -> std::result::Result<(), String> {
        if self.format != FORMAT {
            return Err(format!(
                "`format` {} is not read by this fedcluster (it reads format {FORMAT})",
                self.format
            ));
        }
        match (self.task, self.classes) {
            (TaskName::Classification, None | Some(0)) => {
                return Err("`classes`: a classification task needs at least 1 class".into());
            }
            (TaskName::Regression, Some(_)) => {
                return Err("`classes`: a regression task has no classes".into());
            }
            _ => {}
        }
        let dim = match (self.features, self.image) {
            (Some(_), Some(_)) => return Err("give `features` or `image`, not both".into()),
            (None, None) if self.leaf.is_none() => {
                return Err("`features` or `image`: the input shape is not given".into());
            }
            (Some(f), None) => f as u128,
            (None, Some(i)) => (i.height as u128) * (i.width as u128) * (i.channels as u128),
            (None, None) => 1,
        };
        if dim == 0 {
            return Err("`features` / `image`: a sample must have at least 1 value".into());
        }
        let limit = |field: &str, value: u128, max: u128| {
            fedcluster_core::limits::exceeds("", value, max).map(|why| format!("`{field}`: {why}"))
        };
        let sizes = [
            limit("features", dim, MAX_CLIENT_VALUES),
            limit("train", self.train.len() as u128, MAX_CLIENTS as u128),
            limit("test", self.test.len() as u128, MAX_CLIENTS as u128),
            limit(
                "clusters",
                self.clusters.unwrap_or(0) as u128,
                MAX_CLUSTERS as u128,
            ),
            limit(
                "classes",
                self.classes.unwrap_or(0) as u128,
                u32::MAX as u128,
            ),
        ];
        if let Some(why) = sizes.into_iter().flatten().next() {
            return Err(why);
        }
        let listed = !self.train.is_empty() || !self.test.is_empty();
        match (&self.leaf, listed) {
            (Some(_), true) => {
                return Err("`leaf`: a LEAF directory replaces `train` and `test`".into());
            }
            (None, _) if self.train.is_empty() => {
                return Err("`train`: no training clients".into());
            }
            _ => {}
        }
        self.check_clusters()
    }

    /// Cluster labels on every client or on none, each below `clusters`.
    fn check_clusters(&self) -> std::result::Result<(), String> {
        let all = || self.train.iter().map(|c| ("train", c)).enumerate();
        let labelled = self
            .train
            .iter()
            .chain(&self.test)
            .any(|c| c.cluster.is_some());
        let clients = all().chain(self.test.iter().map(|c| ("test", c)).enumerate());
        for (i, (split, c)) in clients {
            match (c.cluster, labelled, self.clusters) {
                (None, true, _) => {
                    return Err(format!(
                        "`{split}[{i}].cluster`: some clients have a true cluster; every \
                         training and test client needs one (or none)"
                    ));
                }
                (Some(k), _, Some(clusters)) if k >= clusters => {
                    return Err(format!(
                        "`{split}[{i}].cluster`: {k} is not below `clusters` = {clusters}"
                    ));
                }
                (Some(k), _, None) if k >= MAX_CLUSTERS => {
                    return Err(format!(
                        "`{split}[{i}].cluster`: {k} is above the limit of {MAX_CLUSTERS}"
                    ));
                }
                _ => {}
            }
        }
        if !labelled && (self.clusters.is_some() || self.truth_params.is_some()) {
            return Err("`clusters` / `truth_params` without a true cluster per client".into());
        }
        Ok(())
    }

    /// The task, with its classes.
    pub fn task(&self) -> Task {
        match self.task {
            TaskName::Regression => Task::Regression,
            TaskName::Classification => Task::Classification {
                classes: self.classes.unwrap_or(0),
            },
        }
    }

    /// What a model sees of one sample (`None`: a LEAF directory that
    /// declares no shape, taken from its files).
    pub fn input(&self) -> Option<Input> {
        let task = self.task();
        match (self.features, self.image) {
            (_, Some(i)) => Some(Input::images(
                ImageShape {
                    height: i.height,
                    width: i.width,
                    channels: i.channels,
                },
                task,
            )),
            (Some(dim), None) => Some(Input {
                dim,
                image: None,
                task,
            }),
            (None, None) => None,
        }
    }

    /// The true clusters, when the clients have them.
    pub fn true_clusters(&self) -> Option<usize> {
        let labels = self
            .train
            .iter()
            .chain(&self.test)
            .filter_map(|c| c.cluster);
        let derived = labels.max().map(|k| k + 1)?;
        Some(self.clusters.unwrap_or(derived))
    }
}
