//! Tests of the IDX reader and of [`load_mnist`]: small files written by the
//! tests themselves, and the real MNIST in `$FEDCLUSTER_DATA/mnist`.

use std::io::Write;
use std::path::PathBuf;
use std::sync::OnceLock;

use flate2::Compression;
use flate2::write::GzEncoder;

use super::*;

/// The real MNIST in `$FEDCLUSTER_DATA/mnist`, loaded once for all tests;
/// `None` where it is absent, `test` skipped, saying so (failing instead
/// where `$FEDCLUSTER_REQUIRE_DATA` lists `mnist`: see
/// [`fedcluster_testkit::real_data`]). Files that are present must load.
pub(crate) fn real_mnist(test: &str) -> Option<&'static Mnist> {
    static MNIST: OnceLock<Option<Mnist>> = OnceLock::new();
    let dir = fedcluster_testkit::real_data("mnist", "MNIST", test)?;
    let mnist = MNIST.get_or_init(|| match load_mnist(&dir) {
        Ok(m) => Some(m),
        Err(e) => panic!("the MNIST files in {} must load: {e}", dir.display()),
    });
    mnist.as_ref()
}

/// A directory removed when dropped.
struct TempDir(PathBuf);

impl TempDir {
    fn new(tag: &str) -> Self {
        let dir =
            std::env::temp_dir().join(format!("fedcluster-mnist-{}-{tag}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Self(dir)
    }

    fn write(&self, name: &str, bytes: &[u8]) -> PathBuf {
        let path = self.0.join(name);
        std::fs::write(&path, bytes).unwrap();
        path
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn images_bytes(count: u32, rows: u32, cols: u32, pixels: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    for w in [idx::IMAGES_MAGIC, count, rows, cols] {
        out.extend_from_slice(&w.to_be_bytes());
    }
    out.extend_from_slice(pixels);
    out
}

fn labels_bytes(labels: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    for w in [idx::LABELS_MAGIC, labels.len() as u32] {
        out.extend_from_slice(&w.to_be_bytes());
    }
    out.extend_from_slice(labels);
    out
}

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut enc = GzEncoder::new(Vec::new(), Compression::default());
    enc.write_all(bytes).unwrap();
    enc.finish().unwrap()
}

const TRAIN_PIXELS: [u8; 12] = [0, 255, 51, 102, 0, 0, 255, 255, 255, 1, 2, 3];
const TEST_PIXELS: [u8; 4] = [10, 20, 30, 40];

/// A tiny valid MNIST: 3 training and 1 test image of 2x2, plain or gzipped.
fn tiny(tag: &str, gz: bool) -> TempDir {
    let dir = TempDir::new(tag);
    let files = [
        (TRAIN_IMAGES_FILE, images_bytes(3, 2, 2, &TRAIN_PIXELS)),
        (TRAIN_LABELS_FILE, labels_bytes(&[5, 0, 9])),
        (TEST_IMAGES_FILE, images_bytes(1, 2, 2, &TEST_PIXELS)),
        (TEST_LABELS_FILE, labels_bytes(&[7])),
    ];
    for (name, bytes) in files {
        if gz {
            dir.write(&format!("{name}.gz"), &gzip(&bytes));
        } else {
            dir.write(name, &bytes);
        }
    }
    dir
}

fn scaled(pixels: &[u8]) -> Vec<f32> {
    pixels.iter().map(|p| f32::from(*p) / 255.0).collect()
}

#[test]
fn tiny_files_round_trip_plain_and_gzipped() {
    for gz in [false, true] {
        let dir = tiny(&format!("round-trip-{gz}"), gz);
        let m = load_mnist(&dir.0).unwrap();
        assert_eq!((m.shape.height, m.shape.width, m.shape.channels), (2, 2, 1));
        assert_eq!(m.train_labels, [5, 0, 9]);
        assert_eq!(m.test_labels, [7]);
        assert_eq!(m.train_images, scaled(&TRAIN_PIXELS));
        assert_eq!(m.test_images, scaled(&TEST_PIXELS));
        assert_eq!(m.train_images[0], 0.0);
        assert_eq!(m.train_images[1], 1.0);
        assert_eq!(m.train_image(2), Some(&m.train_images[8..12]));
        assert_eq!(m.train_image(3), None);
        assert_eq!(m.test_image(0), Some(&m.test_images[..]));
    }
}

#[test]
fn plain_file_is_preferred_and_compression_is_detected_by_content() {
    let dir = tiny("prefer", false);
    // A gzipped file with other labels beside the plain one is ignored.
    dir.write(
        &format!("{TRAIN_LABELS_FILE}.gz"),
        &gzip(&labels_bytes(&[1, 1, 1])),
    );
    assert_eq!(load_mnist(&dir.0).unwrap().train_labels, [5, 0, 9]);
    // A gzipped payload under the plain name is still decompressed.
    dir.write(TRAIN_LABELS_FILE, &gzip(&labels_bytes(&[2, 3, 4])));
    assert_eq!(load_mnist(&dir.0).unwrap().train_labels, [2, 3, 4]);
}

/// Loads `dir` and checks that the error mentions every one of `needles`.
fn fails_naming(dir: &TempDir, needles: &[&str]) -> DataError {
    let err = load_mnist(&dir.0).unwrap_err();
    let msg = err.to_string();
    for needle in needles {
        assert!(msg.contains(needle), "`{msg}` does not mention `{needle}`");
    }
    err
}

#[test]
fn malformed_files_are_errors_naming_the_file() {
    let dir = tiny("wrong-magic", false);
    dir.write(TRAIN_IMAGES_FILE, &labels_bytes(&[1, 2, 3]));
    let err = fails_naming(&dir, &[TRAIN_IMAGES_FILE, "wrong magic number 0x00000801"]);
    assert!(err.path().unwrap().ends_with(TRAIN_IMAGES_FILE));
    assert!(err.to_string().starts_with(&dir.0.display().to_string()));

    let dir = tiny("truncated-payload", true);
    let short = images_bytes(1, 2, 2, &TEST_PIXELS[..3]);
    dir.write(&format!("{TEST_IMAGES_FILE}.gz"), &gzip(&short));
    fails_naming(
        &dir,
        &[&format!("{TEST_IMAGES_FILE}.gz"), "truncated", "4 bytes"],
    );

    let dir = tiny("truncated-header", false);
    dir.write(TRAIN_LABELS_FILE, &labels_bytes(&[])[..6]);
    fails_naming(&dir, &[TRAIN_LABELS_FILE, "truncated header: 6 bytes"]);
    dir.write(TRAIN_LABELS_FILE, &[]);
    fails_naming(&dir, &[TRAIN_LABELS_FILE, "truncated header: 0 bytes"]);

    let dir = tiny("trailing", false);
    let mut long = images_bytes(1, 2, 2, &TEST_PIXELS);
    long.push(0);
    dir.write(TEST_IMAGES_FILE, &long);
    fails_naming(&dir, &[TEST_IMAGES_FILE, "trailing data: 1 bytes"]);

    let dir = tiny("big-label", false);
    dir.write(TEST_LABELS_FILE, &labels_bytes(&[10]));
    fails_naming(&dir, &[TEST_LABELS_FILE, "label 10 at index 0"]);

    let dir = tiny("empty-images", false);
    dir.write(TEST_IMAGES_FILE, &images_bytes(0, 0, 2, &[]));
    fails_naming(&dir, &[TEST_IMAGES_FILE, "0x2 pixels"]);

    let dir = tiny("damaged-gzip", true);
    let gz = gzip(&images_bytes(3, 2, 2, &TRAIN_PIXELS));
    dir.write(&format!("{TRAIN_IMAGES_FILE}.gz"), &gz[..gz.len() / 2]);
    fails_naming(&dir, &[&format!("{TRAIN_IMAGES_FILE}.gz"), "gzip"]);
}

#[test]
fn inconsistent_files_are_errors_naming_both() {
    let dir = tiny("count-mismatch", false);
    dir.write(TRAIN_LABELS_FILE, &labels_bytes(&[1, 2]));
    fails_naming(
        &dir,
        &[TRAIN_LABELS_FILE, TRAIN_IMAGES_FILE, "2 labels", "3 images"],
    );

    let dir = tiny("size-mismatch", false);
    dir.write(TEST_IMAGES_FILE, &images_bytes(1, 1, 4, &TEST_PIXELS));
    fails_naming(&dir, &[TEST_IMAGES_FILE, TRAIN_IMAGES_FILE, "1x4", "2x2"]);
}

#[test]
fn missing_files_and_directories_are_errors_naming_them() {
    let dir = tiny("missing", false);
    std::fs::remove_file(dir.0.join(TEST_LABELS_FILE)).unwrap();
    let err = fails_naming(
        &dir,
        &[
            &dir.0.display().to_string(),
            TEST_LABELS_FILE,
            &format!("{TEST_LABELS_FILE}.gz"),
        ],
    );
    assert!(matches!(err, DataError::Missing { .. }));

    let gone = dir.0.join("no-such-dir");
    let err = load_mnist(&gone).unwrap_err();
    assert!(err.to_string().starts_with(&gone.display().to_string()));
    let DataError::Io { source, .. } = &err else {
        panic!("expected an IO error, got {err:?}");
    };
    assert_eq!(source.kind(), std::io::ErrorKind::NotFound);
    assert!(std::error::Error::source(&err).is_some());
    assert_eq!(err.clone(), err);
    assert_eq!(err.field(), "");
}

#[test]
fn the_real_mnist_loads() {
    let Some(m) = real_mnist("the_real_mnist_loads") else {
        return;
    };
    assert_eq!(
        (m.shape.height, m.shape.width, m.shape.channels),
        (28, 28, 1)
    );
    assert_eq!((m.train_len(), m.test_len()), (60_000, 10_000));
    assert_eq!(m.train_images.len(), 60_000 * 784);
    assert_eq!(m.test_images.len(), 10_000 * 784);
    // Known facts of MNIST: the first training digit is a 5, the first test
    // digit a 7, and every digit occurs.
    assert_eq!(m.train_labels[0], 5);
    assert_eq!(m.test_labels[0], 7);
    for labels in [&m.train_labels, &m.test_labels] {
        let mut seen = [false; 10];
        for l in labels.iter() {
            seen[*l as usize] = true;
        }
        assert_eq!(seen, [true; 10]);
    }
    for images in [&m.train_images, &m.test_images] {
        assert!(images.iter().all(|p| (0.0..=1.0).contains(p)));
        assert!(images.contains(&0.0) && images.contains(&1.0));
    }
}

/// A gzip file of a few hundred kilobytes that inflates to 256 MiB behind a
/// header declaring two labels: refused as trailing data after inflating one
/// byte past the declared length, not the whole stream.
#[test]
fn a_gzip_bomb_is_refused_without_being_inflated() {
    let dir = TempDir::new("bomb");
    let mut enc = GzEncoder::new(Vec::new(), Compression::best());
    enc.write_all(&labels_bytes(&[1, 2])).unwrap();
    let zeros = vec![0u8; 1 << 20];
    for _ in 0..256 {
        enc.write_all(&zeros).unwrap();
    }
    let path = dir.write("bomb.gz", &enc.finish().unwrap());
    assert!(std::fs::metadata(&path).unwrap().len() < 1 << 20);
    let bytes = idx::read_maybe_gz(&path).unwrap();
    assert_eq!(
        bytes.len(),
        4 + 4 + 2 + 1,
        "inflated one byte past the header's length"
    );
    let err = idx::read_labels(&path).unwrap_err().to_string();
    assert!(
        err.contains("trailing data: 1 bytes after the 2 labels"),
        "{err}"
    );
}
