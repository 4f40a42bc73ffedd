//! MNIST (LeCun, Cortes, Burges): the reader and the MNIST rows of the
//! data-set table.
//!
//! - [`idx`]: the IDX file format, plain or gzipped.
//! - [`load_mnist`]: the four canonical files of a directory, as [`Mnist`]
//!   with pixels scaled to `[0, 1]`. ([`Mnist`] is an [`ImageSet`]: the
//!   cluster partitions of [`crate::images::clusters`] take it, e.g. rotated
//!   MNIST (IFCA, Ghosh et al., Section VI-B) or inverted MNIST (SR-FCA).)
//! - [`anchored`]: an anchor client per cluster and many tiny clients.
//! - [`kinds`]: `kind = "mnist"` and `kind = "mnist-anchored"`.
//!
//! Nothing is downloaded: the files come from a directory the user gives.

use std::path::{Path, PathBuf};

use fedcluster_core::ImageShape;

use crate::error::{DataError, Result};

pub mod anchored;
pub mod idx;
pub mod kinds;

#[cfg(test)]
pub(crate) mod tests;

use crate::images::ImageSet;
pub use crate::images::{Transform, downsample2x2};
pub use anchored::{MnistAnchoredSpec, mnist_anchored};

/// Name of the training images file (without `.gz`).
pub const TRAIN_IMAGES_FILE: &str = "train-images-idx3-ubyte";
/// Name of the training labels file (without `.gz`).
pub const TRAIN_LABELS_FILE: &str = "train-labels-idx1-ubyte";
/// Name of the test images file (without `.gz`).
pub const TEST_IMAGES_FILE: &str = "t10k-images-idx3-ubyte";
/// Name of the test labels file (without `.gz`).
pub const TEST_LABELS_FILE: &str = "t10k-labels-idx1-ubyte";
/// Number of training images of the canonical MNIST.
pub const MNIST_TRAIN_IMAGES: usize = 60_000;
/// Number of test images of the canonical MNIST.
pub const MNIST_TEST_IMAGES: usize = 10_000;
/// Number of classes (digits).
pub const MNIST_CLASSES: usize = 10;

/// MNIST in memory: an [`ImageSet`] of 28x28 grey images and 10 classes (the
/// shape the files declare).
pub type Mnist = ImageSet;

/// Reads MNIST from the four canonical IDX files in `dir`:
/// `train-images-idx3-ubyte`, `train-labels-idx1-ubyte`,
/// `t10k-images-idx3-ubyte` and `t10k-labels-idx1-ubyte`, each under its own
/// name or with `.gz` appended (the plain file is taken when both exist;
/// compression is detected from the content, not the name).
///
/// Fails with an error that starts with the path of the file concerned if a
/// file is missing, unreadable or malformed (see [`idx`]), if a labels file
/// does not hold one label per image of its images file, or if the test
/// images are not the size of the training images.
pub fn load_mnist(dir: &Path) -> Result<Mnist> {
    std::fs::read_dir(dir).map_err(|e| DataError::io(dir, e))?;
    let train_images_path = find(dir, TRAIN_IMAGES_FILE)?;
    let train_labels_path = find(dir, TRAIN_LABELS_FILE)?;
    let test_images_path = find(dir, TEST_IMAGES_FILE)?;
    let test_labels_path = find(dir, TEST_LABELS_FILE)?;

    let train = idx::read_images(&train_images_path)?;
    let train_labels = idx::read_labels(&train_labels_path)?;
    same_count(
        &train_images_path,
        train.count,
        &train_labels_path,
        &train_labels,
    )?;
    let test = idx::read_images(&test_images_path)?;
    let test_labels = idx::read_labels(&test_labels_path)?;
    same_count(
        &test_images_path,
        test.count,
        &test_labels_path,
        &test_labels,
    )?;
    if (test.rows, test.cols) != (train.rows, train.cols) {
        return Err(DataError::format(
            &test_images_path,
            format!(
                "images are {}x{} but those of {} are {}x{}",
                test.rows,
                test.cols,
                train_images_path.display(),
                train.rows,
                train.cols
            ),
        ));
    }
    Ok(ImageSet {
        shape: ImageShape {
            height: train.rows,
            width: train.cols,
            channels: 1,
        },
        classes: MNIST_CLASSES,
        train_images: scale(&train.pixels),
        train_labels,
        test_images: scale(&test.pixels),
        test_labels,
    })
}

/// `dir/name` if it is a file, else `dir/name.gz` if that is one.
fn find(dir: &Path, name: &str) -> Result<PathBuf> {
    let plain = dir.join(name);
    if plain.is_file() {
        return Ok(plain);
    }
    let gz = dir.join(format!("{name}.gz"));
    if gz.is_file() {
        return Ok(gz);
    }
    Err(DataError::Missing {
        dir: dir.to_path_buf(),
        name: name.to_owned(),
    })
}

fn same_count(images: &Path, count: usize, labels_path: &Path, labels: &[u32]) -> Result<()> {
    if count == labels.len() {
        return Ok(());
    }
    Err(DataError::format(
        labels_path,
        format!(
            "{} labels but {} holds {count} images",
            labels.len(),
            images.display()
        ),
    ))
}

/// Pixel bytes scaled to `[0, 1]`.
fn scale(pixels: &[u8]) -> Vec<f32> {
    pixels.iter().map(|p| f32::from(*p) / 255.0).collect()
}
