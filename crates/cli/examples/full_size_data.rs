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

#[path = "../tests/fixtures/published_formats.rs"]
mod published_formats;

use published_formats::{write_cifar, write_femnist};

/// Writers of the IFCA code's FEMNIST sample (its logs: 173).
const WRITERS: usize = 173;
/// Training and test images per writer (about 39,000 and 4,300 in all).
const TRAIN: usize = 226;
const TEST: usize = 25;

fn main() -> anyhow::Result<()> {
    let dir: PathBuf = std::env::args_os()
        .nth(1)
        .map(PathBuf::from)
        .ok_or_else(|| anyhow::anyhow!("usage: full_size_data DIR"))?;
    let cifar = dir.join("cifar10");
    write_cifar(&cifar, 10_000)?;
    println!("CIFAR-10: {}", cifar.display());
    let femnist = dir.join("femnist");
    write_femnist(&femnist, WRITERS, TRAIN, TEST)?;
    println!("FEMNIST: {}", femnist.display());
    Ok(())
}
