//! MNIST's rows of the data-set table: `kind = "mnist"` (one cluster per
//! image transform) and `kind = "mnist-anchored"` (an anchor client per
//! cluster and many tiny clients), both read from the four IDX files.

use std::path::{Path, PathBuf};

use super::{MNIST_TEST_IMAGES, MNIST_TRAIN_IMAGES, MnistAnchoredSpec, load_mnist, mnist_anchored};
use crate::data_set::DataSet;
use crate::error::Result;
use crate::images::kind::image_kind;
use crate::table::{DataKind, Files, required_dir};

/// What both MNIST kinds read.
const MNIST_FILES: Files = Files {
    title: "MNIST",
    directory: "the directory of its IDX files",
    dir_name: "mnist",
    fetch: Some("mnist"),
};

/// The canonical MNIST's training and test images (Fashion-MNIST's too).
pub(crate) const MNIST_SIZES: (usize, usize) = (MNIST_TRAIN_IMAGES, MNIST_TEST_IMAGES);

image_kind!(
    /// `kind = "mnist"`: an [`ImageClustersSpec`](crate::images::ImageClustersSpec)
    /// partition of MNIST, its training clients transformed on demand.
    MnistClusters, "mnist", MNIST_FILES, MNIST_SIZES, load_mnist
);

/// `kind = "mnist-anchored"`: [`MnistAnchoredSpec`].
pub struct MnistAnchored;

impl DataKind for MnistAnchored {
    type Spec = MnistAnchoredSpec;

    const FILES: Option<Files> = Some(MNIST_FILES);

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
        let mnist = load_mnist(required_dir::<Self>(spec)?)?;
        mnist_anchored(&mnist, spec, seed).map(DataSet::Stored)
    }
}
