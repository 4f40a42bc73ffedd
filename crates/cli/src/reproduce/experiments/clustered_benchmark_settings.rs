//! The clustered-benchmark's settings (five federations), their sizes in
//! the search and test grids, and the seeds: what the grids and the report
//! share.

use super::Protocol;
use super::clustered_benchmark_methods::CANDIDATES;
use crate::reproduce::harness::{Field, HeldOut, Metric, Setting};

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

/// One federation of the benchmark.
pub struct SettingSpec {
    pub key: &'static str,
    pub label: &'static str,
    /// True clusters (1: none).
    pub clusters: usize,
    /// Its `[data]` table, given the clients and samples per client.
    data: fn(usize, usize) -> String,
    /// Whether it reads MNIST (`--data-dir`).
    mnist: bool,
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
        mnist: true,
    },
    SettingSpec {
        key: "inverted",
        label: "inverted MNIST (k = 2)",
        clusters: 2,
        data: |m, n| mnist(r#"["identity", "invert"]"#, "", m, n),
        mnist: true,
    },
    SettingSpec {
        key: "permuted",
        label: "label-permuted MNIST (k = 4)",
        clusters: 4,
        data: |m, n| {
            let t = r#"["identity", "identity", "identity", "identity"]"#;
            mnist(t, ", permute_labels = true", m, n)
        },
        mnist: true,
    },
    SettingSpec {
        key: "dirichlet",
        label: "Dirichlet(0.3) label-skew MNIST, no clusters",
        clusters: 1,
        data: |m, n| {
            let skew = r#", skew = { kind = "dirichlet", alpha = 0.3 }"#;
            mnist(r#"["identity"]"#, skew, m, n)
        },
        mnist: true,
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
        mnist: false,
    },
];

impl SettingSpec {
    /// The harness setting, its data sized by `sizes`, seeds offset by `seed_offset`.
    pub fn setting(&self, p: &Protocol, sizes: Sizes, seed_offset: u64) -> Setting {
        let mut overrides = vec![(self.data)(sizes.clients, sizes.points)];
        if self.mnist {
            overrides.extend(p.data_dir_override());
        }
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

/// The search's total runs for `families` over the settings: the budget the
/// report states.
pub fn search_runs(families: usize) -> usize {
    families * CANDIDATES * SETTINGS.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_search_reads_only_samples_the_test_grid_trains_on() {
        for quick in [false, true] {
            let s = Sizes::of(&Protocol {
                quick,
                ..Default::default()
            });
            assert!(s.search.train + s.search.test <= s.test.train, "{s:?}");
            assert_eq!(s.test.train + s.test.test, s.points, "{s:?}");
        }
        // Nor the test seeds' federations.
        assert!(SEARCH_SEED_OFFSET >= TEST_SEEDS as u64);
    }
}
