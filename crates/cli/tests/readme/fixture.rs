//! What a checked block runs in: a made-up MNIST in the files `fedcluster
//! data fetch mnist` writes, a copy of `configs/`, and bash with a time
//! limit.

use std::io::Write as _;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use flate2::Compression;
use flate2::write::GzEncoder;

use super::BLOCK_TIMEOUT;
use crate::common::{idx_images, idx_labels};

/// A made-up MNIST in the four gzipped IDX files `fedcluster data fetch
/// mnist` writes: `train` and `test` 28x28 images, labels `i % 10`, each
/// class a stroke of its own, so that the README's MNIST block has the
/// images its `--set`s ask for (200 clients of 100 images over 4 clusters:
/// 5,000; 40 test clients: 1,000).
pub(crate) fn write_small_mnist(dir: &Path, train: u32, test: u32) {
    std::fs::create_dir_all(dir).unwrap();
    let images = |count: u32, salt: u32| {
        idx_images(count, 28, |i, p| {
            let (class, y, x) = (i % 10, p / 28, p % 28);
            let stroke = (x + class * 2) % 28 == y || x == 4 + 2 * class;
            let noise = (i.wrapping_mul(2_654_435_761) ^ p.wrapping_mul(40_503) ^ salt) % 40;
            if stroke {
                215 + noise as u8
            } else {
                noise as u8
            }
        })
    };
    for (name, bytes) in [
        ("train-images-idx3-ubyte.gz", images(train, 1)),
        ("train-labels-idx1-ubyte.gz", idx_labels(train)),
        ("t10k-images-idx3-ubyte.gz", images(test, 2)),
        ("t10k-labels-idx1-ubyte.gz", idx_labels(test)),
    ] {
        let mut gz = GzEncoder::new(Vec::new(), Compression::fast());
        gz.write_all(&bytes).unwrap();
        std::fs::write(dir.join(name), gz.finish().unwrap()).unwrap();
    }
}

pub(crate) fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

/// Runs `script` with `bash -euo pipefail` in `dir` under `env`; its success
/// and output (stdout then stderr), killed (its process group) after
/// [`BLOCK_TIMEOUT`].
pub(crate) fn run_block(script: &str, dir: &Path, env: &[(&str, String)]) -> (bool, String) {
    use std::os::unix::process::CommandExt as _;
    let (out, err) = (dir.join(".stdout"), dir.join(".stderr"));
    let mut command = Command::new("bash");
    command
        .args(["-euo", "pipefail", "-c", script])
        .current_dir(dir)
        .stdin(std::process::Stdio::null())
        .stdout(std::fs::File::create(&out).unwrap())
        .stderr(std::fs::File::create(&err).unwrap())
        .process_group(0);
    for var in ["FEDCLUSTER_DATA", "FEDCLUSTER_TOKEN", "CARGO_TARGET_DIR"] {
        command.env_remove(var);
    }
    for (k, v) in env {
        command.env(k, v);
    }
    let mut child = command.spawn().expect("bash runs");
    let start = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break Some(status);
        }
        if start.elapsed() > BLOCK_TIMEOUT {
            let _ = Command::new("kill")
                .arg("-KILL")
                .arg(format!("-{}", child.id()))
                .status();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let text = format!(
        "{}{}",
        std::fs::read_to_string(&out).unwrap_or_default(),
        std::fs::read_to_string(&err).unwrap_or_default()
    );
    match status {
        Some(s) => (s.success(), text),
        None => (false, format!("{text}\n(killed after {BLOCK_TIMEOUT:?})")),
    }
}
