//! CIFAR's rows of the data-set table: `kind = "cifar10"`, `kind =
//! "cifar100"` (the 100 fine classes) and `kind = "cifar100-coarse"` (the 20
//! superclasses), each an [`ImageClustersSpec`] partition of the binary
//! version (rotated CIFAR-10 of IFCA, Table I: `transforms = ["identity",
//! "rotate180"]`, 200 clients of 500 images), its training clients
//! transformed on demand, the images held once.

use std::path::{Path, PathBuf};

use fedcluster_core::ClientId;

use super::{Cifar100Labels, load_cifar10, load_cifar100};
use crate::data_set::DataSet;
use crate::error::Result;
use crate::images::own::own_image_clients;
use crate::images::{ImageClustersData, ImageClustersSpec, ImageSet};
use crate::table::{DataKind, Files, Own, required_dir};

/// Training images of the real CIFAR-10 and CIFAR-100.
pub const CIFAR_TRAIN_IMAGES: usize = 50_000;
/// Test images of the real CIFAR-10 and CIFAR-100.
pub const CIFAR_TEST_IMAGES: usize = 10_000;

/// Declares a CIFAR kind: its unit type, name prefix, files and reader.
macro_rules! cifar_kind {
    ($kind:ident, $prefix:literal, $files:expr, $load:expr) => {
        #[doc = concat!("`kind = \"", $prefix, "\"`: an [`ImageClustersSpec`] partition.")]
        pub struct $kind;

        impl $kind {
            fn load(path: &Path) -> Result<ImageSet> {
                $load(path)
            }
        }

        impl DataKind for $kind {
            type Spec = ImageClustersSpec;

            const FILES: Option<Files> = Some($files);

            fn validate(spec: &Self::Spec) -> Result<()> {
                spec.check_sizes(CIFAR_TRAIN_IMAGES, CIFAR_TEST_IMAGES)
            }

            fn data_dir(spec: &Self::Spec) -> Option<&Path> {
                spec.data_dir.as_deref()
            }

            fn data_dir_mut(spec: &mut Self::Spec) -> Option<&mut Option<PathBuf>> {
                Some(&mut spec.data_dir)
            }

            fn build(spec: &Self::Spec, seed: u64) -> Result<DataSet> {
                let images = Self::load(required_dir::<Self>(spec)?)?;
                ImageClustersData::new(images, spec, seed, $prefix)
                    .map(|d| DataSet::Images(Box::new(d)))
            }

            fn own_clients(spec: &Self::Spec, seed: u64, ids: &[ClientId]) -> Option<Result<Own>> {
                let own = || {
                    own_image_clients(&Self::load(required_dir::<Self>(spec)?)?, spec, seed, ids)
                };
                Some(own())
            }
        }
    };
}

const CIFAR10_FILES: Files = Files {
    title: "CIFAR-10",
    directory: "the directory of cifar-10-binary.tar.gz or of its extracted cifar-10-batches-bin/",
    dir_name: "cifar10",
    fetch: Some("cifar10"),
};

const CIFAR100_FILES: Files = Files {
    title: "CIFAR-100",
    directory: "the directory of cifar-100-binary.tar.gz or of its extracted cifar-100-binary/",
    dir_name: "cifar100",
    fetch: Some("cifar100"),
};

cifar_kind!(Cifar10, "cifar10", CIFAR10_FILES, load_cifar10);
cifar_kind!(Cifar100, "cifar100", CIFAR100_FILES, |p| load_cifar100(
    p,
    Cifar100Labels::Fine
));
cifar_kind!(Cifar100Coarse, "cifar100-coarse", CIFAR100_FILES, |p| {
    load_cifar100(p, Cifar100Labels::Coarse)
});
