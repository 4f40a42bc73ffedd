//! `kind = "cifar10"` and `kind = "cifar100"` end to end, on CIFAR binary
//! files the test writes in the exact format (CIFAR itself is not in this
//! workspace): the shipped rotated-CIFAR IFCA config, made tiny, runs
//! bit-identical on 1 and 2 threads, from the archive and from the extracted
//! directory; a missing directory or archive says which `fetch` downloads it.

mod common;

use std::path::Path;

use fedcluster_data::Cifar;
use fedcluster_data::cifar::{CifarRecords, SetForm, write_cifar_set};

const CONFIG: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../configs/ifca-rotated-cifar10.toml"
);

/// `fedcluster run` of the shipped config on `data`, 2 rounds of a small
/// network, with `threads` threads and the extra `sets`: the metrics and the
/// models it wrote.
fn run(dir: &Path, data: &Path, threads: &str, sets: &[&str]) -> (String, Vec<u8>) {
    let from = data.file_name().unwrap().to_str().unwrap();
    let sets_name = sets.join("-").replace(['=', '.'], "_");
    let out = dir.join(format!("run-{from}-{threads}-{sets_name}"));
    let mut args = vec![
        "run",
        CONFIG,
        "--data-dir",
        data.to_str().unwrap(),
        "--threads",
        threads,
        "-q",
        "--out",
        out.to_str().unwrap(),
    ];
    for set in [
        "rounds=2",
        "data.clients=10",
        "data.points_per_client=40",
        "data.test_clients=2",
        "model.hidden=8",
        "algorithm.local_steps=2",
        "algorithm.participation=0.5",
    ]
    .iter()
    .chain(sets)
    {
        args.extend(["--set", set]);
    }
    let output = common::fedcluster(&args, dir);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let csv = std::fs::read_to_string(out.join("metrics.csv")).unwrap();
    assert_eq!(csv.lines().count(), 3, "a header and 2 rounds:\n{csv}");
    (csv, std::fs::read(out.join("models.safetensors")).unwrap())
}

#[test]
fn rotated_cifar10_runs_the_same_on_one_and_two_threads_from_archive_or_directory() {
    let dir = common::scratch("cifar10");
    let records = CifarRecords::synthetic_set(Cifar::Cifar10, 120);
    let archive = dir.join("archive");
    let extracted = dir.join("extracted");
    std::fs::create_dir_all(&archive).unwrap();
    std::fs::create_dir_all(&extracted).unwrap();
    write_cifar_set(&archive, Cifar::Cifar10, SetForm::Archive, &records).unwrap();
    write_cifar_set(&extracted, Cifar::Cifar10, SetForm::Directory, &records).unwrap();
    assert!(archive.join("cifar-10-binary.tar.gz").is_file());
    let one = run(&dir, &archive, "1", &[]);
    assert!(
        one == run(&dir, &archive, "2", &[]),
        "1 and 2 threads differ"
    );
    assert!(
        one == run(&dir, &extracted, "1", &[]),
        "the archive and the extracted directory differ"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn cifar100_fine_and_coarse_run_the_same_on_one_and_two_threads() {
    let dir = common::scratch("cifar100");
    let records = CifarRecords::synthetic_set(Cifar::Cifar100, 300);
    let data = dir.join("c100");
    std::fs::create_dir_all(&data).unwrap();
    write_cifar_set(&data, Cifar::Cifar100, SetForm::Archive, &records).unwrap();
    for kind in ["data.kind=cifar100", "data.kind=cifar100-coarse"] {
        let one = run(&dir, &data, "1", &[kind]);
        assert!(
            one == run(&dir, &data, "2", &[kind]),
            "{kind}: 1 and 2 threads differ"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn without_its_files_the_error_says_which_fetch_downloads_them() {
    let dir = common::scratch("cifar-missing");
    // The config's data/cifar10 is not there: it and the fetch are named.
    let output = common::fedcluster(&["run", CONFIG, "-q", "--out", "x"], &dir);
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("data/cifar10") && stderr.contains("`fedcluster data fetch cifar10`"),
        "{stderr}"
    );
    // A directory without the files: the directory and the fetch.
    let empty = dir.join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    let output = common::fedcluster(
        &[
            "run",
            CONFIG,
            "--data-dir",
            empty.to_str().unwrap(),
            "-q",
            "--out",
            "x",
        ],
        &dir,
    );
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains(empty.to_str().unwrap())
            && stderr.contains("fedcluster data fetch cifar10"),
        "{stderr}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
