//! The clustered-benchmark's settings (five federations, and two more,
//! rotated CIFAR-10 and FEMNIST, when their files are given), their sizes in
//! the search and test grids, and the seeds: what the grids and the report
//! share.

use std::path::Path;

use super::Protocol;
use super::clustered_benchmark_methods::{CANDIDATES, Family};
use crate::reproduce::harness::{Field, HeldOut, Metric, Setting};
use fedcluster_run::config::data_dir_override;

/// Seeds of each chosen configuration on test.
pub const TEST_SEEDS: usize = 3;
/// The search's federation is seed `SEARCH_SEED_OFFSET + 1`: drawn apart
/// from the test seeds' federations.
pub const SEARCH_SEED_OFFSET: u64 = 100;

/// A federation's sizes: clients, samples each, rounds and the two splits.
#[derive(Debug, Clone, Copy)]
pub struct Sizes {
    pub clients: usize,
    pub points: usize,
    pub rounds: usize,
    /// Test grid: train on the first `train`, test on the next `test`.
    pub test: HeldOut,
    /// Search grid: of the test grid's training samples, train on the first
    /// `train` and validate on the next `test`.
    pub search: HeldOut,
}

impl Sizes {
    /// The sizes `p` asks for: the benchmark's, or a smoke run's.
    pub fn of(p: &Protocol) -> Self {
        let s = if p.quick {
            Sizes {
                clients: 8,
                points: 60,
                rounds: 3,
                test: HeldOut {
                    train: 40,
                    test: 20,
                },
                search: HeldOut {
                    train: 30,
                    test: 10,
                },
            }
        } else {
            Sizes {
                clients: 40,
                points: 300,
                rounds: 40,
                test: HeldOut {
                    train: 200,
                    test: 100,
                },
                search: HeldOut {
                    train: 150,
                    test: 50,
                },
            }
        };
        Sizes {
            rounds: p.rounds.unwrap_or(s.rounds),
            ..s
        }
    }
}

/// The files a setting reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reads {
    /// None: generated from the seed.
    Nothing,
    /// MNIST (`--data-dir`): always there for the benchmark.
    Mnist,
    /// CIFAR-10's binary version (`--cifar-dir`): run only when given.
    Cifar10,
    /// LEAF's FEMNIST (`--femnist-dir`): run only when given.
    Femnist,
}

/// One federation of the benchmark.
pub struct SettingSpec {
    pub key: &'static str,
    pub label: &'static str,
    /// True clusters (1: none; 0: unknown, so no ARI, NMI or oracle).
    pub clusters: usize,
    /// Its `[data]` table, given the clients and samples per client.
    data: fn(usize, usize) -> String,
    /// The files it reads.
    pub reads: Reads,
    /// Its sizes where they are not [`Sizes::of`]'s (FEMNIST's writers hold
    /// fewer samples).
    sizes: Option<fn(&Protocol) -> Sizes>,
    /// What the protocol paragraph says of it beyond the common protocol
    /// (`None`: nothing).
    pub describe: Option<fn(Sizes) -> String>,
}

fn mnist(transforms: &str, extra: &str, clients: usize, points: usize) -> String {
    format!(
        "data={{ kind = \"mnist\", transforms = {transforms}, clients = {clients}, \
         points_per_client = {points}, test_clients = 0, disjoint = true{extra} }}"
    )
}

/// The benchmark's settings.
pub const SETTINGS: [SettingSpec; 5] = [
    SettingSpec {
        key: "rotated",
        label: "rotated MNIST (k = 4)",
        clusters: 4,
        data: |m, n| {
            let t = r#"["identity", "rotate90", "rotate180", "rotate270"]"#;
            mnist(t, "", m, n)
        },
        reads: Reads::Mnist,
        sizes: None,
        describe: None,
    },
    SettingSpec {
        key: "inverted",
        label: "inverted MNIST (k = 2)",
        clusters: 2,
        data: |m, n| mnist(r#"["identity", "invert"]"#, "", m, n),
        reads: Reads::Mnist,
        sizes: None,
        describe: None,
    },
    SettingSpec {
        key: "permuted",
        label: "label-permuted MNIST (k = 4)",
        clusters: 4,
        data: |m, n| {
            let t = r#"["identity", "identity", "identity", "identity"]"#;
            mnist(t, ", permute_labels = true", m, n)
        },
        reads: Reads::Mnist,
        sizes: None,
        describe: None,
    },
    SettingSpec {
        key: "dirichlet",
        label: "Dirichlet(0.3) label-skew MNIST, no clusters",
        clusters: 1,
        data: |m, n| {
            let skew = r#", skew = { kind = "dirichlet", alpha = 0.3 }"#;
            mnist(r#"["identity"]"#, skew, m, n)
        },
        reads: Reads::Mnist,
        sizes: None,
        describe: None,
    },
    SettingSpec {
        key: "synthetic",
        label: "synthetic mixture (k = 4 label permutations)",
        clusters: 4,
        data: |m, n| {
            format!(
                "data={{ kind = \"synthetic-images\", clients = {m}, points_per_client = {n}, \
                 test_points_per_client = 1, clusters = 4, classes = 10, height = 8, \
                 width = 8, channels = 1, noise_std = 2.0 }}"
            )
        },
        reads: Reads::Nothing,
        sizes: None,
        describe: None,
    },
];

/// The settings that run when their files are given: rotated CIFAR-10 at
/// k = 2 (0 and 180 degrees: the rotation IFCA, CFL-MGD and SR-FCA use on
/// CIFAR-10, the reproductions' configs under `configs/*cifar*/`) and
/// FEMNIST's writers (natural heterogeneity, no known clusters). Both train
/// the same MLP (100 hidden units) on the flattened images.
pub const OPTIONAL: [SettingSpec; 2] = [
    SettingSpec {
        key: "rotated-cifar",
        label: "rotated CIFAR-10 (k = 2, 0/180 degrees)",
        clusters: 2,
        data: |m, n| {
            format!(
                "data={{ kind = \"cifar10\", transforms = [\"identity\", \"rotate180\"], \
                 clients = {m}, points_per_client = {n}, test_clients = 0, disjoint = true }}"
            )
        },
        reads: Reads::Cifar10,
        sizes: None,
        describe: Some(|s| {
            format!(
                "Rotated CIFAR-10: k = 2 clusters, the images turned by 0 and 180 degrees (as \
                 IFCA, CFL-MGD and SR-FCA rotate CIFAR-10), {} clients of {} disjoint training \
                 images, the same MLP on the flattened 32x32x3 images (3,072 inputs), not the \
                 papers' CNNs.",
                s.clients, s.points
            )
        }),
    },
    SettingSpec {
        key: "femnist",
        label: "FEMNIST writers, no known clusters",
        clusters: 0,
        data: |m, _| format!("data={{ kind = \"femnist\", clients = {m} }}"),
        reads: Reads::Femnist,
        sizes: Some(femnist_sizes),
        describe: Some(|s| {
            format!(
                "FEMNIST: {} LEAF writers drawn by the seed, each a client (natural \
                 heterogeneity, no known clusters: no ARI, NMI or oracle), the same MLP on the \
                 28x28 images (784 inputs, 62 classes); each writer's first {} training images \
                 train and the next {} test (search: {} and {}), LEAF's own test split unused \
                 (the full protocol reads 90 training images a writer: every writer of LEAF's \
                 `-k 100` sample holds 100 images or more, 90% of them for training).",
                s.clients, s.test.train, s.test.test, s.search.train, s.search.test
            )
        }),
    },
];

/// FEMNIST's sizes: LEAF's `-k 100` sample keeps writers of 100 images or
/// more, 90% of them for training, so every writer holds 90 training images
/// (not the 300 of the others); `--quick`'s sizes fit already.
fn femnist_sizes(p: &Protocol) -> Sizes {
    let s = Sizes::of(p);
    if p.quick {
        return s;
    }
    Sizes {
        points: 90,
        test: HeldOut {
            train: 60,
            test: 30,
        },
        search: HeldOut {
            train: 45,
            test: 15,
        },
        ..s
    }
}

impl SettingSpec {
    /// Its sizes under `p`.
    pub fn sizes(&self, p: &Protocol) -> Sizes {
        self.sizes.map_or_else(|| Sizes::of(p), |f| f(p))
    }

    /// Whether `family` runs here: the oracle needs known clusters.
    pub fn runs(&self, family: &Family) -> bool {
        !family.needs_truth || self.clusters > 0
    }

    /// The harness setting, its data in `data_dir` (`None`: where `fedcluster
    /// run` finds it), sized by `sizes`, seeds offset by `seed_offset`.
    pub fn setting(&self, data_dir: Option<&Path>, sizes: Sizes, seed_offset: u64) -> Setting {
        let mut overrides = vec![(self.data)(sizes.clients, sizes.points)];
        overrides.extend(data_dir.map(data_dir_override));
        overrides.push(format!("rounds={}", sizes.rounds));
        Setting {
            key: self.key.into(),
            label: self.label.into(),
            overrides,
            seed_offset,
            ..Default::default()
        }
    }
}

/// Personalised accuracy after the last round: what the search picks by
/// and the ranks order by.
pub const ACCURACY: Metric = Metric::Final(Field::TestAccuracy);

/// The search's total runs for `families` over `settings`: the budget the
/// report states.
pub fn search_runs(families: &[Family], settings: &[&SettingSpec]) -> usize {
    let runs = |s: &&SettingSpec| families.iter().filter(|f| s.runs(f)).count();
    settings.iter().map(runs).sum::<usize>() * CANDIDATES
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_search_reads_only_samples_the_test_grid_trains_on() {
        for quick in [false, true] {
            let p = Protocol {
                quick,
                ..Default::default()
            };
            for setting in SETTINGS.iter().chain(&OPTIONAL) {
                let s = setting.sizes(&p);
                assert!(s.search.train + s.search.test <= s.test.train, "{s:?}");
                assert_eq!(s.test.train + s.test.test, s.points, "{s:?}");
            }
        }
        // Nor the test seeds' federations.
        assert!(SEARCH_SEED_OFFSET >= TEST_SEEDS as u64);
    }

    #[test]
    fn the_budget_counts_only_the_families_that_run_in_each_setting() {
        let families = super::super::clustered_benchmark_methods::families();
        let five: Vec<&SettingSpec> = SETTINGS.iter().collect();
        assert_eq!(search_runs(&families, &five), 15 * CANDIDATES * 5);
        // FEMNIST has no known clusters: no oracle there.
        let femnist = OPTIONAL.iter().find(|s| s.key == "femnist").unwrap();
        let oracle = families.iter().find(|f| f.needs_truth).unwrap();
        assert!(!femnist.runs(oracle) && SETTINGS[3].runs(oracle));
        assert_eq!(search_runs(&families, &[femnist]), 14 * CANDIDATES);
    }
}
