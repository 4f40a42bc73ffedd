//! Labelled image sets, whatever their source (MNIST's IDX files, CIFAR's
//! binary batches): [`ImageSet`], the one type their readers return and the
//! cluster partitions take, the channel-aware [`transform`]s that define
//! clusters over them, the [`clusters`] partitions themselves, and an image
//! set's row of the data-set table ([`kind`]).

pub mod clusters;
pub mod kind;
pub mod transform;

use fedcluster_core::ImageShape;

use crate::error::{DataError, Result};

pub use clusters::{
    ImageClustersData, ImageClustersSpec, LabelSkew, image_cluster_clients, image_clusters,
};
pub use transform::{Transform, downsample2x2, downsampled};

/// A labelled image set in memory: a training and a test split of images of
/// one `shape` (channels-last, row-major, values scaled to `[0, 1]`), one
/// class label in `0..classes` per image.
#[derive(Clone, Debug, PartialEq)]
pub struct ImageSet {
    /// Every image's shape.
    pub shape: ImageShape,
    /// Number of classes.
    pub classes: usize,
    /// Training images, `train_labels.len() * image_len()` values.
    pub train_images: Vec<f32>,
    /// Training labels, each below `classes`.
    pub train_labels: Vec<u32>,
    /// Test images, `test_labels.len() * image_len()` values.
    pub test_images: Vec<f32>,
    /// Test labels, each below `classes`.
    pub test_labels: Vec<u32>,
}

impl ImageSet {
    /// Values per image.
    pub fn image_len(&self) -> usize {
        self.shape.height * self.shape.width * self.shape.channels
    }

    /// Number of training images.
    pub fn train_len(&self) -> usize {
        self.train_labels.len()
    }

    /// Number of test images.
    pub fn test_len(&self) -> usize {
        self.test_labels.len()
    }

    /// Training image `i`, if there is one.
    pub fn train_image(&self, i: usize) -> Option<&[f32]> {
        image(&self.train_images, self.image_len(), i)
    }

    /// Test image `i`, if there is one.
    pub fn test_image(&self, i: usize) -> Option<&[f32]> {
        image(&self.test_images, self.image_len(), i)
    }

    /// Checks that the public fields fit together: each split holds whole
    /// images, one label per image, each label below `classes`. Errors name
    /// the field as `{what}.{field}` (`mnist.train_images`, ...).
    pub fn check(&self, what: &str) -> Result<()> {
        let len = self
            .shape
            .height
            .checked_mul(self.shape.width)
            .and_then(|p| p.checked_mul(self.shape.channels));
        for (split, images, labels) in [
            ("train", &self.train_images, &self.train_labels),
            ("test", &self.test_images, &self.test_labels),
        ] {
            if len.and_then(|l| l.checked_mul(labels.len())) != Some(images.len()) {
                let channels = match self.shape.channels {
                    1 => String::new(),
                    c => format!("x{c}"),
                };
                return Err(DataError::invalid(
                    format!("{what}.{split}_images"),
                    format!(
                        "{} values for {} images of {}x{}{channels}",
                        images.len(),
                        labels.len(),
                        self.shape.height,
                        self.shape.width,
                    ),
                ));
            }
            if let Some(i) = labels.iter().position(|l| *l as usize >= self.classes) {
                return Err(DataError::invalid(
                    format!("{what}.{split}_labels[{i}]"),
                    format!("{} is not one of the {} classes", labels[i], self.classes),
                ));
            }
        }
        Ok(())
    }
}

fn image(images: &[f32], len: usize, i: usize) -> Option<&[f32]> {
    images.get(i.checked_mul(len)?..i.checked_add(1)?.checked_mul(len)?)
}
