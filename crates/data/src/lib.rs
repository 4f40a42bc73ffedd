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
//! - [`view`]: [`DataSet`] (stored or generated) and [`DataView`], the data
//!   as a run sees it: clients through [`fedcluster_core::Shards`], and the truth.
//! - [`labelled`]: synthetic classification tasks, [`synthetic_images`]
//!   (class prototypes relabelled per cluster) and [`synthetic_text`] (a Markov
//!   chain per cluster), for the image and text networks.
//! - [`leaf`]: LEAF's JSON format (read streaming, written) and LEAF
//!   Shakespeare from the Project Gutenberg plays ([`shakespeare`]).
//! - [`mnist`]: the MNIST reader [`load_mnist`] (IDX files, plain or gzipped),
//!   image [`Transform`]s, and [`mnist_clusters`], one cluster per transform
//!   (rotated MNIST of IFCA, Section VI-B; inverted MNIST of SR-FCA).
//!
//! Every random draw comes from a [`fedcluster_core::rng::stream`] keyed by what
//! it is for and by the client it belongs to, so a client's data do not depend on
//! how many other clients are generated or in which order.

pub mod dataset;
pub mod error;
pub mod labelled;
pub mod leaf;
pub mod mnist;
pub mod synthetic;
pub mod view;

pub use dataset::{ClientData, FederatedData, GroundTruth, TargetsOwned, Task};
pub use error::{DataError, Result};
pub use labelled::{SyntheticImagesSpec, SyntheticTextSpec, synthetic_images, synthetic_text};
pub use leaf::{ShakespeareSpec, shakespeare};
pub use mnist::{
    Mnist, MnistAnchoredSpec, MnistClustersData, MnistClustersSpec, Transform, load_mnist,
    mnist_anchored, mnist_cluster_clients, mnist_clusters,
};
pub use synthetic::on_demand::GeneratedData;
pub use synthetic::{
    ClientGroup, IfcaSyntheticSpec, MixedRegressionSpec, TruthScale, ifca_synthetic,
    ifca_synthetic_on_demand, mixed_regression, mixed_regression_on_demand,
};
pub use view::{DataSet, DataView, StoredClients};
