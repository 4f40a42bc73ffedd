use std::io::Write as _;
use std::path::Path;

use fedcluster_core::{ImageShape, Task};

use super::arrays::{Array, ArrayFormat, Values, read_arrays, write_arrays};
use super::npy::parse_npy;
use super::{MANIFEST, read_federation, write_federation};
use crate::dataset::{ClientData, FederatedData, GroundTruth, TargetsOwned};
use crate::leaf::{LeafSamples, SplitUser, write_leaf_dir};

fn regression() -> FederatedData {
    let client = |v: f32, n: usize| ClientData {
        x: (0..n * 3).map(|i| v + i as f32 * 0.25).collect(),
        y: TargetsOwned::Real((0..n).map(|i| v - i as f32).collect()),
    };
    FederatedData {
        name: "toy".into(),
        dim: 3,
        task: Task::Regression,
        image: None,
        train: vec![client(1.0, 2), client(-2.0, 3), client(0.5, 1)],
        test: vec![client(3.0, 2), client(4.0, 1), client(5.0, 2)],
        truth: GroundTruth {
            clusters: 2,
            train_labels: vec![0, 1, 1],
            test_labels: vec![0, 1, 1],
            params: Some(vec![vec![0.5, 1.0, -1.0], vec![1.0, 0.0, 2.5]]),
        },
    }
}

fn images() -> FederatedData {
    let shape = ImageShape {
        height: 2,
        width: 3,
        channels: 2,
    };
    let client = |v: f32, n: usize| ClientData {
        x: (0..n * 12).map(|i| v * i as f32 / 7.0).collect(),
        y: TargetsOwned::Class((0..n as u32).map(|i| i % 4).collect()),
    };
    FederatedData {
        name: "pictures".into(),
        dim: 12,
        task: Task::Classification { classes: 4 },
        image: Some(shape),
        train: vec![client(1.0, 3), client(2.0, 5)],
        test: vec![],
        truth: GroundTruth::unknown(),
    }
}

#[test]
fn a_federation_round_trips_in_both_formats() {
    let tmp = tempfile::tempdir().unwrap();
    for format in ArrayFormat::ALL {
        for data in [regression(), images()] {
            let out = tmp
                .path()
                .join(format!("{}-{}", data.name, format.extension()));
            write_federation(&data, &out, format, false).unwrap();
            assert_eq!(read_federation(&out).unwrap(), data, "{}", out.display());
            assert!(
                !tmp.path()
                    .join(format!("{}.partial", out.display()))
                    .exists()
            );
        }
    }
}

#[test]
fn a_written_federation_is_checked_against_its_checksums_and_read_unchecked_without() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("fed");
    write_federation(&regression(), &out, ArrayFormat::Npz, false).unwrap();
    let list = std::fs::read_to_string(out.join("checksums.sha256")).unwrap();
    for file in ["federation.json", "train/0.npz", "test/0.npz", "truth.npz"] {
        assert!(list.contains(&format!("  {file}\n")), "{file}: {list}");
    }
    let client = out.join("train/1.npz");
    let pristine = std::fs::read(&client).unwrap();
    let mut flipped = pristine.clone();
    flipped[pristine.len() - 30] ^= 0x10;
    std::fs::write(&client, &flipped).unwrap();
    let e = read_federation(&out).unwrap_err().to_string();
    assert!(e.contains("train/1.npz") && e.contains("SHA-256"), "{e}");
    std::fs::write(&client, &pristine).unwrap();
    std::fs::remove_file(out.join("checksums.sha256")).unwrap();
    assert_eq!(read_federation(&out).unwrap(), regression());
}

#[test]
fn an_existing_directory_is_replaced_only_when_forced() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("fed");
    std::fs::create_dir(&out).unwrap();
    write_federation(&regression(), &out, ArrayFormat::Npz, false).unwrap();
    let err = write_federation(&images(), &out, ArrayFormat::Npz, false).unwrap_err();
    assert!(err.to_string().contains("pass --force"), "{err}");
    assert_eq!(read_federation(&out).unwrap(), regression());
    write_federation(&images(), &out, ArrayFormat::Safetensors, true).unwrap();
    assert_eq!(read_federation(&out).unwrap(), images());
    std::fs::create_dir(tmp.path().join("fed.partial")).unwrap();
    let err = write_federation(&images(), &out, ArrayFormat::Npz, true).unwrap_err();
    assert!(err.to_string().contains("another export"), "{err}");
    let names: Vec<_> = std::fs::read_dir(tmp.path()).unwrap().collect();
    assert_eq!(names.len(), 2);
}

#[test]
fn numpy_files_of_other_dtypes_and_compressed_archives_are_read() {
    let npy = |descr: &str, shape: &str, data: &[u8]| {
        let mut header =
            format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': {shape}, }}");
        while (10 + header.len() + 1) % 64 != 0 {
            header.push(' ');
        }
        header.push('\n');
        let mut out = b"\x93NUMPY\x01\x00".to_vec();
        out.extend((header.len() as u16).to_le_bytes());
        out.extend(header.as_bytes());
        out.extend(data);
        out
    };
    let x: Vec<u8> = [1.5f64, -2.0, 0.25, 4.0]
        .iter()
        .flat_map(|v| v.to_le_bytes())
        .collect();
    let y: Vec<u8> = [3i32, 0].iter().flat_map(|v| v.to_le_bytes()).collect();
    let x = parse_npy(&npy("<f8", "(2, 2)", &x), 100).unwrap();
    assert_eq!(x.shape, [2, 2]);
    assert_eq!(x.values, Values::Float(vec![1.5, -2.0, 0.25, 4.0]));
    let y_bytes = npy("<i4", "(2,)", &y);
    assert_eq!(
        parse_npy(&y_bytes, 100).unwrap().values,
        Values::Int(vec![3, 0])
    );
    assert!(parse_npy(&y_bytes, 1).unwrap_err().contains("limit of 1"));
    let big = npy(">f4", "(1,)", &[0; 4]);
    assert!(parse_npy(&big, 10).unwrap_err().contains("big-endian"));

    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("c.npz");
    let mut zip = zip::ZipWriter::new(std::fs::File::create(&path).unwrap());
    let deflated = zip::write::SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Deflated);
    for (name, bytes) in [
        ("x.npy", npy("<f8", "(2, 2)", &x_bytes())),
        ("y.npy", y_bytes),
    ] {
        zip.start_file(name, deflated).unwrap();
        zip.write_all(&bytes).unwrap();
    }
    zip.finish().unwrap();
    let [x, y] = read_arrays(&path, ["x", "y"], 100).unwrap();
    assert_eq!((x.shape, y.shape), (vec![2, 2], vec![2]));
}

fn x_bytes() -> Vec<u8> {
    [1.0f64, 2.0, 3.0, 4.0]
        .iter()
        .flat_map(|v| v.to_le_bytes())
        .collect()
}

#[test]
fn a_leaf_directory_of_any_task_is_read_through_a_manifest() {
    let tmp = tempfile::tempdir().unwrap();
    let features = |v: f32, n: usize| LeafSamples::Features {
        dim: 2,
        x: (0..2 * n).map(|i| v + i as f32).collect(),
        y: (0..n as u32).map(|i| i % 3).collect(),
    };
    let users = vec![
        SplitUser {
            id: "a".into(),
            hierarchy: None,
            train: features(1.0, 3),
            test: features(2.0, 1),
        },
        SplitUser {
            id: "b".into(),
            hierarchy: None,
            train: features(5.0, 2),
            test: features(6.0, 2),
        },
    ];
    write_leaf_dir(&tmp.path().join("leaf"), "any", &users, &[]).unwrap();
    let manifest = r#"{"format": 1, "task": "classification", "classes": 3, "leaf": "leaf"}"#;
    std::fs::write(tmp.path().join(MANIFEST), manifest).unwrap();
    let data = read_federation(tmp.path()).unwrap();
    assert_eq!((data.dim, data.train.len(), data.test.len()), (2, 2, 2));
    assert_eq!(data.train[1].x, vec![5.0, 6.0, 7.0, 8.0]);
    assert_eq!(data.test[0].y, TargetsOwned::Class(vec![0]));
    let manifest = manifest.replace("\"classes\": 3", "\"classes\": 2");
    std::fs::write(tmp.path().join(MANIFEST), manifest).unwrap();
    let err = read_federation(tmp.path()).unwrap_err().to_string();
    assert!(
        err.contains("user `a` (train client 0): y[2] = 2 is not a class below 2"),
        "{err}"
    );
}

/// A regression federation in `dir` (npz), then `damage` applied to it; the
/// error of reading it.
fn error_after(damage: impl FnOnce(&Path)) -> String {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("fed");
    write_federation(&regression(), &dir, ArrayFormat::Npz, false).unwrap();
    // The readers' own checks, as on a user's federation (no checksums).
    std::fs::remove_file(dir.join("checksums.sha256")).unwrap();
    damage(&dir);
    read_federation(&dir).unwrap_err().to_string()
}

fn edit_manifest(dir: &Path, from: &str, to: &str) {
    let path = dir.join(MANIFEST);
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.contains(from), "{text}");
    std::fs::write(&path, text.replacen(from, to, 1)).unwrap();
}

fn put(dir: &Path, file: &str, x: (Vec<usize>, Values), y: (Vec<usize>, Values)) {
    let x = Array {
        shape: x.0,
        values: x.1,
    };
    let y = Array {
        shape: y.0,
        values: y.1,
    };
    write_arrays(&dir.join(file), &[("x", &x), ("y", &y)]).unwrap();
}

#[test]
fn bad_input_is_one_line_naming_the_file_and_the_client() {
    let cases: Vec<(&str, String)> = vec![
        (
            "federation.json: `format` 2 is not read by this fedcluster (it reads format 1)",
            error_after(|d| edit_manifest(d, "\"format\": 1", "\"format\": 2")),
        ),
        (
            "train/1.npz: train client 1: the manifest says 4 samples, x and y hold 3",
            error_after(|d| edit_manifest(d, "\"samples\": 3", "\"samples\": 4")),
        ),
        (
            "train/0.npz: train client 0: x has shape [2, 2], the manifest's input shape makes it [n, 3]",
            error_after(|d| {
                put(
                    d,
                    "train/0.npz",
                    (vec![2, 2], Values::Float(vec![0.0; 4])),
                    (vec![2], Values::Float(vec![0.0; 2])),
                )
            }),
        ),
        (
            "test/2.npz: test client 2: x has 2 samples, y has shape [3]: y must be [2]",
            error_after(|d| {
                put(
                    d,
                    "test/2.npz",
                    (vec![2, 3], Values::Float(vec![0.0; 6])),
                    (vec![3], Values::Float(vec![0.0; 3])),
                )
            }),
        ),
        (
            "train/2.npz: train client 2: no samples",
            error_after(|d| {
                edit_manifest(d, "\"samples\": 1", "\"samples\": 0");
                put(
                    d,
                    "train/2.npz",
                    (vec![0, 3], Values::Float(vec![])),
                    (vec![0], Values::Float(vec![])),
                );
            }),
        ),
        (
            "train/1.npz: train client 1: x has NaN at sample 1, value 2",
            error_after(|d| {
                let mut x = vec![0.0; 9];
                x[5] = f32::NAN;
                put(
                    d,
                    "train/1.npz",
                    (vec![3, 3], Values::Float(x)),
                    (vec![3], Values::Float(vec![0.0; 3])),
                );
            }),
        ),
        (
            "test/0.npz: cannot read",
            error_after(|d| std::fs::remove_file(d.join("test/0.npz")).unwrap()),
        ),
        (
            "federation.json: not a federation manifest: unknown field `colour`",
            error_after(|d| edit_manifest(d, "\"format\": 1", "\"format\": 1, \"colour\": 3")),
        ),
        (
            "test/1.npz: test client 1: no `y.npy` array in this .npz archive",
            error_after(|d| {
                let x = Array {
                    shape: vec![1, 3],
                    values: Values::Float(vec![0.0; 3]),
                };
                write_arrays(&d.join("test/1.npz"), &[("x", &x)]).unwrap();
            }),
        ),
    ];
    for (expected, error) in cases {
        assert!(!error.contains('\n'), "{error}");
        assert!(
            error.contains(expected),
            "expected `{expected}` in `{error}`"
        );
    }
}

#[test]
fn classes_out_of_range_and_float_labels_name_the_client() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("img");
    write_federation(&images(), &dir, ArrayFormat::Safetensors, false).unwrap();
    std::fs::remove_file(dir.join("checksums.sha256")).unwrap();
    let x = (vec![5, 2, 3, 2], Values::Float(vec![0.5; 60]));
    let y = Values::Int(vec![1, 4, 0, 0, 0]);
    put(&dir, "train/1.safetensors", x.clone(), (vec![5], y));
    let err = read_federation(&dir).unwrap_err().to_string();
    assert!(err.contains("train/1.safetensors: train client 1: y[1] = 4 is not a class (the manifest says 4 classes: 0..4)"), "{err}");
    put(
        &dir,
        "train/1.safetensors",
        x,
        (vec![5], Values::Float(vec![1.0; 5])),
    );
    let err = read_federation(&dir).unwrap_err().to_string();
    assert!(err.contains("train client 1: y holds floats"), "{err}");
}
