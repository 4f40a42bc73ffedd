//! FEMNIST from LEAF directories the tests write: one client per writer with
//! its own test split, sampling by the seed, caps, and every refusal.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use super::*;
use crate::leaf::dir::write_leaf_dir;
use crate::leaf::json::{UserRef, write_leaf_json};
use crate::leaf::samples::TextSamples;

/// `n` images of `dim` values (distinct per `base`, in `[0, 1]` as LEAF
/// stores them) and classes `(base + j) % 62`.
fn images(n: usize, dim: usize, base: u32) -> LeafSamples {
    LeafSamples::Features {
        dim,
        x: (0..n * dim)
            .map(|p| ((p as u32 * 7 + base * 13) % 256) as f32 / 255.0)
            .collect(),
        y: (0..n as u32).map(|j| (base + j) % CLASSES as u32).collect(),
    }
}

fn writer(id: &str, train: usize, test: usize, base: u32) -> SplitUser {
    SplitUser {
        id: id.into(),
        hierarchy: None,
        train: images(train, PIXELS, base),
        test: images(test, PIXELS, base + 100),
    }
}

/// Five writers, listed out of id order, with 4 + i training and 2 test
/// images each.
fn writers() -> Vec<SplitUser> {
    ["f0042_07", "f0001_41", "f0100_33", "f0007_12", "f0003_19"]
        .iter()
        .enumerate()
        .map(|(i, id)| writer(id, 4 + i, 2, i as u32))
        .collect()
}

fn write_dir(root: &Path, users: &[SplitUser]) -> PathBuf {
    let dir = root.join("femnist");
    write_leaf_dir(&dir, "all_data_0_niid_05_keep_100", users, &[]).unwrap();
    // As LEAF writes it: without fedcluster's checksums.
    std::fs::remove_file(dir.join("checksums.sha256")).unwrap();
    dir
}

fn spec(dir: &Path, clients: usize) -> FemnistSpec {
    FemnistSpec {
        data_dir: Some(dir.to_path_buf()),
        clients,
        max_train_samples: 0,
        max_test_samples: 0,
    }
}

fn error(spec: &FemnistSpec) -> String {
    femnist(spec, 1).unwrap_err().to_string()
}

#[test]
fn femnist_gives_one_client_per_writer_with_its_own_test_images() {
    let root = tempfile::tempdir().unwrap();
    let users = writers();
    let dir = write_dir(root.path(), &users);
    let data = femnist(&spec(&dir, 0), 3).unwrap();
    data.validate().unwrap();
    assert_eq!(data.name, "femnist");
    assert_eq!(data.dim, 784);
    assert_eq!(data.task, Task::Classification { classes: 62 });
    let shape = data.image.unwrap();
    assert_eq!((shape.height, shape.width, shape.channels), (28, 28, 1));
    assert!(!data.truth.is_known());
    // Every writer, in id order; train and test of the same writer.
    let mut sorted = users.clone();
    sorted.sort_by(|a, b| a.id.cmp(&b.id));
    assert_eq!(data.train.len(), 5);
    assert_eq!(data.test.len(), 5);
    for (i, user) in sorted.iter().enumerate() {
        let LeafSamples::Features { x, y, .. } = &user.train else {
            unreachable!()
        };
        assert_eq!(data.train[i].x, *x, "{}", user.id);
        assert_eq!(data.train[i].y, TargetsOwned::Class(y.clone()));
        let LeafSamples::Features { x, y, .. } = &user.test else {
            unreachable!()
        };
        assert_eq!(data.test[i].x, *x, "{}", user.id);
        assert_eq!(data.test[i].y, TargetsOwned::Class(y.clone()));
    }
    // The values as LEAF stores them, labels through 61.
    assert!(data.train[0].x.iter().all(|v| (0.0..=1.0).contains(v)));
    let wide = write_dir(&root.path().join("wide"), &[writer("w", 70, 1, 0)]);
    let TargetsOwned::Class(y) = &femnist(&spec(&wide, 0), 1).unwrap().train[0].y else {
        unreachable!()
    };
    assert_eq!(y.iter().max(), Some(&61));

    // Through the data-set table.
    let DataSet::Stored(built) = Femnist::build(&spec(&dir, 0), 3).unwrap() else {
        panic!("FEMNIST is stored")
    };
    assert_eq!(built, data);
}

#[test]
fn femnist_draws_writers_by_the_seed() {
    let root = tempfile::tempdir().unwrap();
    let dir = write_dir(root.path(), &writers());
    // A writer is told by its training size (4 + its index in `writers()`).
    let drawn = |seed| -> Vec<usize> {
        let data = femnist(&spec(&dir, 3), seed).unwrap();
        assert_eq!(data.train.len(), 3);
        assert_eq!(data.test.len(), 3);
        data.train.iter().map(ClientData::len).collect()
    };
    assert_eq!(drawn(5), drawn(5), "the same seed, the same writers");
    let sets: BTreeSet<Vec<usize>> = (0..20).map(drawn).collect();
    assert!(sets.len() > 1, "20 seeds all drew {sets:?}");
    // Writers in id order: f0001_41 (5), f0003_19 (8), f0007_12 (7),
    // f0042_07 (4), f0100_33 (6).
    let order = [5, 8, 7, 4, 6];
    for set in &sets {
        let at: Vec<usize> = set
            .iter()
            .map(|n| order.iter().position(|o| o == n).unwrap())
            .collect();
        assert!(at.windows(2).all(|w| w[0] < w[1]), "{set:?}");
    }
    // All of them whatever the seed.
    assert_eq!(
        femnist(&spec(&dir, 5), 9).unwrap(),
        femnist(&spec(&dir, 0), 1).unwrap()
    );
    let e = femnist(&spec(&dir, 6), 1).unwrap_err();
    assert_eq!(e.field(), "clients");
    assert!(e.to_string().contains("6 clients from 5 writers"), "{e}");
}

#[test]
fn femnist_caps_each_clients_images() {
    let root = tempfile::tempdir().unwrap();
    let dir = write_dir(root.path(), &writers());
    let all = femnist(&spec(&dir, 0), 1).unwrap();
    let capped = femnist(
        &FemnistSpec {
            max_train_samples: 5,
            max_test_samples: 1,
            ..spec(&dir, 0)
        },
        1,
    )
    .unwrap();
    capped.validate().unwrap();
    for (c, full) in capped.train.iter().zip(&all.train) {
        assert_eq!(c.len(), full.len().min(5));
        assert_eq!(c.x, full.x[..c.len() * PIXELS]);
    }
    assert!(capped.test.iter().all(|c| c.len() == 1));
}

#[test]
fn femnist_refuses_bad_directories_naming_file_and_user() {
    let root = tempfile::tempdir().unwrap();
    let at = |name: &str, users: &[SplitUser]| write_dir(&root.path().join(name), users);

    // An image of 783 values.
    let mut short = writers();
    short[1].train = images(3, 783, 0);
    let dir = at("short", &short);
    let e = error(&spec(&dir, 0));
    let file = dir.join("train/all_data_0_niid_05_keep_100_train.json");
    assert!(e.starts_with(&file.display().to_string()), "{e}");
    assert!(
        e.contains("user `f0001_41`: x[0] has 783 values, not 784"),
        "{e}"
    );
    // The first user of the file too (not its neighbours of 784).
    let mut first = writers();
    first[0].train = images(3, 785, 0);
    let e = error(&spec(&at("first", &first), 0));
    assert!(
        e.contains("user `f0042_07`: x[0] has 785 values, not 784"),
        "{e}"
    );

    // A class of 62, in a test file.
    let mut label = writers();
    label[2].test = LeafSamples::Features {
        dim: PIXELS,
        x: vec![0.5; 2 * PIXELS],
        y: vec![3, 62],
    };
    let e = error(&spec(&at("label", &label), 0));
    assert!(
        e.contains("test/all_data_0_niid_05_keep_100_test.json"),
        "{e}"
    );
    assert!(
        e.contains("user `f0100_33`: y[1] = 62 is not a FEMNIST class (0..62)"),
        "{e}"
    );

    // A writer without training images.
    let mut empty = writers();
    empty[0].train = images(0, PIXELS, 0);
    let e = error(&spec(&at("empty", &empty), 0));
    assert!(e.contains("user `f0042_07`: no training images"), "{e}");

    // Shakespeare's windows.
    let mut windows = TextSamples::new(3);
    windows.push(&[1, 2, 3], 4);
    let text = vec![SplitUser {
        id: "PLAY_ROLE".into(),
        hierarchy: None,
        train: LeafSamples::Text(windows.clone()),
        test: LeafSamples::Text(windows),
    }];
    let e = error(&spec(&at("text", &text), 0));
    assert!(e.contains("user `PLAY_ROLE`: text samples"), "{e}");

    // A writer in train/ only, then in test/ only.
    let dir = at("unpaired", &writers());
    let extra = writer("f0500_01", 3, 1, 9);
    let only = |samples| {
        [UserRef {
            id: &extra.id,
            hierarchy: None,
            samples,
        }]
    };
    write_leaf_json(&dir.join("train/more.json"), &only(&extra.train)).unwrap();
    let e = error(&spec(&dir, 0));
    assert!(
        e.contains("user `f0500_01` has training samples but no test samples"),
        "{e}"
    );
    std::fs::remove_file(dir.join("train/more.json")).unwrap();
    write_leaf_json(&dir.join("test/more.json"), &only(&extra.test)).unwrap();
    let e = error(&spec(&dir, 0));
    assert!(
        e.contains("user `f0500_01` has test samples but no training samples"),
        "{e}"
    );

    // No test/, no train/, no directory.
    std::fs::remove_dir_all(dir.join("test")).unwrap();
    let e = error(&spec(&dir, 0));
    assert!(e.contains("no `test/` directory"), "{e}");
    std::fs::remove_dir_all(dir.join("train")).unwrap();
    let e = error(&spec(&dir, 0));
    assert!(e.contains("no `train/` directory"), "{e}");
    let e = error(&spec(&root.path().join("absent"), 0));
    assert!(e.contains("no such directory"), "{e}");

    // No directory configured.
    let e = Femnist::build(
        &FemnistSpec {
            data_dir: None,
            ..spec(&dir, 0)
        },
        1,
    )
    .err()
    .unwrap();
    assert_eq!(e.field(), "data_dir");
    assert!(
        e.to_string()
            .contains("FEMNIST: no data directory given: set data.data_dir"),
        "{e}"
    );

    // Every message is one line.
    for users in [&short, &label, &empty, &text] {
        let dir = root.path().join("again");
        let _ = std::fs::remove_dir_all(&dir);
        let e = error(&spec(&write_dir(&dir, users), 0));
        assert_eq!(e.lines().count(), 1, "{e}");
    }
}

#[test]
fn femnist_reads_leafs_own_layout() {
    // As LEAF's split_data.py writes a by-sample split: `user_data` holds an
    // empty entry for each user it dropped (fewer than 2 images), no
    // `hierarchies`, integer labels.
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("data");
    for split in ["train", "test"] {
        std::fs::create_dir_all(dir.join(split)).unwrap();
        let pixels = vec!["1.0"; PIXELS].join(", ");
        let text = format!(
            r#"{{"users": ["f0000_14"], "num_samples": [1],
                "user_data": {{"f0000_14": {{"x": [[{pixels}]], "y": [61]}},
                              "f0001_41": {{"x": [], "y": []}}}}}}"#
        );
        std::fs::write(
            dir.join(format!("{split}/all_data_0_niid_05_keep_0_{split}_9.json")),
            text,
        )
        .unwrap();
    }
    let data = femnist(&spec(&dir, 0), 1).unwrap();
    data.validate().unwrap();
    assert_eq!(data.train.len(), 1);
    assert_eq!(data.train[0].x, vec![1.0; PIXELS]);
    assert_eq!(data.test[0].y, TargetsOwned::Class(vec![61]));
}
