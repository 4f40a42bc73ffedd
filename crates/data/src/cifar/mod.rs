//! CIFAR-10 and CIFAR-100 (Krizhevsky 2009, "Learning Multiple Layers of
//! Features from Tiny Images"; <https://www.cs.toronto.edu/~kriz/cifar.html>),
//! read from their binary version into an [`ImageSet`] of 32x32 colour images.
//!
//! The binary version stores each image as one fixed-length record: its label
//! byte(s), then 3072 pixel bytes, the 32x32 red plane, then the green, then
//! the blue, each row-major ([`binary`]).
//!
//! | set | directory / archive | files (train, then test) | record |
//! | --- | --- | --- | --- |
//! | CIFAR-10 | `cifar-10-batches-bin/`, `cifar-10-binary.tar.gz` | `data_batch_1.bin`..`data_batch_5.bin`, `test_batch.bin` | label (0-9), 3072 pixels |
//! | CIFAR-100 | `cifar-100-binary/`, `cifar-100-binary.tar.gz` | `train.bin`, `test.bin` | coarse (0-19), fine (0-99), 3072 pixels |
//!
//! What is read: the training and test records, transposed to channels-last
//! (HWC, row-major) and scaled to `[0, 1]` (`byte / 255`); CIFAR-10's label,
//! or CIFAR-100's fine (100 classes) or coarse (20 classes) label, as the
//! caller chooses ([`Cifar100Labels`]). Class-name files, the readme and any
//! other member are ignored. The real files hold 10,000 records per CIFAR-10
//! batch and 50,000 / 10,000 for CIFAR-100; any whole number of records is
//! accepted.
//!
//! Where from ([`load_cifar10`], [`load_cifar100`]): a data directory holding
//! the extracted directory or the archive (the extracted directory is taken
//! when both are there), the extracted directory itself, or the archive
//! itself, streamed once without extracting it. The python version
//! (`cifar-10-batches-py/`, `cifar-10-python.tar.gz`, `cifar-100-python/`,
//! ..., numpy arrays pickled) is not read: finding only it is an error that
//! says which archive to get instead.
//!
//! Memory: records are decoded 256 at a time straight into the split's final
//! buffers, reserved once (exactly, for the real sets, whatever order an
//! archive holds its members in); a file's raw bytes are never held whole.
//!
//! Every error names the file (for an archive member, the archive and the
//! member): empty or truncated files, sizes that are not a whole number of
//! records, labels out of range (with the record's index), missing files or
//! members. Nothing is downloaded here; `fedcluster data fetch cifar10`
//! (resp. `cifar100`) does that.
//!
//! [`write_cifar10_batch`], [`write_cifar100_batch`] and [`write_cifar_set`]
//! write files in the exact format, for tests and benchmarks.
//!
//! License note: the data sets carry no explicit license; their page asks that
//! users cite Krizhevsky 2009.

use std::path::{Path, PathBuf};

use fedcluster_core::ImageShape;

use crate::error::{DataError, Result};
use crate::images::ImageSet;

mod archive;
pub mod binary;
mod fixture;
pub mod kinds;
mod split;

#[cfg(test)]
mod tests;

pub use binary::{
    CIFAR10_RECORD_BYTES, CIFAR100_RECORD_BYTES, MAX_FILE_BYTES, write_cifar10_batch,
    write_cifar100_batch,
};

/// Rows (and columns) of an image.
pub const IMAGE_SIDE: usize = 32;
/// Pixel bytes of a record: three planes of 32x32.
pub const IMAGE_BYTES: usize = 3 * IMAGE_SIDE * IMAGE_SIDE;
pub use fixture::{CifarRecords, SetForm, write_cifar_set};

/// Which of the two sets.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Cifar {
    /// CIFAR-10: 10 classes.
    Cifar10,
    /// CIFAR-100: 100 fine classes grouped in 20 coarse ones.
    Cifar100,
}

/// Which label of a CIFAR-100 record becomes the class.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Cifar100Labels {
    /// The fine label: 100 classes.
    #[default]
    Fine,
    /// The coarse label (the superclass): 20 classes.
    Coarse,
}

impl Cifar100Labels {
    /// Number of classes.
    pub fn classes(self) -> usize {
        match self {
            Self::Fine => 100,
            Self::Coarse => 20,
        }
    }
}

impl Cifar {
    /// Its name in messages.
    pub const fn title(self) -> &'static str {
        match self {
            Self::Cifar10 => "CIFAR-10",
            Self::Cifar100 => "CIFAR-100",
        }
    }

    /// The directory the binary archive extracts to.
    pub const fn bin_dir(self) -> &'static str {
        match self {
            Self::Cifar10 => "cifar-10-batches-bin",
            Self::Cifar100 => "cifar-100-binary",
        }
    }

    /// The binary version's archive.
    pub const fn archive(self) -> &'static str {
        match self {
            Self::Cifar10 => "cifar-10-binary.tar.gz",
            Self::Cifar100 => "cifar-100-binary.tar.gz",
        }
    }

    /// Where the binary version's archive is published.
    pub const fn url(self) -> &'static str {
        match self {
            Self::Cifar10 => "https://www.cs.toronto.edu/~kriz/cifar-10-binary.tar.gz",
            Self::Cifar100 => "https://www.cs.toronto.edu/~kriz/cifar-100-binary.tar.gz",
        }
    }

    /// The MD5 digest (hex) of [`Self::url`]'s archive, as published.
    pub const fn md5(self) -> &'static str {
        match self {
            Self::Cifar10 => "c32a1d4ab5d03f1284b67883e8d87530",
            Self::Cifar100 => "03b5dce01913d631647c71ecec9e9cb8",
        }
    }

    /// Its name for `fedcluster data fetch`.
    pub const fn fetch_name(self) -> &'static str {
        match self {
            Self::Cifar10 => "cifar10",
            Self::Cifar100 => "cifar100",
        }
    }

    /// The training files, in the order their records are read.
    pub fn train_files(self) -> &'static [&'static str] {
        match self {
            Self::Cifar10 => &[
                "data_batch_1.bin",
                "data_batch_2.bin",
                "data_batch_3.bin",
                "data_batch_4.bin",
                "data_batch_5.bin",
            ],
            Self::Cifar100 => &["train.bin"],
        }
    }

    /// The test file.
    pub fn test_file(self) -> &'static str {
        match self {
            Self::Cifar10 => "test_batch.bin",
            Self::Cifar100 => "test.bin",
        }
    }

    /// Bytes per record.
    pub fn record_bytes(self) -> usize {
        match self {
            Self::Cifar10 => CIFAR10_RECORD_BYTES,
            Self::Cifar100 => CIFAR100_RECORD_BYTES,
        }
    }

    /// The python version's directory and archive (not read).
    pub fn python_names(self) -> [&'static str; 2] {
        match self {
            Self::Cifar10 => ["cifar-10-batches-py", "cifar-10-python.tar.gz"],
            Self::Cifar100 => ["cifar-100-python", "cifar-100-python.tar.gz"],
        }
    }

    /// Files of the python version's directory that the binary version has
    /// not (how that directory is recognised when given itself).
    fn python_files(self) -> &'static [&'static str] {
        match self {
            Self::Cifar10 => &["data_batch_1", "test_batch", "batches.meta"],
            Self::Cifar100 => &["train", "test", "meta"],
        }
    }

    /// Every file the binary version must hold: the training files, then the
    /// test file.
    fn files(self) -> impl Iterator<Item = &'static str> {
        self.train_files().iter().copied().chain([self.test_file()])
    }
}

/// Reads CIFAR-10's binary version from `path` (see the [module](self)
/// docs for what `path` may be): 50,000 training and 10,000 test images of
/// 32x32x3 in the real set, 10 classes.
pub fn load_cifar10(path: &Path) -> Result<ImageSet> {
    load(path, Cifar::Cifar10, Cifar100Labels::Fine)
}

/// Reads CIFAR-100's binary version from `path` (see the [module](self)
/// docs for what `path` may be) with the `labels` asked for: 50,000 training
/// and 10,000 test images of 32x32x3 in the real set, 100 fine or 20 coarse
/// classes.
pub fn load_cifar100(path: &Path, labels: Cifar100Labels) -> Result<ImageSet> {
    load(path, Cifar::Cifar100, labels)
}

fn load(path: &Path, set: Cifar, labels: Cifar100Labels) -> Result<ImageSet> {
    let format = binary::RecordFormat::new(set, labels);
    let [train, test] = match locate(path, set)? {
        Source::Dir(dir) => binary::read_dir(&dir, set, format)?,
        Source::Archive(file) => archive::read_archive(&file, set, format)?,
    };
    Ok(ImageSet {
        shape: ImageShape {
            height: IMAGE_SIDE,
            width: IMAGE_SIDE,
            channels: 3,
        },
        classes: format.classes(),
        train_images: train.images,
        train_labels: train.labels,
        test_images: test.images,
        test_labels: test.labels,
    })
}

/// Where the binary files are.
#[derive(Debug, PartialEq, Eq)]
enum Source {
    /// The directory holding them, extracted.
    Dir(PathBuf),
    /// The archive holding them.
    Archive(PathBuf),
}

/// Finds the binary version of `set` at `path` (see the module docs).
fn locate(path: &Path, set: Cifar) -> Result<Source> {
    let meta = std::fs::metadata(path).map_err(|e| DataError::io(path, e))?;
    let [py_dir, py_archive] = set.python_names();
    if !meta.is_dir() {
        if path.file_name().is_some_and(|n| n == py_archive) {
            return Err(python_version(path, set));
        }
        return Ok(Source::Archive(path.to_path_buf()));
    }
    let bin = path.join(set.bin_dir());
    if bin.is_dir() {
        return Ok(Source::Dir(bin));
    }
    let archive = path.join(set.archive());
    if archive.is_file() {
        return Ok(Source::Archive(archive));
    }
    if path.file_name().is_some_and(|n| n == set.bin_dir())
        || set.files().any(|f| path.join(f).is_file())
    {
        return Ok(Source::Dir(path.to_path_buf()));
    }
    for python in [path.join(py_dir), path.join(py_archive)] {
        if python.exists() {
            return Err(python_version(&python, set));
        }
    }
    if path.file_name().is_some_and(|n| n == py_dir)
        || set.python_files().iter().all(|f| path.join(f).is_file())
    {
        return Err(python_version(path, set));
    }
    Err(DataError::format(
        path,
        format!(
            "no {} here: looked in this directory for the binary version \
             (`{}/` or `{}`, or its files {}) and the python version (`{py_dir}/` or \
             `{py_archive}`); `fedcluster data fetch {}` downloads the binary version",
            set.title(),
            set.bin_dir(),
            set.archive(),
            set.files().collect::<Vec<_>>().join(", "),
            set.fetch_name(),
        ),
    ))
}

/// The error for the python version of `set` found at `path`.
pub(crate) fn python_version(path: &Path, set: Cifar) -> DataError {
    DataError::format(
        path,
        format!(
            "this is the python version of {} (pickled numpy arrays), which is not read; \
             get the binary version {} (MD5 {}) instead, or run `fedcluster data fetch {}`, \
             which downloads it",
            set.title(),
            set.url(),
            set.md5(),
            set.fetch_name(),
        ),
    )
}
