//! `fedcluster bench cifar-partition`: IFCA's rotated CIFAR-10 (Table I:
//! `[identity, rotate180]`, (m, n) = (200, 500), 40 test clients of 500
//! images) built through the data-set table from a full-size CIFAR-10 binary
//! set: the real one with `--data-dir`, else 60,000 made-up records in the
//! exact format written to a temporary directory first (and removed after).
//!
//! Each cluster draws a permutation of all 50,000 training images, so storing
//! every client would hold each image twice (rotated and not); the partition
//! holds the decoded images once and produces a client's rotated images when
//! the client is asked for. The report gives the load time, the time to
//! produce every training client once (a "round"), what the decoded images
//! and the stored test clients take, what storing every training client
//! would take, and the peak resident memory from the load on (the peak is
//! reset after writing the made-up files, where Linux allows it).

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context, Result};

use fedcluster_core::ShardBuf;
use fedcluster_data::cifar::{CifarRecords, SetForm, write_cifar_set};
use fedcluster_data::{Cifar, DataConfig, ImageClustersSpec, Transform};

use super::{BenchOptions, BenchReport, Benchmark, resolve_threads};

/// IFCA's rotated CIFAR-10 sizes.
const CLIENTS: usize = 200;
const POINTS: usize = 500;
const TEST_CLIENTS: usize = 40;

/// The partition built and produced (see the module documentation).
pub(super) fn cifar_partition(benchmark: Benchmark, options: &BenchOptions) -> Result<BenchReport> {
    let (dir, made_up) = match &options.data_dir {
        Some(dir) => (dir.clone(), None),
        None => {
            let dir = made_up_cifar10()?;
            (dir.clone(), Some(dir))
        }
    };
    reset_peak_rss();
    let result = measure(benchmark, options, &dir);
    if let Some(dir) = made_up {
        let _ = std::fs::remove_dir_all(dir);
    }
    let mut report = result?;
    report.extra.insert(
        0,
        (
            "CIFAR-10 files".into(),
            match &options.data_dir {
                Some(dir) => dir.display().to_string(),
                None => "60,000 made-up records in the binary format (a temporary archive)".into(),
            },
        ),
    );
    Ok(report)
}

fn measure(benchmark: Benchmark, options: &BenchOptions, dir: &Path) -> Result<BenchReport> {
    let spec = ImageClustersSpec {
        transforms: vec![Transform::Identity, Transform::Rotate180],
        clients: CLIENTS,
        points_per_client: POINTS,
        test_clients: TEST_CLIENTS,
        downsample: false,
        disjoint: false,
        permute_labels: false,
        skew: None,
        data_dir: Some(dir.to_path_buf()),
    };
    let config = DataConfig::Cifar10(spec);
    let start = Instant::now();
    let data = config.build(1).context("building rotated CIFAR-10")?;
    let load = start.elapsed().as_secs_f64();
    let view = data.view();
    let dim = view.dim;
    let mut buf = ShardBuf::default();
    let mut times = Vec::new();
    let mut checksum = 0.0f64;
    for _ in 0..options.rounds.max(1) {
        let start = Instant::now();
        for client in 0..view.train.num_clients() {
            let batch = view.train.batch(client, &mut buf);
            checksum += f64::from(batch.x[0]);
        }
        times.push(start.elapsed().as_secs_f64());
    }
    let mib = |values: usize| (values * 4) as f64 / (1 << 20) as f64;
    let decoded = mib((50_000 + 10_000) * dim);
    let test_clients = mib(TEST_CLIENTS * POINTS * dim);
    let every_client = mib(CLIENTS * POINTS * dim);
    let mut report = BenchReport::of_rounds(benchmark, resolve_threads(1), &times, 0.0);
    let images = (CLIENTS * POINTS) as f64;
    report.extra = vec![
        ("load and partition".into(), format!("{load:.2} s")),
        (
            "training images produced per second (median pass over the 200 clients)".into(),
            format!("{:.0}", images / report.median_round),
        ),
        (
            "decoded images held (train and test, f32)".into(),
            format!("{decoded:.0} MiB"),
        ),
        (
            "test clients stored (rotated)".into(),
            format!("{test_clients:.0} MiB"),
        ),
        (
            "training clients if each were stored".into(),
            format!("{every_client:.0} MiB"),
        ),
        (
            "peak resident memory from the load on".into(),
            super::peak_rss_mib().map_or("unknown (no /proc/self/status)".into(), |m| {
                format!("{m:.0} MiB")
            }),
        ),
        (
            "(first pixel sum, to keep the work)".into(),
            format!("{checksum:.3}"),
        ),
    ];
    Ok(report)
}

/// Writes a full-size made-up CIFAR-10 binary archive into a new temporary
/// directory and returns the directory.
fn made_up_cifar10() -> Result<PathBuf> {
    let dir = std::env::temp_dir().join(format!("fedcluster-bench-cifar10-{}", std::process::id()));
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    eprintln!(
        "writing 60,000 made-up CIFAR-10 records to {}",
        dir.display()
    );
    let records = CifarRecords::synthetic_set(Cifar::Cifar10, 10_000);
    write_cifar_set(&dir, Cifar::Cifar10, SetForm::Archive, &records)?;
    Ok(dir)
}

/// Resets the peak resident memory to the current one (Linux: writing 5 to
/// `/proc/self/clear_refs`); does nothing where that is not allowed.
fn reset_peak_rss() {
    let _ = std::fs::write("/proc/self/clear_refs", "5");
}
