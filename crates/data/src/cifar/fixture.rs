//! Writing whole binary CIFAR sets in the exact published layout, for tests
//! and benchmarks (the CLI's end-to-end tests, the fetch tests, a memory
//! benchmark): [`CifarRecords`] (one file's records, made up or given) and
//! [`write_cifar_set`] (every file of a set, as the extracted directory or
//! as the `.tar.gz` archive).

use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use flate2::Compression;
use flate2::write::GzEncoder;

use super::Cifar;
use super::IMAGE_BYTES;
use super::binary::{PLANE, record_bytes};
use crate::error::{DataError, Result};

/// The records of one CIFAR file, as the file stores them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CifarRecords {
    /// One class per record: CIFAR-10's label, or CIFAR-100's fine label.
    pub labels: Vec<u8>,
    /// CIFAR-100's coarse label of each record; empty for CIFAR-10.
    pub coarse: Vec<u8>,
    /// 3072 bytes per record: the red, green and blue planes, each 32x32
    /// row-major.
    pub images_chw: Vec<u8>,
}

impl CifarRecords {
    /// `count` made-up records of `set`, a function of `seed` alone: record
    /// `i`'s label is `(i + seed) % 10` (CIFAR-10) or fine `(i + seed) % 100`
    /// with coarse `fine / 5` (CIFAR-100; not the real grouping), its pixels
    /// pseudo-random bytes.
    pub fn synthetic(set: Cifar, count: usize, seed: u64) -> Self {
        let classes = match set {
            Cifar::Cifar10 => 10,
            Cifar::Cifar100 => 100,
        };
        let labels: Vec<u8> = (0..count)
            .map(|i| ((i as u64).wrapping_add(seed) % classes) as u8)
            .collect();
        let coarse = match set {
            Cifar::Cifar10 => Vec::new(),
            Cifar::Cifar100 => labels.iter().map(|f| f / 5).collect(),
        };
        let mut state = seed ^ 0x5eed_c1fa_0000_0000;
        let mut images_chw = Vec::with_capacity(count * IMAGE_BYTES);
        while images_chw.len() < count * IMAGE_BYTES {
            let word = splitmix64(&mut state).to_le_bytes();
            let take = (count * IMAGE_BYTES - images_chw.len()).min(word.len());
            images_chw.extend_from_slice(&word[..take]);
        }
        Self {
            labels,
            coarse,
            images_chw,
        }
    }

    /// The synthetic records of every file of `set` (training files, then
    /// the test file), `count` in each, file `i` seeded with `i`: what
    /// [`write_cifar_set`] writes from them.
    pub fn synthetic_set(set: Cifar, count: usize) -> Vec<Self> {
        (0..set.files().count())
            .map(|i| Self::synthetic(set, count, i as u64))
            .collect()
    }

    /// Number of records.
    pub fn len(&self) -> usize {
        self.labels.len()
    }

    /// Whether there are no records.
    pub fn is_empty(&self) -> bool {
        self.labels.is_empty()
    }

    /// The images as a reader returns them: channels-last, scaled to `[0, 1]`.
    pub fn images_hwc(&self) -> Vec<f32> {
        let mut out = Vec::with_capacity(self.images_chw.len());
        for image in self.images_chw.chunks_exact(IMAGE_BYTES) {
            for p in 0..PLANE {
                out.extend((0..3).map(|c| f32::from(image[c * PLANE + p]) / 255.0));
            }
        }
        out
    }

    /// The file's bytes in `set`'s record format. Fails if the lists do not
    /// fit together (CIFAR-100 needs a coarse label per record).
    pub fn to_bytes(&self, set: Cifar) -> Result<Vec<u8>> {
        match set {
            Cifar::Cifar10 => record_bytes(&[&self.labels], &self.images_chw),
            Cifar::Cifar100 => record_bytes(&[&self.coarse, &self.labels], &self.images_chw),
        }
    }
}

/// How [`write_cifar_set`] lays a set out.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SetForm {
    /// The extracted directory, `<root>/cifar-10-batches-bin/`.
    Directory,
    /// The archive, `<root>/cifar-10-binary.tar.gz`.
    Archive,
}

/// Writes the binary version of `set` under `root` in `form`: its training
/// files then its test file hold `files` in this order (as
/// [`CifarRecords::synthetic_set`] gives them), beside CIFAR-10's
/// `batches.meta.txt` (the class names); the archive also holds the
/// directory's own entry, as the published one does. Returns the path of the
/// directory or archive written. Fails if `files` is not one per file of the
/// set, or on an IO error.
pub fn write_cifar_set(
    root: &Path,
    set: Cifar,
    form: SetForm,
    files: &[CifarRecords],
) -> Result<PathBuf> {
    let names: Vec<&str> = set.files().collect();
    if files.len() != names.len() {
        return Err(DataError::invalid(
            "files",
            format!(
                "{} record lists for the {} files of {}",
                files.len(),
                names.len(),
                set.title()
            ),
        ));
    }
    let mut members: Vec<(&str, Vec<u8>)> = Vec::new();
    for (name, records) in names.iter().zip(files) {
        members.push((name, records.to_bytes(set)?));
    }
    if set == Cifar::Cifar10 {
        members.push(("batches.meta.txt", CIFAR10_CLASSES.join("\n").into_bytes()));
    }
    match form {
        SetForm::Directory => {
            let dir = root.join(set.bin_dir());
            std::fs::create_dir_all(&dir).map_err(|e| DataError::io(&dir, e))?;
            for (name, bytes) in members {
                let path = dir.join(name);
                std::fs::write(&path, bytes).map_err(|e| DataError::io(&path, e))?;
            }
            Ok(dir)
        }
        SetForm::Archive => {
            let path = root.join(set.archive());
            let dir = set.bin_dir();
            let members: Vec<(String, &[u8])> = members
                .iter()
                .map(|(name, bytes)| (format!("{dir}/{name}"), bytes.as_slice()))
                .collect();
            write_tar_gz(&path, &[dir], &members).map_err(|e| DataError::io(&path, e))?;
            Ok(path)
        }
    }
}

/// CIFAR-10's class names, in label order (its `batches.meta.txt`).
const CIFAR10_CLASSES: [&str; 10] = [
    "airplane",
    "automobile",
    "bird",
    "cat",
    "deer",
    "dog",
    "frog",
    "horse",
    "ship",
    "truck",
];

/// Writes a `.tar.gz` at `path` holding the directories `dirs`, then the
/// files `members` (full member names, in this order).
pub(crate) fn write_tar_gz(
    path: &Path,
    dirs: &[&str],
    members: &[(String, &[u8])],
) -> std::io::Result<()> {
    let file = std::fs::File::create(path)?;
    let gz = GzEncoder::new(BufWriter::new(file), Compression::fast());
    let mut tar = tar::Builder::new(gz);
    for dir in dirs {
        let mut header = tar::Header::new_gnu();
        header.set_entry_type(tar::EntryType::Directory);
        header.set_mode(0o755);
        header.set_size(0);
        header.set_mtime(0);
        header.set_cksum();
        tar.append_data(&mut header, format!("{dir}/"), std::io::empty())?;
    }
    for (name, bytes) in members {
        let mut header = tar::Header::new_gnu();
        header.set_entry_type(tar::EntryType::Regular);
        header.set_mode(0o644);
        header.set_size(bytes.len() as u64);
        header.set_mtime(0);
        header.set_cksum();
        tar.append_data(&mut header, name, *bytes)?;
    }
    tar.into_inner()?.finish()?.flush()
}

/// The next value of a SplitMix64 stream (Steele, Lea, Flood 2014).
fn splitmix64(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}
