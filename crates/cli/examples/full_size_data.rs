//! Writes made-up CIFAR-10 and FEMNIST files of the real size in the exact
//! published formats, for timing the full protocols of the CIFAR-10 and FEMNIST
//! reproductions where the real data is absent (docs/reproductions.md, "Cost
//! of the CIFAR-10 and FEMNIST tables"):
//!
//! ```sh
//! cargo run --release -p fedcluster-cli --example full_size_data -- /tmp/fullsize
//! ```
//!
//! writes `DIR/cifar10/` (CIFAR-10's binary batches: 5 x 10,000 training
//! records, 10,000 test records) and `DIR/femnist/` (LEAF's JSON: 173 writers
//! of 226 training and 25 test 28x28 images, the size of the IFCA code's LEAF
//! sample). The pixels are noise: the files time a round, they train nothing.

use std::path::PathBuf;

use fedcluster_data::Cifar;
use fedcluster_data::cifar::{CifarRecords, SetForm, write_cifar_set};
use fedcluster_data::leaf::{LeafSamples, SplitUser, write_leaf_dir};

/// Writers of the IFCA code's FEMNIST sample (its logs: 173).
const WRITERS: usize = 173;
/// Training and test images per writer (about 39,000 and 4,300 in all).
const TRAIN: usize = 226;
const TEST: usize = 25;

/// `n` 28x28 images of writer `w`, pixel values in {0, 1/255, ..., 1}.
fn images(n: usize, w: usize, base: usize) -> LeafSamples {
    LeafSamples::Features {
        dim: 784,
        x: (0..n * 784)
            .map(|p| ((p * 7 + w * 31 + base) % 256) as f32 / 255.0)
            .collect(),
        y: (0..n)
            .map(|j| ((w * 11 + j * 5 + base) % 62) as u32)
            .collect(),
    }
}

fn main() -> anyhow::Result<()> {
    let dir: PathBuf = std::env::args_os()
        .nth(1)
        .map(PathBuf::from)
        .ok_or_else(|| anyhow::anyhow!("usage: full_size_data DIR"))?;
    let cifar = dir.join("cifar10");
    std::fs::create_dir_all(&cifar)?;
    let records = CifarRecords::synthetic_set(Cifar::Cifar10, 10_000);
    let written = write_cifar_set(&cifar, Cifar::Cifar10, SetForm::Directory, &records)?;
    println!("CIFAR-10: {}", written.display());
    let users: Vec<SplitUser> = (0..WRITERS)
        .map(|w| SplitUser {
            id: format!("f{:04}_{:02}", w, w % 100),
            hierarchy: None,
            train: images(TRAIN, w, 0),
            test: images(TEST, w, 1),
        })
        .collect();
    let femnist = dir.join("femnist");
    write_leaf_dir(&femnist, "all_data_niid_05_keep_100", &users, &[])?;
    println!("FEMNIST: {}", femnist.display());
    Ok(())
}
