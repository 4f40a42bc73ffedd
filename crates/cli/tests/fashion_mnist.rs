//! `kind = "fashion-mnist"` end to end, on IDX files the test writes in the
//! exact format (Fashion-MNIST itself is not in this workspace): the shipped
//! config runs, bit-identical on 1 and 2 threads, and a missing directory is
//! one line naming the data set.

mod common;

use std::path::Path;

/// Writes the four IDX files of a tiny Fashion-MNIST: `train` and `test`
/// 8x8 images whose pixels differ, labels `i % 10`.
fn write_idx_set(dir: &Path, train: u32, test: u32) {
    let images = |count: u32, base: u32| {
        common::idx_images(count, 8, |i, p| ((base + (i * 64 + p) * 7) % 256) as u8)
    };
    for (name, bytes) in [
        ("train-images-idx3-ubyte", images(train, 0)),
        ("train-labels-idx1-ubyte", common::idx_labels(train)),
        ("t10k-images-idx3-ubyte", images(test, 3)),
        ("t10k-labels-idx1-ubyte", common::idx_labels(test)),
    ] {
        std::fs::write(dir.join(name), bytes).unwrap();
    }
}

const CONFIG: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../configs/ifca-rotated-fashion-mnist.toml"
);

#[test]
fn the_shipped_config_runs_on_idx_files_the_same_on_one_and_two_threads() {
    let dir = common::scratch("fashion-mnist");
    let data = dir.join("fashion-mnist");
    std::fs::create_dir_all(&data).unwrap();
    write_idx_set(&data, 200, 40);
    let mut metrics = Vec::new();
    for threads in ["1", "2"] {
        let out = dir.join(format!("run-{threads}"));
        let output = common::fedcluster(
            &[
                "run",
                CONFIG,
                "--data-dir",
                data.to_str().unwrap(),
                "--set",
                "rounds=3",
                "--set",
                "data.clients=8",
                "--set",
                "data.points_per_client=20",
                "--set",
                "data.test_clients=4",
                "--set",
                "model.hidden=8",
                "--threads",
                threads,
                "-q",
                "--out",
                out.to_str().unwrap(),
            ],
            &dir,
        );
        assert!(
            output.status.success(),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
        let csv = std::fs::read_to_string(out.join("metrics.csv")).unwrap();
        assert_eq!(csv.lines().count(), 4, "a header and 3 rounds:\n{csv}");
        metrics.push(csv);
    }
    assert_eq!(metrics[0], metrics[1], "1 and 2 threads differ");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn without_its_directory_the_error_names_fashion_mnist_the_flag_and_the_variable() {
    let dir = common::scratch("fashion-mnist-missing");
    let output = common::fedcluster(&["run", CONFIG, "-q", "--out", "x"], &dir);
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
    assert_eq!(
        stderr.trim(),
        "error: Fashion-MNIST: no data in data/fashion-mnist: set data.data_dir, pass \
         --data-dir DIR, or set FEDCLUSTER_DATA to a directory holding fashion-mnist/; \
         `fedcluster data fetch fashion-mnist` downloads it"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
