//! A joining process's own clients of an image partition: their training
//! images alone, transformed, without the test clients or the other clients.

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
