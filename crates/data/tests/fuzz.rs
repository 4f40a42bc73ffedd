//! Property-based fuzzing of the data readers (bounded: a fixed number of
//! cases each, a few seconds in all): random bytes and mutations of valid
//! files fed to the IDX reader (plain and gzipped), the LEAF JSON reader, the
//! FEMNIST data set built on it, and the CIFAR readers (batch files, their `.tar.gz` damaged inside or outside
//! the compression) must give a value or an error naming the file, never a
//! panic; what a reader accepts must be what the header (or the file's size)
//! declared. A federation directory (`kind = "files"`) with its manifest, a
//! client's arrays (safetensors or `.npz`) or its true parameters damaged
//! reads as a valid data set or an error naming a file in it.

use std::io::{Read as _, Write as _};
use std::path::Path;

use flate2::Compression;
use flate2::write::GzEncoder;
use proptest::prelude::*;

use fedcluster_data::cifar::{
    Cifar, Cifar100Labels, CifarRecords, SetForm, load_cifar10, load_cifar100, write_cifar_set,
};
use fedcluster_data::files::{ArrayFormat, read_federation, write_federation};
use fedcluster_data::leaf::json::UserRef;
use fedcluster_data::leaf::{LeafUser, Split, read_leaf_json, write_leaf_json};
use fedcluster_data::mnist::idx::{
    IMAGES_MAGIC, LABELS_MAGIC, parse_images, parse_labels, read_images, read_labels,
};
use fedcluster_data::{ClientData, FederatedData, GroundTruth, TargetsOwned, Task};

fn images(count: u32, rows: u32, cols: u32) -> Vec<u8> {
    let mut out = Vec::new();
    for w in [IMAGES_MAGIC, count, rows, cols] {
        out.extend_from_slice(&w.to_be_bytes());
    }
    out.extend((0..count * rows * cols).map(|i| i as u8));
    out
}

fn labels(count: u32) -> Vec<u8> {
    let mut out = Vec::new();
    for w in [LABELS_MAGIC, count] {
        out.extend_from_slice(&w.to_be_bytes());
    }
    out.extend((0..count).map(|i| (i % 10) as u8));
    out
}

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut enc = GzEncoder::new(Vec::new(), Compression::fast());
    enc.write_all(bytes).unwrap();
    enc.finish().unwrap()
}

/// `bytes` with up to a few bytes overwritten, a range cut out or bytes
/// appended, as `edits` says.
fn mutate(mut bytes: Vec<u8>, edits: &[(usize, u8, u8)]) -> Vec<u8> {
    for &(at, value, kind) in edits {
        if bytes.is_empty() {
            bytes.push(value);
            continue;
        }
        let at = at % bytes.len();
        match kind % 4 {
            0 | 1 => bytes[at] = value,
            2 => {
                bytes.truncate(at);
            }
            _ => bytes.insert(at, value),
        }
    }
    bytes
}

fn edits() -> impl Strategy<Value = Vec<(usize, u8, u8)>> {
    proptest::collection::vec((any::<usize>(), any::<u8>(), any::<u8>()), 0..6)
}

/// Every reader error about a file starts with the file's path.
fn names_the_file(error: &str, path: &Path) {
    assert!(
        error.starts_with(&path.display().to_string()),
        "error does not name {}: {error}",
        path.display()
    );
}

/// Loads the CIFAR `set` at `path` with every label choice: each load gives
/// a consistent image set of whole records or an error naming `file`.
fn cifar_loads(set: Cifar, path: &Path, file: &Path) -> Result<(), TestCaseError> {
    let choices: &[Cifar100Labels] = match set {
        Cifar::Cifar10 => &[Cifar100Labels::Fine],
        Cifar::Cifar100 => &[Cifar100Labels::Fine, Cifar100Labels::Coarse],
    };
    for &labels in choices {
        let loaded = match set {
            Cifar::Cifar10 => load_cifar10(path),
            Cifar::Cifar100 => load_cifar100(path, labels),
        };
        match loaded {
            Ok(images) => {
                prop_assert!(images.check("cifar").is_ok());
                prop_assert!(images.train_images.iter().all(|v| (0.0..=1.0).contains(v)));
            }
            Err(e) => names_the_file(&e.to_string(), file),
        }
    }
    Ok(())
}

fn cifar_set() -> impl Strategy<Value = Cifar> {
    prop_oneof![Just(Cifar::Cifar10), Just(Cifar::Cifar100)]
}

/// The uncompressed tar of an archive written by [`write_cifar_set`] with
/// `records` records per file.
fn cifar_tar(set: Cifar, records: usize) -> Vec<u8> {
    let dir = tempfile::tempdir().unwrap();
    let files = CifarRecords::synthetic_set(set, records);
    let path = write_cifar_set(dir.path(), set, SetForm::Archive, &files).unwrap();
    let mut tar = Vec::new();
    flate2::read::GzDecoder::new(std::fs::File::open(path).unwrap())
        .read_to_end(&mut tar)
        .unwrap();
    tar
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn idx_parsers_accept_only_what_the_header_declares(
        bytes in proptest::collection::vec(any::<u8>(), 0..64),
        count in 0u32..5, rows in 0u32..4, cols in 0u32..4,
        edits in edits(),
    ) {
        let path = Path::new("fuzz.idx");
        for input in [bytes.clone(), mutate(images(count, rows, cols), &edits)] {
            match parse_images(path, &input) {
                Ok(i) => prop_assert_eq!(i.pixels.len(), i.count * i.rows * i.cols),
                Err(e) => names_the_file(&e.to_string(), path),
            }
        }
        for input in [bytes, mutate(labels(count), &edits)] {
            match parse_labels(path, &input) {
                Ok(l) => prop_assert!(l.iter().all(|d| *d <= 9)),
                Err(e) => names_the_file(&e.to_string(), path),
            }
        }
    }

    #[test]
    fn gzipped_idx_files_damaged_anywhere_are_errors(
        count in 0u32..5, edits in edits(), label_file in any::<bool>(),
    ) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("fuzz.gz");
        let plain = if label_file { labels(count) } else { images(count, 2, 2) };
        std::fs::write(&path, mutate(gzip(&plain), &edits)).unwrap();
        let result = if label_file {
            read_labels(&path).map(|l| l.len())
        } else {
            read_images(&path).map(|i| i.count)
        };
        match result {
            Ok(n) => prop_assert!(n < 5, "{n} items from a file declaring at most 4"),
            Err(e) => names_the_file(&e.to_string(), &path),
        }
    }

    #[test]
    fn leaf_json_damaged_anywhere_is_an_error_naming_the_file(
        edits in edits(), text in "[ -~]{0,40}",
    ) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("fuzz.json");
        let user = LeafUser {
            id: "u1".into(),
            hierarchy: None,
            samples: fedcluster_data::leaf::LeafSamples::Features {
                dim: 2,
                x: vec![0.5, 1.0, 2.0, 3.0],
                y: vec![1, 0],
            },
        };
        write_leaf_json(&path, &[UserRef::from(&user)]).unwrap();
        let valid = std::fs::read(&path).unwrap();
        for input in [mutate(valid, &edits), text.into_bytes()] {
            std::fs::write(&path, &input).unwrap();
            for split in [Split::Train, Split::Test] {
                if let Err(e) = read_leaf_json(&path, split) {
                    names_the_file(&e.to_string(), &path);
                }
            }
        }
    }

    #[test]
    fn femnist_directories_damaged_anywhere_are_errors_naming_the_file(
        edits in edits(), test_split in any::<bool>(),
    ) {
        use fedcluster_data::leaf::{LeafSamples, SplitUser, femnist::FemnistSpec, write_leaf_dir};
        let dir = tempfile::tempdir().unwrap();
        let images = |n: usize, w: usize| LeafSamples::Features {
            dim: 784,
            x: (0..n * 784).map(|p| ((p + w) % 7) as f32 / 7.0).collect(),
            y: (0..n).map(|j| ((j + w) % 62) as u32).collect(),
        };
        let users: Vec<SplitUser> = (0..2)
            .map(|w| SplitUser {
                id: format!("f{w:04}"),
                hierarchy: None,
                train: images(2, w),
                test: images(1, w),
            })
            .collect();
        let root = dir.path().join("femnist");
        write_leaf_dir(&root, "femnist", &users, &[]).unwrap();
        let split = root.join(if test_split { "test" } else { "train" });
        let file = std::fs::read_dir(&split).unwrap().next().unwrap().unwrap().path();
        let valid = std::fs::read(&file).unwrap();
        std::fs::write(&file, mutate(valid, &edits)).unwrap();
        let spec = FemnistSpec {
            data_dir: Some(root.clone()),
            clients: 0,
            max_train_samples: 0,
            max_test_samples: 0,
        };
        if let Err(e) = fedcluster_data::DataConfig::Femnist(spec).build(1) {
            names_the_file(&e.to_string(), &file);
        }
    }

    #[test]
    fn cifar_batch_files_damaged_anywhere_are_errors_naming_the_file(
        set in cifar_set(), which in 0usize..6, edits in edits(),
        bytes in proptest::collection::vec(any::<u8>(), 0..64), arbitrary in any::<bool>(),
    ) {
        let dir = tempfile::tempdir().unwrap();
        let files = CifarRecords::synthetic_set(set, 2);
        let bin = write_cifar_set(dir.path(), set, SetForm::Directory, &files).unwrap();
        let names: Vec<&str> = set.train_files().iter().copied().chain([set.test_file()]).collect();
        let which = which % names.len();
        let path = bin.join(names[which]);
        let input = if arbitrary { bytes } else { mutate(files[which].to_bytes(set).unwrap(), &edits) };
        std::fs::write(&path, &input).unwrap();
        cifar_loads(set, dir.path(), &path)?;
        cifar_loads(set, &bin, &path)?;
    }

    #[test]
    fn cifar_archives_damaged_anywhere_are_errors_naming_the_archive(
        set in cifar_set(), edits in edits(), inside in any::<bool>(),
        bytes in proptest::collection::vec(any::<u8>(), 0..64), arbitrary in any::<bool>(),
    ) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(set.archive());
        let input = if arbitrary {
            bytes
        } else if inside {
            // Damage the tar itself (headers, sizes, data), then compress.
            gzip(&mutate(cifar_tar(set, 1), &edits))
        } else {
            // Damage the compressed stream.
            mutate(gzip(&cifar_tar(set, 1)), &edits)
        };
        std::fs::write(&path, &input).unwrap();
        cifar_loads(set, &path, &path)?;
        cifar_loads(set, dir.path(), &path)?;
    }

    #[test]
    fn damaged_federation_files_read_as_valid_data_or_an_error_naming_the_file(
        npz in any::<bool>(), which in 0usize..4, edits in edits(),
        bytes in proptest::collection::vec(any::<u8>(), 0..64), arbitrary in any::<bool>(),
    ) {
        let dir = tempfile::tempdir().unwrap();
        let fed = dir.path().join("fed");
        let format = if npz { ArrayFormat::Npz } else { ArrayFormat::Safetensors };
        write_federation(&federation(), &fed, format, false).unwrap();
        // Fuzz the readers, not the checksums: a user's own federation has none.
        std::fs::remove_file(fed.join("checksums.sha256")).unwrap();
        let ext = format.extension();
        let names = ["federation.json".to_string(), format!("train/0.{ext}"),
            format!("test/0.{ext}"), format!("truth.{ext}")];
        let path = fed.join(&names[which]);
        let input = if arbitrary { bytes } else { mutate(std::fs::read(&path).unwrap(), &edits) };
        std::fs::write(&path, &input).unwrap();
        match read_federation(&fed) {
            Ok(data) => prop_assert!(data.validate().is_ok()),
            Err(e) => names_the_file(&e.to_string(), &fed),
        }
    }
}

/// A small regression federation with true clusters and parameters.
fn federation() -> FederatedData {
    let client = |v: f32| ClientData {
        x: vec![v, 1.0, -v, 0.5],
        y: TargetsOwned::Real(vec![v, -v]),
    };
    FederatedData {
        name: "fuzz".into(),
        dim: 2,
        task: Task::Regression,
        image: None,
        train: vec![client(1.0), client(2.0)],
        test: vec![client(3.0)],
        truth: GroundTruth {
            clusters: 2,
            train_labels: vec![0, 1],
            test_labels: vec![1],
            params: Some(vec![vec![1.0, 0.0], vec![0.0, 1.0]]),
        },
    }
}
