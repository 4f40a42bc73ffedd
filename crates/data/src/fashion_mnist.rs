//! Fashion-MNIST (Xiao, Rasul, Vollgraf 2017): Zalando's 28x28 grey images of
//! ten kinds of clothing, in MNIST's IDX format and sizes (60,000 training and
//! 10,000 test images), the set many clustered-FL papers use next to MNIST.
//! `kind = "fashion-mnist"` takes the same `[data]` table as `kind = "mnist"`
//! (an [`ImageClustersSpec`] partition), read by the MNIST reader.

use std::path::{Path, PathBuf};

use fedcluster_core::ClientId;

use crate::data_set::DataSet;
use crate::error::Result;
use crate::images::own::own_image_clients;
use crate::images::{ImageClustersData, ImageClustersSpec};
use crate::mnist::{MNIST_TEST_IMAGES, MNIST_TRAIN_IMAGES, load_mnist};
use crate::table::{DataKind, Files, Own, required_dir};

/// `kind = "fashion-mnist"`: an [`ImageClustersSpec`] partition of
/// Fashion-MNIST, its training clients transformed on demand.
pub struct FashionMnist;

impl DataKind for FashionMnist {
    type Spec = ImageClustersSpec;

    const FILES: Option<Files> = Some(Files {
        title: "Fashion-MNIST",
        directory: "the directory of its four IDX files (train-images-idx3-ubyte, ...)",
        dir_name: "fashion-mnist",
        fetch: Some("fashion-mnist"),
    });

    fn validate(spec: &Self::Spec) -> Result<()> {
        spec.check_sizes(MNIST_TRAIN_IMAGES, MNIST_TEST_IMAGES)
    }

    fn data_dir(spec: &Self::Spec) -> Option<&Path> {
        spec.data_dir.as_deref()
    }

    fn data_dir_mut(spec: &mut Self::Spec) -> Option<&mut Option<PathBuf>> {
        Some(&mut spec.data_dir)
    }

    fn build(spec: &Self::Spec, seed: u64) -> Result<DataSet> {
        let images = load_mnist(required_dir::<Self>(spec)?)?;
        ImageClustersData::new(images, spec, seed, "fashion-mnist")
            .map(|d| DataSet::Images(Box::new(d)))
    }

    fn own_clients(spec: &Self::Spec, seed: u64, ids: &[ClientId]) -> Option<Result<Own>> {
        let own = || own_image_clients(&load_mnist(required_dir::<Self>(spec)?)?, spec, seed, ids);
        Some(own())
    }
}
