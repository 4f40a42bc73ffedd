//! The data sets `fedcluster data fetch` knows: each one's directory under
//! the data root, its files as published, the canonical address of each and
//! the MD5 its publisher (or torchvision, which mirrors it) gives for it.
//!
//! Where each checksum was checked (the same 32 hex digits, file by file):
//! - MNIST: torchvision's `torchvision/datasets/mnist.py`, class `MNIST`,
//!   `mirrors` (`https://ossci-datasets.s3.amazonaws.com/mnist/`, torchvision's
//!   own copy of LeCun's files, which `yann.lecun.com` no longer serves
//!   reliably) and `resources` (pytorch/vision, commit 01977a18).
//! - Fashion-MNIST: the same file, class `FashionMNIST`, `mirrors`
//!   (`http://fashion-mnist.s3-website.eu-central-1.amazonaws.com/`, Zalando's
//!   own bucket) and `resources`.
//! - CIFAR-10 and CIFAR-100, binary versions: the download table of
//!   <https://www.cs.toronto.edu/~kriz/cifar.html> (quoted in public notes),
//!   and the `md5sums` files of Mila's dataset mirrors
//!   (datasets-mila/datasets--cifar10, datasets-mila/datasets--cifar100).
//!   torchvision's `cifar.py` lists only the Python versions' `tgz_md5`.
//! - Shakespeare: LEAF's `data/shakespeare/preprocess/get_data.sh`
//!   (TalwalkarLab/leaf; since commit bd814c5, 2019-05-02, "changes source
//!   data for shakespeare dataset") downloads
//!   `http://www.gutenberg.org/files/100/old/1994-01-100.zip`, Project
//!   Gutenberg's 1994 edition of the complete works, and unzips its `100.txt`
//!   as `raw_data.txt` (LEAF's first public commit, 21f185e, took
//!   `files/100/100-0.txt`, a later edition). We ask for the same path over
//!   https, then, if that is not found, under `files/100/old/old/`, where
//!   scripts of other projects report Project Gutenberg moved it. No
//!   checksum is published for it: it is fetched unverified and its SHA-256
//!   is printed.

use fedcluster_data::Cifar;
use fedcluster_data::cifar::kinds::{Cifar10, Cifar100};
use fedcluster_data::fashion_mnist::FashionMnist;
use fedcluster_data::leaf::shakespeare::Shakespeare;
use fedcluster_data::mnist::kinds::MnistClusters;
use fedcluster_data::{DataKind, Files};

/// One file of a data set.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Remote {
    /// The file's name, as published and as kept.
    pub file: &'static str,
    /// The canonical addresses of its directory, in the order to try them
    /// (a later one only when an earlier one answers "not found"): the file
    /// is at `base` + `file`.
    pub bases: &'static [&'static str],
    /// The MD5 of its bytes, lower-case hex; `None` where none is published.
    pub md5: Option<&'static str>,
}

impl Remote {
    /// Its canonical addresses, in the order to try them.
    pub fn urls(&self) -> Vec<String> {
        self.bases
            .iter()
            .map(|b| format!("{b}{}", self.file))
            .collect()
    }
}

/// One data set.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Source {
    /// The name on the command line (`fedcluster data fetch NAME`).
    pub name: &'static str,
    /// What it is, in messages.
    pub title: &'static str,
    /// Its directory under the data root: the data-set table's `dir_name`
    /// for the kinds it has (MNIST, Fashion-MNIST, Shakespeare).
    pub dir_name: &'static str,
    /// Its files.
    pub files: &'static [Remote],
    /// What to do with the directory once fetched, after "pass".
    pub next: Next,
}

/// What the fetched directory is ready for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Next {
    /// `fedcluster run --data-dir DIR` reads it as it is.
    Run,
    /// It needs a step that does not exist yet, described here.
    Missing(&'static str),
}

/// The directory name the data-set table gives a kind that reads files.
const fn dir_of(files: Option<Files>) -> &'static str {
    match files {
        Some(files) => files.dir_name,
        None => panic!("a kind fetched from the network reads files"),
    }
}

const MNIST: &str = "https://ossci-datasets.s3.amazonaws.com/mnist/";
const FASHION: &str = "http://fashion-mnist.s3-website.eu-central-1.amazonaws.com/";
const TORONTO: &str = "https://www.cs.toronto.edu/~kriz/";
const GUTENBERG: &str = "https://www.gutenberg.org/files/100/old/";
const GUTENBERG_MOVED: &str = "https://www.gutenberg.org/files/100/old/old/";

/// Every data set `fetch` knows, in the order `--help` lists them.
pub const SOURCES: &[Source] = &[
    Source {
        name: "mnist",
        title: "MNIST",
        dir_name: dir_of(MnistClusters::FILES),
        files: &[
            Remote {
                file: "train-images-idx3-ubyte.gz",
                bases: &[MNIST],
                md5: Some("f68b3c2dcbeaaa9fbdd348bbdeb94873"),
            },
            Remote {
                file: "train-labels-idx1-ubyte.gz",
                bases: &[MNIST],
                md5: Some("d53e105ee54ea40749a09fcbcd1e9432"),
            },
            Remote {
                file: "t10k-images-idx3-ubyte.gz",
                bases: &[MNIST],
                md5: Some("9fb629c4189551a2d022fa330f9573f3"),
            },
            Remote {
                file: "t10k-labels-idx1-ubyte.gz",
                bases: &[MNIST],
                md5: Some("ec29112dd5afa0611ce80d1b7f02629c"),
            },
        ],
        next: Next::Run,
    },
    Source {
        name: "fashion-mnist",
        title: "Fashion-MNIST",
        dir_name: dir_of(FashionMnist::FILES),
        files: &[
            Remote {
                file: "train-images-idx3-ubyte.gz",
                bases: &[FASHION],
                md5: Some("8d4fb7e6c68d591d4c3dfef9ec88bf0d"),
            },
            Remote {
                file: "train-labels-idx1-ubyte.gz",
                bases: &[FASHION],
                md5: Some("25c81989df183df01b3e8a0aad5dffbe"),
            },
            Remote {
                file: "t10k-images-idx3-ubyte.gz",
                bases: &[FASHION],
                md5: Some("bef4ecab320f06d8554ea6380940ec79"),
            },
            Remote {
                file: "t10k-labels-idx1-ubyte.gz",
                bases: &[FASHION],
                md5: Some("bb300cfdad3c16e7a12a480ee83cd310"),
            },
        ],
        next: Next::Run,
    },
    Source {
        name: "cifar10",
        title: "CIFAR-10 (binary version)",
        dir_name: dir_of(Cifar10::FILES),
        files: &[Remote {
            file: Cifar::Cifar10.archive(),
            bases: &[TORONTO],
            md5: Some(Cifar::Cifar10.md5()),
        }],
        next: Next::Run,
    },
    Source {
        name: "cifar100",
        title: "CIFAR-100 (binary version)",
        dir_name: dir_of(Cifar100::FILES),
        files: &[Remote {
            file: Cifar::Cifar100.archive(),
            bases: &[TORONTO],
            md5: Some(Cifar::Cifar100.md5()),
        }],
        next: Next::Run,
    },
    Source {
        name: "shakespeare",
        title: "Shakespeare (Project Gutenberg's 1994 complete works, as LEAF downloads it)",
        dir_name: dir_of(Shakespeare::FILES),
        files: &[Remote {
            file: "1994-01-100.zip",
            bases: &[GUTENBERG, GUTENBERG_MOVED],
            md5: None,
        }],
        next: Next::Missing(
            "the zip holds one complete-works file (`100.txt`, the 1994 edition LEAF parses), \
             while `fedcluster run --data-dir DIR` and `fedcluster data leaf-shakespeare --plays \
             DIR` read a directory of one .txt file per play; the step needed next is one that \
             splits the 1994 text into plays (LEAF's preprocess_shakespeare.py does it for LEAF), \
             and no fedcluster command does it yet",
        ),
    },
];

/// The data set called `name`.
pub fn find(name: &str) -> Option<&'static Source> {
    SOURCES.iter().find(|s| s.name == name)
}

/// Every data set's name, for the command line's possible values.
pub fn names() -> impl Iterator<Item = &'static str> {
    SOURCES.iter().map(|s| s.name)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every data kind that names a fetch names a source here, which
    /// downloads into the kind's own directory name.
    #[test]
    fn every_kinds_fetch_is_a_source_into_its_directory() {
        let mut fetched = Vec::new();
        for name in fedcluster_data::DataConfig::NAMES {
            let Some(files) = fedcluster_data::DataConfig::files_of(name) else {
                continue;
            };
            if let Some(fetch) = files.fetch {
                let source = find(fetch).unwrap_or_else(|| panic!("{name}: no source {fetch}"));
                assert_eq!(source.dir_name, files.dir_name, "{name}");
                fetched.push(fetch);
            }
        }
        for s in SOURCES.iter().filter(|s| s.name != "shakespeare") {
            assert!(
                fetched.contains(&s.name),
                "no kind reads what {} fetches",
                s.name
            );
        }
    }

    #[test]
    fn names_and_files_are_unique_and_checksums_are_md5_hex() {
        for (i, s) in SOURCES.iter().enumerate() {
            assert_eq!(find(s.name), Some(s), "{} is found first", s.name);
            assert!(SOURCES[..i].iter().all(|t| t.dir_name != s.dir_name));
            for (j, f) in s.files.iter().enumerate() {
                assert!(s.files[..j].iter().all(|g| g.file != f.file));
                assert!(!f.bases.is_empty());
                for url in f.urls() {
                    assert!(url.starts_with("http") && url.ends_with(&format!("/{}", f.file)));
                }
                if let Some(md5) = f.md5 {
                    assert!(md5.len() == 32 && md5.bytes().all(|b| b.is_ascii_hexdigit()));
                    assert_eq!(md5, md5.to_ascii_lowercase());
                }
            }
        }
        assert_eq!(
            names().collect::<Vec<_>>(),
            [
                "mnist",
                "fashion-mnist",
                "cifar10",
                "cifar100",
                "shakespeare"
            ]
        );
    }
}
