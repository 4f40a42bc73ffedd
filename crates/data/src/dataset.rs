//! In-memory federated data sets: one [`ClientData`] per training client, one per
//! held-out test client, and the [`GroundTruth`] (cluster labels, true
//! parameters) that only metrics may read.

pub use fedcluster_core::Task;
use fedcluster_core::{Batch, ImageShape, Input, Targets};

use crate::error::{DataError, Result};

/// Owned targets of a client: real values (regression) or class indices.
#[derive(Clone, Debug, PartialEq)]
pub enum TargetsOwned {
    /// One real target per sample.
    Real(Vec<f32>),
    /// One class index per sample.
    Class(Vec<u32>),
}

impl TargetsOwned {
    /// Number of targets.
    pub fn len(&self) -> usize {
        match self {
            Self::Real(y) => y.len(),
            Self::Class(y) => y.len(),
        }
    }

    /// Whether there are no targets.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// A borrowed view.
    pub fn as_targets(&self) -> Targets<'_> {
        match self {
            Self::Real(y) => Targets::Real(y),
            Self::Class(y) => Targets::Class(y),
        }
    }
}

/// The local data of one client: `n` rows of `dim` features, row-major, and `n`
/// targets. The feature count is stored once, in [`FederatedData::dim`].
#[derive(Clone, Debug, PartialEq)]
pub struct ClientData {
    /// Features, `n * dim` values, row-major.
    pub x: Vec<f32>,
    /// Targets, `n` of them.
    pub y: TargetsOwned,
}

impl ClientData {
    /// Number of samples.
    pub fn len(&self) -> usize {
        self.y.len()
    }

    /// Whether the client holds no samples.
    pub fn is_empty(&self) -> bool {
        self.y.is_empty()
    }

    /// A copy of `batch` (a client produced on demand, kept).
    pub fn copied(batch: Batch<'_>) -> Self {
        Self {
            x: batch.x.to_vec(),
            y: match batch.y {
                Targets::Real(y) => TargetsOwned::Real(y.to_vec()),
                Targets::Class(y) => TargetsOwned::Class(y.to_vec()),
            },
        }
    }

    /// A batch view of all samples. `dim` must be the data set's feature count
    /// (guaranteed for every client of a data set that passed
    /// [`FederatedData::validate`]).
    pub fn batch(&self, dim: usize) -> Batch<'_> {
        Batch {
            x: &self.x,
            y: self.y.as_targets(),
            dim,
        }
    }
}

/// What the data were generated from; read by metrics only, never by an algorithm.
///
/// Real federated data sets (LEAF's) have no known clusters: `clusters = 0`
/// and empty label lists ([`GroundTruth::unknown`]); the clustering metrics are
/// then not computed.
#[derive(Clone, Debug, PartialEq)]
pub struct GroundTruth {
    /// Number of true clusters; 0 when unknown.
    pub clusters: usize,
    /// True cluster of each training client.
    pub train_labels: Vec<usize>,
    /// True cluster of each test client.
    pub test_labels: Vec<usize>,
    /// True parameters of each cluster, where the data set has them (synthetic
    /// data); all of the same length.
    pub params: Option<Vec<Vec<f32>>>,
}

/// A federated data set: training clients, held-out test clients and the truth.
///
/// `train[i]` is client `i`; `test[i]` is a test client whose true cluster is
/// `truth.test_labels[i]`.
#[derive(Clone, Debug, PartialEq)]
pub struct FederatedData {
    /// Short name for reports.
    pub name: String,
    /// Number of features per sample.
    pub dim: usize,
    /// What the targets mean.
    pub task: Task,
    /// The features' image shape, when the samples are images (see
    /// [`fedcluster_core::Input`]).
    pub image: Option<ImageShape>,
    /// Training data, one entry per client.
    pub train: Vec<ClientData>,
    /// Held-out test clients.
    pub test: Vec<ClientData>,
    /// Ground truth, for metrics only.
    pub truth: GroundTruth,
}

impl GroundTruth {
    /// No known cluster structure.
    pub fn unknown() -> Self {
        Self {
            clusters: 0,
            train_labels: Vec::new(),
            test_labels: Vec::new(),
            params: None,
        }
    }

    /// Whether the clusters are known.
    pub fn is_known(&self) -> bool {
        self.clusters > 0
    }
}

impl FederatedData {
    /// Checks that every part fits together: `dim > 0`; at least one training
    /// client and none empty (test clients may be empty); every client's
    /// features hold `len * dim` finite values; targets match the task (real and
    /// finite for regression, class indices below `classes` for classification);
    /// one label per client, each below `truth.clusters`, or no labels and no
    /// parameters when the truth is unknown; true parameters, if any, one
    /// finite vector per cluster, all of the same non-zero length.
    /// The error names the first offending field.
    pub fn validate(&self) -> Result<()> {
        if self.dim == 0 {
            return Err(DataError::invalid("dim", "must be at least 1"));
        }
        if let Some(shape) = self.image
            && Input::images(shape, self.task).dim != self.dim
        {
            return Err(DataError::invalid(
                "image",
                format!(
                    "{}x{}x{} images are not {} features",
                    shape.height, shape.width, shape.channels, self.dim
                ),
            ));
        }
        if let Task::Classification { classes } = self.task
            && classes == 0
        {
            return Err(DataError::invalid("task.classes", "must be at least 1"));
        }
        if self.train.is_empty() {
            return Err(DataError::invalid("train", "no training clients"));
        }
        for (i, c) in self.train.iter().enumerate() {
            if c.is_empty() {
                return Err(DataError::invalid(format!("train[{i}]"), "no samples"));
            }
            self.check_client("train", i, c)?;
        }
        for (i, c) in self.test.iter().enumerate() {
            self.check_client("test", i, c)?;
        }
        let truth = &self.truth;
        if !truth.is_known() {
            if !truth.train_labels.is_empty() || !truth.test_labels.is_empty() {
                return Err(DataError::invalid(
                    "truth.clusters",
                    "0 (unknown clusters) with cluster labels",
                ));
            }
            if truth.params.is_some() {
                return Err(DataError::invalid(
                    "truth.params",
                    "true parameters without known clusters",
                ));
            }
            return Ok(());
        }
        check_labels(
            "truth.train_labels",
            &truth.train_labels,
            self.train.len(),
            truth.clusters,
        )?;
        check_labels(
            "truth.test_labels",
            &truth.test_labels,
            self.test.len(),
            truth.clusters,
        )?;
        if let Some(params) = &truth.params {
            check_params(params, truth.clusters)?;
        }
        Ok(())
    }

    fn check_client(&self, split: &str, i: usize, c: &ClientData) -> Result<()> {
        let n = c.len();
        let expected = n.checked_mul(self.dim);
        if expected != Some(c.x.len()) {
            return Err(DataError::invalid(
                format!("{split}[{i}].x"),
                format!(
                    "{} feature values for {n} samples of dim {}",
                    c.x.len(),
                    self.dim
                ),
            ));
        }
        if let Some(j) = c.x.iter().position(|v| !v.is_finite()) {
            return Err(DataError::invalid(
                format!("{split}[{i}].x"),
                format!("non-finite feature value at position {j}"),
            ));
        }
        let field = || format!("{split}[{i}].y");
        match (&c.y, self.task) {
            (TargetsOwned::Real(y), Task::Regression) => {
                if let Some(j) = y.iter().position(|v| !v.is_finite()) {
                    return Err(DataError::invalid(
                        field(),
                        format!("non-finite target at position {j}"),
                    ));
                }
            }
            (TargetsOwned::Class(y), Task::Classification { classes }) => {
                if let Some(j) = y.iter().position(|v| *v as usize >= classes) {
                    return Err(DataError::invalid(
                        field(),
                        format!("class {} at position {j} is not below {classes}", y[j]),
                    ));
                }
            }
            (TargetsOwned::Real(_), Task::Classification { .. }) => {
                return Err(DataError::invalid(
                    field(),
                    "real targets in a classification task",
                ));
            }
            (TargetsOwned::Class(_), Task::Regression) => {
                return Err(DataError::invalid(
                    field(),
                    "class targets in a regression task",
                ));
            }
        }
        Ok(())
    }
}

fn check_labels(field: &str, labels: &[usize], clients: usize, clusters: usize) -> Result<()> {
    if labels.len() != clients {
        return Err(DataError::invalid(
            field,
            format!("{} labels for {clients} clients", labels.len()),
        ));
    }
    if let Some(i) = labels.iter().position(|l| *l >= clusters) {
        return Err(DataError::invalid(
            format!("{field}[{i}]"),
            format!("cluster {} is not below {clusters}", labels[i]),
        ));
    }
    Ok(())
}

fn check_params(params: &[Vec<f32>], clusters: usize) -> Result<()> {
    if params.len() != clusters {
        return Err(DataError::invalid(
            "truth.params",
            format!("{} vectors for {clusters} clusters", params.len()),
        ));
    }
    let len = params[0].len();
    for (j, p) in params.iter().enumerate() {
        if p.is_empty() || p.len() != len {
            return Err(DataError::invalid(
                format!("truth.params[{j}]"),
                format!(
                    "length {} (first vector has {len}; must be equal and non-zero)",
                    p.len()
                ),
            ));
        }
        if !p.iter().all(|v| v.is_finite()) {
            return Err(DataError::invalid(
                format!("truth.params[{j}]"),
                "non-finite value",
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn small() -> FederatedData {
        let client = |v: f32| ClientData {
            x: vec![v; 4],
            y: TargetsOwned::Real(vec![v; 2]),
        };
        FederatedData {
            name: "toy".into(),
            dim: 2,
            task: Task::Regression,
            image: None,
            train: vec![client(1.0), client(2.0)],
            test: vec![client(3.0)],
            truth: GroundTruth {
                clusters: 2,
                train_labels: vec![0, 1],
                test_labels: vec![1],
                params: Some(vec![vec![0.0, 1.0], vec![1.0, 0.0]]),
            },
        }
    }

    fn field_of(d: &FederatedData) -> String {
        d.validate().unwrap_err().field().to_string()
    }

    #[test]
    fn valid_data_passes_and_batches_view_all_rows() {
        let d = small();
        assert_eq!(d.validate(), Ok(()));
        let b = d.train[1].batch(d.dim);
        assert_eq!(b.len(), 2);
        assert_eq!(b.x, &[2.0; 4]);
        assert_eq!(d.train[0].len(), 2);
        assert!(!d.train[0].is_empty());
    }

    #[test]
    fn validate_names_the_offending_field() {
        let mut d = small();
        d.train[1].x.pop();
        assert_eq!(field_of(&d), "train[1].x");

        let mut d = small();
        d.test[0].y = TargetsOwned::Class(vec![0, 0]);
        assert_eq!(field_of(&d), "test[0].y");

        let mut d = small();
        d.truth.train_labels[1] = 2;
        assert_eq!(field_of(&d), "truth.train_labels[1]");

        let mut d = small();
        d.truth.test_labels.clear();
        assert_eq!(field_of(&d), "truth.test_labels");

        let mut d = small();
        d.truth.params = Some(vec![vec![0.0, 1.0]]);
        assert_eq!(field_of(&d), "truth.params");

        let mut d = small();
        d.truth.params = Some(vec![vec![0.0, 1.0], vec![f32::NAN, 0.0]]);
        assert_eq!(field_of(&d), "truth.params[1]");

        let mut d = small();
        d.train[0] = ClientData {
            x: vec![],
            y: TargetsOwned::Real(vec![]),
        };
        assert_eq!(field_of(&d), "train[0]");

        let mut d = small();
        d.dim = 0;
        assert_eq!(field_of(&d), "dim");

        let mut d = small();
        d.truth.clusters = 0;
        assert_eq!(field_of(&d), "truth.clusters");
        d.truth = GroundTruth {
            params: Some(vec![vec![1.0]]),
            ..GroundTruth::unknown()
        };
        assert_eq!(field_of(&d), "truth.params");
        d.truth = GroundTruth::unknown();
        assert_eq!(d.validate(), Ok(()));

        let mut d = small();
        d.train[0].x[3] = f32::INFINITY;
        assert_eq!(field_of(&d), "train[0].x");
    }

    #[test]
    fn classification_targets_are_range_checked() {
        let mut d = small();
        d.task = Task::Classification { classes: 3 };
        for c in d.train.iter_mut().chain(d.test.iter_mut()) {
            c.y = TargetsOwned::Class(vec![0, 2]);
        }
        assert_eq!(d.validate(), Ok(()));
        d.train[0].y = TargetsOwned::Class(vec![0, 3]);
        assert_eq!(field_of(&d), "train[0].y");
        d.task = Task::Classification { classes: 0 };
        assert_eq!(field_of(&d), "task.classes");
    }
}
