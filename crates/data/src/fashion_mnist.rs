//! Fashion-MNIST (Xiao, Rasul, Vollgraf 2017): Zalando's 28x28 grey images of
//! ten kinds of clothing, in MNIST's IDX format and sizes (60,000 training and
//! 10,000 test images), the set many clustered-FL papers use next to MNIST.
//! `kind = "fashion-mnist"` takes the same `[data]` table as `kind = "mnist"`
//! (an [`crate::images::ImageClustersSpec`] partition), read by the MNIST reader.

use crate::images::kind::image_kind;
use crate::mnist::kinds::MNIST_SIZES;
use crate::mnist::load_mnist;
use crate::table::Files;

/// What `kind = "fashion-mnist"` reads.
const FASHION_MNIST_FILES: Files = Files {
    title: "Fashion-MNIST",
    directory: "the directory of its four IDX files (train-images-idx3-ubyte, ...)",
    dir_name: "fashion-mnist",
    fetch: Some("fashion-mnist"),
};

image_kind!(
    /// `kind = "fashion-mnist"`: an [`ImageClustersSpec`](crate::images::ImageClustersSpec)
    /// partition of Fashion-MNIST, its training clients transformed on demand.
    FashionMnist, "fashion-mnist", FASHION_MNIST_FILES, MNIST_SIZES, load_mnist
);
