//! Fashion-MNIST (Xiao, Rasul, Vollgraf 2017): Zalando's 28x28 grey images of
//! ten kinds of clothing, in MNIST's IDX format and sizes (60,000 training and
//! 10,000 test images), the set many clustered-FL papers use next to MNIST.
//! `kind = "fashion-mnist"` takes the same `[data]` table as `kind = "mnist"`
//! (one cluster per image transform), read by the MNIST reader.

use std::path::Path;

use crate::data_set::DataSet;
use crate::error::Result;
use crate::mnist::{MnistClustersData, MnistClustersSpec, load_mnist};
use crate::table::{DataKind, Files, required_dir};

/// `kind = "fashion-mnist"`: a [`MnistClustersSpec`] partition of
/// Fashion-MNIST, its training clients transformed on demand.
pub struct FashionMnist;

impl DataKind for FashionMnist {
    type Spec = MnistClustersSpec;

    const FILES: Option<Files> = Some(Files {
        title: "Fashion-MNIST",
        directory: "the directory of its four IDX files (train-images-idx3-ubyte, ...)",
        dir_name: "fashion-mnist",
    });

    fn validate(spec: &Self::Spec) -> Result<()> {
        spec.validate()
    }

    fn data_dir(spec: &Self::Spec) -> Option<&Path> {
        spec.data_dir.as_deref()
    }

    fn build(spec: &Self::Spec, seed: u64) -> Result<DataSet> {
        let images = load_mnist(required_dir::<Self>(spec)?)?;
        let data = MnistClustersData::new(images, spec, seed)?;
        Ok(DataSet::Mnist(
            data.with_name(format!("fashion-{}", spec.name())),
        ))
    }
}
