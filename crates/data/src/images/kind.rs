//! An image set's row of the data-set table, written once for every image
//! set ([`image_kind!`]: MNIST, Fashion-MNIST, CIFAR-10/100): its `[data]`
//! table is an [`ImageClustersSpec`] partition, its training clients
//! transformed on demand, and a joining process's own clients are their
//! training images alone ([`own_image_clients`]), without the test clients or
//! the other clients.

use fedcluster_core::{ClientId, Input};

use crate::dataset::Task;
use crate::error::Result;
use crate::images::{ImageClustersSpec, ImageSet, image_cluster_clients};
use crate::table::{Own, check_client_ids};

/// Clients `ids` of an image partition alone, their images transformed
/// (without building the test clients): a joining process's own clients.
pub fn own_image_clients(
    images: &ImageSet,
    spec: &ImageClustersSpec,
    seed: u64,
    ids: &[ClientId],
) -> Result<Own> {
    check_client_ids(ids, spec.clients)?;
    let clients = image_cluster_clients(images, spec, seed, ids)?;
    Ok(Own {
        input: Input::images(
            spec.image_shape(images.shape),
            Task::Classification {
                classes: images.classes,
            },
        ),
        num_clients: spec.clients,
        clients,
    })
}

/// Declares an image set's kind: `$kind` (a unit type, with `$doc`), whose
/// data sets are named `$prefix-...`, reading `$files` with `$load` (a path
/// to an [`ImageSet`]), checked against `$sizes` (training, test)
/// images: the real set's sizes.
macro_rules! image_kind {
    ($(#[$doc:meta])* $kind:ident, $prefix:literal, $files:expr, $sizes:expr, $load:expr) => {
        $(#[$doc])*
        pub struct $kind;

        impl $kind {
            fn load(path: &std::path::Path) -> $crate::Result<$crate::ImageSet> {
                $load(path)
            }
        }

        impl $crate::table::DataKind for $kind {
            type Spec = $crate::images::ImageClustersSpec;

            const FILES: Option<$crate::table::Files> = Some($files);

            fn validate(spec: &Self::Spec) -> $crate::Result<()> {
                spec.check_sizes($sizes.0, $sizes.1)
            }

            fn data_dir(spec: &Self::Spec) -> Option<&std::path::Path> {
                spec.data_dir.as_deref()
            }

            fn data_dir_mut(spec: &mut Self::Spec) -> Option<&mut Option<std::path::PathBuf>> {
                Some(&mut spec.data_dir)
            }

            fn build(spec: &Self::Spec, seed: u64) -> $crate::Result<$crate::DataSet> {
                let images = Self::load($crate::table::required_dir::<Self>(spec)?)?;
                $crate::images::ImageClustersData::new(images, spec, seed, $prefix)
                    .map(|d| $crate::DataSet::Images(Box::new(d)))
            }

            fn own_clients(
                spec: &Self::Spec,
                seed: u64,
                ids: &[fedcluster_core::ClientId],
            ) -> Option<$crate::Result<$crate::table::Own>> {
                let own = || {
                    let images = Self::load($crate::table::required_dir::<Self>(spec)?)?;
                    $crate::images::kind::own_image_clients(&images, spec, seed, ids)
                };
                Some(own())
            }
        }
    };
}
pub(crate) use image_kind;
