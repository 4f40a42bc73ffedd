//! `kind = "femnist"` end to end, on a LEAF FEMNIST directory the test writes
//! in LEAF's format (FEMNIST itself is not in this workspace): the shipped
//! IFCA config, made tiny, runs bit-identical on 1 and 2 threads, and a
//! missing directory is one line naming the data set and the flag.

mod common;
#[path = "fixtures/published_formats.rs"]
mod published_formats;

use fedcluster_data::leaf::{LeafSamples, SplitUser, write_leaf_dir};
use published_formats::{femnist_images, write_femnist};

const CONFIG: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../configs/ifca-femnist.toml"
);

#[test]
fn the_shipped_ifca_config_runs_on_leaf_files_the_same_on_one_and_two_threads() {
    let dir = common::scratch("femnist");
    let data = dir.join("femnist");
    write_femnist(&data, 6, 20, 5).unwrap();
    let mut outputs = Vec::new();
    for threads in ["1", "2"] {
        let out = dir.join(format!("run-{threads}"));
        let output = common::fedcluster(
            &[
                "run",
                CONFIG,
                "--data-dir",
                data.to_str().unwrap(),
                "--set",
                "rounds=2",
                "--set",
                "model.hidden=8",
                "--set",
                "algorithm.local_steps=2",
                "--set",
                "algorithm.participation=0.5",
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
        assert_eq!(csv.lines().count(), 3, "a header and 2 rounds:\n{csv}");
        let models = std::fs::read(out.join("models.safetensors")).unwrap();
        assert!(!models.is_empty());
        outputs.push((csv, models));
    }
    assert!(
        outputs[0].0 == outputs[1].0,
        "metrics.csv differs on 1 and 2 threads:\n{}\n{}",
        outputs[0].0,
        outputs[1].0
    );
    assert!(
        outputs[0].1 == outputs[1].1,
        "models.safetensors differs on 1 and 2 threads"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn without_its_directory_the_error_names_femnist_the_flag_and_the_variable() {
    let dir = common::scratch("femnist-missing");
    let output = common::fedcluster(&["run", CONFIG, "-q", "--out", "x"], &dir);
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
    assert_eq!(
        stderr.trim(),
        "error: FEMNIST: no data in data/femnist: set data.data_dir, pass --data-dir DIR, or \
         set FEDCLUSTER_DATA to a directory holding femnist/; it must be LEAF's FEMNIST \
         directory (its train/ and test/ JSON files)"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_bad_image_is_one_line_naming_the_file_and_the_writer() {
    let dir = common::scratch("femnist-bad");
    let data = dir.join("femnist");
    let users = [SplitUser {
        id: "f0007_03".into(),
        hierarchy: None,
        train: LeafSamples::Features {
            dim: 783,
            x: vec![0.5; 2 * 783],
            y: vec![1, 2],
        },
        test: femnist_images(1, 0, 0),
    }];
    write_leaf_dir(&data, "all_data_0", &users, &[]).unwrap();
    let output = common::fedcluster(
        &[
            "run",
            CONFIG,
            "--data-dir",
            data.to_str().unwrap(),
            "-q",
            "--out",
            "x",
        ],
        &dir,
    );
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
    assert!(
        stderr.contains("all_data_0_train.json: user `f0007_03`: x[0] has 783 values, not 784"),
        "{stderr}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
