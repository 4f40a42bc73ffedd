//! MNIST's rows of the data-set table: `kind = "mnist"` (one cluster per
//! image transform) and `kind = "mnist-anchored"` (an anchor client per
//! cluster and many tiny clients), both read from the four IDX files.

use std::path::Path;

use fedcluster_core::{ClientId, Input};

use super::{
    MnistAnchoredSpec, MnistClustersData, MnistClustersSpec, load_mnist, mnist_anchored,
    mnist_cluster_clients,
};
use crate::data_set::DataSet;
use crate::dataset::Task;
use crate::error::Result;
use crate::table::{DataKind, Files, Own, check_client_ids, required_dir};

/// What both MNIST kinds read.
const MNIST_FILES: Files = Files {
    title: "MNIST",
    directory: "the directory of its IDX files",
    dir_name: "mnist",
};

/// `kind = "mnist"`: [`MnistClustersSpec`], its training clients transformed
/// on demand.
pub struct MnistClusters;

impl DataKind for MnistClusters {
    type Spec = MnistClustersSpec;

    const FILES: Option<Files> = Some(MNIST_FILES);

    fn validate(spec: &Self::Spec) -> Result<()> {
        spec.validate()
    }

    fn data_dir(spec: &Self::Spec) -> Option<&Path> {
        spec.data_dir.as_deref()
    }

    fn build(spec: &Self::Spec, seed: u64) -> Result<DataSet> {
        let mnist = load_mnist(required_dir::<Self>(spec)?)?;
        MnistClustersData::new(mnist, spec, seed).map(DataSet::Mnist)
    }

    /// Transforms just the clients' images (not through
    /// [`MnistClustersData`], which would build the test clients too).
    fn own_clients(spec: &Self::Spec, seed: u64, ids: &[ClientId]) -> Option<Result<Own>> {
        let own = || -> Result<Own> {
            let mnist = load_mnist(required_dir::<Self>(spec)?)?;
            check_client_ids(ids, spec.clients)?;
            let clients = mnist_cluster_clients(&mnist, spec, seed, ids)?;
            let image = spec.image_shape(mnist.shape);
            Ok(Own {
                input: Input::images(
                    image,
                    Task::Classification {
                        classes: mnist.classes,
                    },
                ),
                num_clients: spec.clients,
                clients,
            })
        };
        Some(own())
    }
}

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

    fn build(spec: &Self::Spec, seed: u64) -> Result<DataSet> {
        let mnist = load_mnist(required_dir::<Self>(spec)?)?;
        mnist_anchored(&mnist, spec, seed).map(DataSet::Stored)
    }
}
