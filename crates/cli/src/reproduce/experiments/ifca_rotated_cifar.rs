//! The IFCA paper's Table I, rotated CIFAR-10 column (IFCA, global, local at
//! (m, n) = (200, 500), k = 2 rotations), on the configs under
//! `configs/ifca-rotated-cifar/`, with what the rotated-CIFAR reproductions
//! share: the `--quick` sizes that fit the test suite's tiny CIFAR files.

use super::Protocol;
use crate::reproduce::harness::{
    Check, Claim, Column, ConfigFile, Experiment, Field, Method, Metric, POINTS, Paper, PaperClaim,
    Setting, TEN_PERCENT, Table, config_file,
};

const IFCA: ConfigFile = config_file!("ifca-rotated-cifar/ifca.toml");
const GLOBAL: ConfigFile = config_file!("ifca-rotated-cifar/global.toml");
const LOCAL: ConfigFile = config_file!("ifca-rotated-cifar/local.toml");

/// Where the protocol differs from the paper's and its code, and why.
const AGAINST_THE_PAPER: &str = include_str!("ifca_rotated_cifar_against_the_paper.md");

/// Test accuracy after the last round.
pub(super) const ACCURACY: Metric = Metric::Final(Field::TestAccuracy);

/// The paper's mean ± std of `metric` in a one-setting table.
pub(super) fn paper(metric: Metric, mean: f64, std: f64) -> Vec<Paper> {
    vec![Paper {
        metric,
        values: vec![Some((mean, Some(std)))],
    }]
}

/// The `--quick` sizes of every rotated-CIFAR reproduction: 4 clients of 10
/// images (2 per rotation), 2 test clients, the network narrowed by
/// `narrow` (a `[model]` key: `?=` would skip a key the config leaves to its
/// default), 2 local steps on minibatches of 5 (`key?=value`: only the keys a
/// config has).
pub(super) fn quick_cifar(narrow: &str) -> Vec<String> {
    [
        "data.clients=4",
        "data.points_per_client=10",
        "data.test_clients=2",
        narrow,
        "algorithm.local_steps?=2",
        "algorithm.participation?=0.5",
        "algorithm.optimizer.batch_size?=5",
        "algorithm.local_optimizer.batch_size?=5",
    ]
    .map(String::from)
    .to_vec()
}

/// [`quick_cifar`] for the TF network (`cnn-ifca-cifar`), narrowed in its
/// three widths.
fn quick_tf_cifar() -> Vec<String> {
    let mut o = quick_cifar("model.filters=2");
    o.extend(["model.dense1=4", "model.dense2=3"].map(String::from));
    o
}

/// The overrides every run of a CIFAR/FEMNIST reproduction shares: its rounds
/// (`--rounds`, `quick` rounds with `--quick`, else the configs'), the quick
/// sizes and `--data-dir`.
pub(super) fn common(p: &Protocol, quick_rounds: usize, quick: Vec<String>) -> Vec<String> {
    let mut o = Vec::new();
    match (p.rounds, p.quick) {
        (Some(r), _) => o.push(format!("rounds={r}")),
        (None, true) => o.push(format!("rounds={quick_rounds}")),
        (None, false) => {}
    }
    if p.quick {
        o.extend(quick);
    }
    o.extend(p.data_dir_override());
    o
}

/// `reproduce ifca-rotated-cifar`.
pub fn experiment(p: &Protocol) -> Experiment {
    let full = !p.quick && p.rounds.is_none();
    let rounds = p.rounds.unwrap_or(if p.quick { 2 } else { 600 });
    Experiment {
        name: "ifca-rotated-cifar",
        title: "IFCA paper, Table I: rotated CIFAR-10".into(),
        protocol: format!(
            "k = 2 rotations (0 and 180 degrees) of CIFAR-10, {m} clients of {n} images (each \
             rotation its own permutation of the 50,000 training images), {t} test clients; the \
             code's TF network (cnn-ifca-cifar: 5x5 convolutions of {filters} filters, 3x3/2 \
             max-pooling, local response normalisation, dense {dense1} and {dense2}) on random \
             24x24 crops with flips, brightness (±63/255) and contrast (0.2-1.8) jitter, \
             standardised per image (the central crop at test, no jitter), L2 0.004 on both hidden dense layers; model averaging on a \
             sampled {share} of the clients \
             a round, 5 local epochs of 10 SGD steps on minibatches of 50 at lr 0.25, x0.99 per \
             round, {rounds} rounds (the paper's public code, cifar/config.json). Test accuracy: \
             each test client uses the model with the lowest loss on its data (local: each model \
             on its rotation's test images, averaged). Cluster accuracy: 1 − test \
             misclustering.",
            m = if p.quick { 4 } else { 200 },
            n = if p.quick { 10 } else { 500 },
            t = if p.quick { 2 } else { 40 },
            filters = if p.quick { 2 } else { 64 },
            dense1 = if p.quick { 4 } else { 384 },
            dense2 = if p.quick { 3 } else { 192 },
            share = if p.quick { "half" } else { "tenth (20)" },
        ),
        settings: vec![Setting {
            key: "200x500".into(),
            label: "(200, 500)".into(),
            ..Default::default()
        }],
        methods: vec![
            Method::new("ifca", "IFCA", IFCA).with_paper(paper(ACCURACY, 81.51, 1.37)),
            Method::new("global", "global", GLOBAL).with_paper(paper(ACCURACY, 77.87, 0.39)),
            Method::new("local", "local", LOCAL).with_paper(paper(ACCURACY, 33.97, 1.19)),
        ],
        seeds: p.seeds(5),
        overrides: common(p, 2, quick_tf_cifar()),
        tables: vec![
            Table {
                title: "Table I: test accuracy % after the last round (rotated CIFAR-10)".into(),
                columns: vec![
                    Column::new("test accuracy %", ACCURACY, POINTS),
                    Column::new(
                        "cluster accuracy %",
                        Metric::Final(Field::ClusterAccuracy),
                        POINTS,
                    ),
                ],
                ..Default::default()
            },
            Table {
                title: "Fig. 4: the round from which every training client is in its cluster"
                    .into(),
                columns: vec![Column::new(
                    "round",
                    Metric::SettledAt(Field::Misclustering),
                    TEN_PERCENT,
                )],
                no_paper: Some(
                    "the paper draws Fig. 4 as curves only: every cluster found at about round \
                     10 on rotated CIFAR"
                        .into(),
                ),
                ..Default::default()
            },
        ],
        claims: vec![
            PaperClaim {
                quote: "We can observe that our algorithm performs better than the two baselines.",
                source: "Section VI-B, Table I",
                check: Check::Ordering {
                    table: 0,
                    claim: Claim {
                        method: "ifca",
                        like: None,
                        beats: &["global", "local"],
                    },
                },
            },
            PaperClaim {
                quote: "the algorithm identifies all the clusters after a relatively small number \
                        of communication rounds ([...] 10 for Rotated CIFAR)",
                source: "Section VI-B, Fig. 4; checked as: the round from which every training \
                         client is in its cluster, per seed, at most 10",
                check: Check::AtMost {
                    table: 1,
                    method: "ifca",
                    bound: 10.0,
                },
            },
        ],
        notes: vec![AGAINST_THE_PAPER.into()],
        smoke: !full,
        report_absent_data: true,
        ..Default::default()
    }
}
