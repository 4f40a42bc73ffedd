//! CIFAR's rows of the data-set table: `kind = "cifar10"`, `kind =
//! "cifar100"` (the 100 fine classes) and `kind = "cifar100-coarse"` (the 20
//! superclasses), each an [`crate::images::ImageClustersSpec`] partition of the binary
//! version (rotated CIFAR-10 of IFCA, Table I: `transforms = ["identity",
//! "rotate180"]`, 200 clients of 500 images), its training clients
//! transformed on demand, the images held once.

use super::{Cifar100Labels, load_cifar10, load_cifar100};
use crate::images::kind::image_kind;
use crate::table::Files;

/// Training images of the real CIFAR-10 and CIFAR-100.
pub const CIFAR_TRAIN_IMAGES: usize = 50_000;
/// Test images of the real CIFAR-10 and CIFAR-100.
pub const CIFAR_TEST_IMAGES: usize = 10_000;

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

const SIZES: (usize, usize) = (CIFAR_TRAIN_IMAGES, CIFAR_TEST_IMAGES);

image_kind!(
    /// `kind = "cifar10"`: an [`ImageClustersSpec`](crate::images::ImageClustersSpec) partition of CIFAR-10.
    Cifar10, "cifar10", CIFAR10_FILES, SIZES, load_cifar10
);
image_kind!(
    /// `kind = "cifar100"`: the same of CIFAR-100, its 100 fine classes.
    Cifar100, "cifar100", CIFAR100_FILES, SIZES,
    |p| load_cifar100(p, Cifar100Labels::Fine)
);
image_kind!(
    /// `kind = "cifar100-coarse"`: the same of CIFAR-100, its 20 superclasses.
    Cifar100Coarse, "cifar100-coarse", CIFAR100_FILES, SIZES,
    |p| load_cifar100(p, Cifar100Labels::Coarse)
);
