//! fedcluster-data: federated data sets held in memory.
//!
//! - [`dataset`]: [`FederatedData`], the per-client training and test data of a
//!   run plus the ground truth (cluster labels, true parameters) that only metrics
//!   may read, and its consistency check [`FederatedData::validate`].
//! - [`synthetic`]: deterministic generators of the synthetic experiments:
//!   [`ifca_synthetic`] (IFCA, Ghosh et al., Section VI-A) and
//!   [`mixed_regression`] (two-phase mixed linear regression, Section V).
//!   Their clients can also be generated on demand
//!   ([`synthetic::on_demand`]), for federations too large to store.
//! - [`view`]: [`DataView`], the data as a run sees it: clients through
//!   [`fedcluster_core::Shards`], and the truth; [`DataSet`] holds any kind of
//!   data set (stored, generated on demand, MNIST clusters) and gives its view.
//! - [`table`]: the data-set table: [`DataKind`], one per `[data] kind`, and
//!   the closed [`DataConfig`] enum declared from it one line per kind.
//! - [`labelled`]: synthetic classification tasks, [`synthetic_images`]
//!   (class prototypes relabelled per cluster) and [`synthetic_text`] (a Markov
//!   chain per cluster), for the image and text networks.
//! - [`leaf`]: LEAF's JSON format (read streaming, written) and LEAF
//!   Shakespeare from the Project Gutenberg plays ([`shakespeare`]).
//! - [`images`]: [`ImageSet`], the labelled image sets every image reader
//!   returns, the channel-aware [`Transform`]s, and
//!   [`images::clusters`]: one cluster per transform over any image set
//!   (rotated MNIST and CIFAR-10 of IFCA, inverted MNIST of SR-FCA), with
//!   concept shift and label-skew deals ([`LabelSkew`]).
//! - [`mnist`]: the MNIST reader [`load_mnist`] (IDX files, plain or
//!   gzipped) and MNIST's rows of the table.
//! - [`cifar`]: the CIFAR-10 and CIFAR-100 readers [`load_cifar10`] and
//!   [`load_cifar100`] (the binary version, from its directory or straight
//!   from its `.tar.gz`) as 32x32x3 [`ImageSet`]s, and writers of files in
//!   that format for tests and benchmarks.
//!
//! - [`files`]: a user's own federation on disk (`kind = "files"`):
//!   `federation.json` and per-client arrays in safetensors or `.npz`, or a
//!   LEAF directory of any task; read, and written from any data set.
//!
//! Every random draw comes from a [`fedcluster_core::rng::stream`] keyed by what
//! it is for and by the client it belongs to, so a client's data do not depend on
//! how many other clients are generated or in which order.

pub mod cifar;
mod data_set;
pub mod dataset;
pub mod error;
pub mod fashion_mnist;
pub mod files;
pub mod images;
pub mod labelled;
pub mod leaf;
pub mod mnist;
pub mod regular;
pub mod synthetic;
pub mod table;
pub mod view;

use table::data_table;

data_table! {
    IfcaSynthetic = "ifca-synthetic" in synthetic_kinds::IfcaSynthetic,
    MixedRegression = "mixed-regression" in synthetic_kinds::MixedRegression,
    Mnist = "mnist" in mnist_kinds::MnistClusters,
    MnistAnchored = "mnist-anchored" in mnist_kinds::MnistAnchored,
    SyntheticImages = "synthetic-images" in labelled::SyntheticImages,
    SyntheticText = "synthetic-text" in labelled::SyntheticText,
    Shakespeare = "shakespeare" in shakespeare_kind::Shakespeare,
    Femnist = "femnist" in femnist_kind::Femnist,
    FashionMnist = "fashion-mnist" in fashion_mnist::FashionMnist,
    Cifar10 = "cifar10" in cifar_kinds::Cifar10,
    Cifar100 = "cifar100" in cifar_kinds::Cifar100,
    Cifar100Coarse = "cifar100-coarse" in cifar_kinds::Cifar100Coarse,
    Files = "files" in files::FederationFiles,
}

use cifar::kinds as cifar_kinds;

use leaf::femnist as femnist_kind;
use leaf::shakespeare as shakespeare_kind;
use mnist::kinds as mnist_kinds;
use synthetic::kinds as synthetic_kinds;

pub use cifar::{Cifar, Cifar100Labels, load_cifar10, load_cifar100};
pub use data_set::DataSet;
pub use dataset::{ClientData, FederatedData, GroundTruth, TargetsOwned, Task};
pub use error::{DataError, Result};
pub use images::ImageSet;
pub use images::{
    ImageClustersData, ImageClustersSpec, LabelSkew, Transform, image_cluster_clients,
    image_clusters,
};
pub use labelled::{SyntheticImagesSpec, SyntheticTextSpec, synthetic_images, synthetic_text};
pub use leaf::{ShakespeareSpec, shakespeare};
pub use mnist::{Mnist, MnistAnchoredSpec, load_mnist, mnist_anchored};
pub use synthetic::on_demand::GeneratedData;
pub use synthetic::{
    ClientGroup, IfcaSyntheticSpec, MixedRegressionSpec, TruthScale, ifca_synthetic,
    ifca_synthetic_on_demand, mixed_regression, mixed_regression_on_demand,
};
pub use table::{DataKind, Files};
pub use view::{DataView, StoredClients};
