//! The IFCA paper's Table I (rotated MNIST: IFCA, global, local at three
//! (m, n)) and the CFL-MGD paper's Table 2 (rotated MNIST: CFL-MGD, IFCA,
//! FedAvg and FedAvg with momentum), on the configs under `configs/`.

use super::Protocol;
use crate::reproduce::harness::{
    Check, Claim, Column, ConfigFile, Experiment, FIGURES_ONLY, Field, Method, Metric, POINTS,
    Paper, PaperClaim, Plot, Setting, TEN_PERCENT, Table, config_file,
};

/// `--quick` scores this many local models (evenly spaced) instead of all:
/// scoring every one of 4,800 models on 10,000 test images dominated the run.
const QUICK_LOCAL_MODELS: usize = 240;

const IFCA: ConfigFile = config_file!("ifca-rotated-mnist.toml");
const GLOBAL: ConfigFile = config_file!("ifca-rotated-mnist/global.toml");
const LOCAL: ConfigFile = config_file!("ifca-rotated-mnist/local.toml");
const CFLMGD: ConfigFile = config_file!("cflmgd-rotated-mnist.toml");

const PROTOCOL: &str = "MLP 784-200-10, k = 4 rotations (0, 90, 180, 270 degrees), full \
    participation, tau = 10 full-batch local steps at lr 0.1, test clients of n images \
    (m_test·n = 40,000), as the papers' public code; CFL-MGD with momentum 0.9. Test accuracy: \
    each test client uses the model with the lowest loss on its data (local: each model on its \
    cluster's test data, averaged). Cluster accuracy: 1 − test misclustering.";

/// A size `(m, n)` of Table I.
fn size(m: usize, n: usize) -> Setting {
    Setting {
        key: format!("{m}x{n}"),
        label: format!("({m}, {n})"),
        overrides: vec![
            format!("data.clients={m}"),
            format!("data.points_per_client={n}"),
            format!("data.test_clients={}", 40_000 / n),
        ],
        ..Default::default()
    }
}

/// The rounds a run takes: `--rounds`, 3 with `--quick`, else the paper's.
fn rounds(p: &Protocol, paper: usize) -> usize {
    p.rounds.unwrap_or(if p.quick { 3 } else { paper })
}

fn common(p: &Protocol, paper_rounds: usize) -> Vec<String> {
    let mut o = vec![format!("rounds={}", rounds(p, paper_rounds))];
    if p.quick {
        o.push("eval_every?=1".into());
        o.push(format!("local_eval_models={QUICK_LOCAL_MODELS}"));
    }
    o.extend(p.data_dir_override());
    o
}

fn tables(what: &str) -> Vec<Table> {
    vec![Table {
        title: format!("{what}: test accuracy % after the last round"),
        columns: vec![
            Column::new(
                "test accuracy %",
                Metric::Final(Field::TestAccuracy),
                POINTS,
            ),
            Column::new(
                "cluster accuracy %",
                Metric::Final(Field::ClusterAccuracy),
                POINTS,
            ),
        ],
        ..Default::default()
    }]
}

/// The paper's test accuracy per setting.
fn accuracy(values: &[Option<f64>]) -> Vec<Paper> {
    vec![Paper::plain(Metric::Final(Field::TestAccuracy), values)]
}

/// `reproduce ifca-rotated-mnist`.
pub fn ifca_table1(p: &Protocol) -> Experiment {
    Experiment {
        name: "ifca-rotated-mnist",
        title: "IFCA paper, Table I: rotated MNIST".into(),
        protocol: PROTOCOL.into(),
        settings: vec![size(4800, 50), size(2400, 100), size(1200, 200)],
        methods: vec![
            Method::new("ifca", "IFCA", IFCA).with_paper(accuracy(&[
                Some(94.20),
                Some(95.05),
                Some(95.25),
            ])),
            Method::new("global", "global", GLOBAL).with_paper(accuracy(&[
                Some(86.74),
                Some(88.65),
                Some(89.73),
            ])),
            Method::new("local", "local", LOCAL).with_paper(accuracy(&[
                Some(63.32),
                Some(73.66),
                Some(80.05),
            ])),
        ],
        seeds: p.seeds(3),
        overrides: common(p, 300),
        tables: {
            let mut tables = tables("Table I");
            tables.push(clusters_found());
            tables
        },
        claims: ifca_claims(),
        plots: vec![
            Plot::curves(Field::TestAccuracy, false),
            Plot::curves(Field::ClusterAccuracy, false),
        ],
        curves: true,
        smoke: p.quick || p.rounds.is_some(),
        ..Default::default()
    }
}

/// `reproduce cflmgd-rotated-mnist`.
pub fn cflmgd_table2(p: &Protocol) -> Experiment {
    let mut momentum = Method::new(
        "fedavg-momentum",
        "FedAvg + momentum (not in the paper)",
        CFLMGD,
    )
    .with_paper(accuracy(&[None]));
    momentum.overrides.push("algorithm.clusters=1".into());

    let mut setting = size(2400, 100);
    setting.paper = Some(FIG4_CLAIM.into());
    let full = !(p.quick || p.rounds.is_some());
    // IFCA at CFL-MGD's effective step: heavy-ball momentum β at step η moves
    // by up to η / (1 − β) per unit gradient, so this row separates what the
    // larger step gains from what momentum itself adds; run to Fig. 4's
    // round 100.
    let step = Method::new(
        "ifca-step",
        "IFCA at lr 1.0 = 0.1 / (1 − 0.9), 100 rounds (not in the paper)",
        IFCA,
    )
    .with_overrides(&[
        "algorithm.lr=1.0",
        format!("rounds={}", rounds(p, 300).min(STEP_ROUNDS)).as_str(),
    ])
    .with_paper(accuracy(&[None]));
    let mut tables = tables("Table 2");
    tables.push(convergence(rounds(p, 300)));
    Experiment {
        name: "cflmgd-rotated-mnist",
        title: "CFL-MGD paper, Table 2 and Fig. 4: rotated MNIST".into(),
        protocol: PROTOCOL.into(),
        settings: vec![setting],
        methods: vec![
            Method::new("cflmgd", "CFL-MGD", CFLMGD)
                .with_paper(with_std(96.05, 0.12))
                .with_gap(0, ACCURACY, CFLMGD_GAP),
            Method::new("ifca", "IFCA", IFCA)
                .with_paper(with_std(92.60, 0.27))
                .with_gap(0, ACCURACY, IFCA_GAP),
            Method::new("fedavg", "FedAvg", GLOBAL).with_paper(with_std(89.84, 0.32)),
            momentum,
            step,
        ],
        claims: cflmgd_claims(),
        seeds: p.seeds(3),
        overrides: common(p, 300),
        tables,
        plots: vec![
            Plot::curves(Field::TestAccuracy, false),
            Plot::curves(Field::TrainLoss, true),
        ],
        curves: true,
        notes: if full {
            vec![CFLMGD_AGAINST_THE_PAPER.into()]
        } else {
            Vec::new()
        },
        smoke: !full,
        ..Default::default()
    }
}

/// Rounds of the `ifca-step` row: Fig. 4's claim is read at round 100.
const STEP_ROUNDS: usize = 100;

/// Table 2's column.
const ACCURACY: Metric = Metric::Final(Field::TestAccuracy);

/// Why Table 2's CFL-MGD and IFCA rows sit above the paper's (see the note).
const CFLMGD_GAP: &str = "run at the IFCA paper's protocol for all the CFL-MGD paper leaves \
     unstated, under which IFCA reproduces the IFCA paper; its lead over our IFCA is a little \
     under the paper's";
const IFCA_GAP: &str = "the CFL-MGD paper's IFCA is 2.45 points under the IFCA paper's own \
     95.05 at the same (m, n), which ours reproduces";

fn with_std(mean: f64, std: f64) -> Vec<Paper> {
    vec![Paper {
        metric: Metric::Final(Field::TestAccuracy),
        values: vec![Some((mean, Some(std)))],
    }]
}

/// What the paper says of its Fig. 4 (MNIST curves), checked by [`convergence`].
const FIG4_CLAIM: &str = "Fig. 4 (curves only): \"in the first 100 rounds, the MCFL loss \
    function curve decreases much faster than the other three algorithms and converges to a \
    fixed point earlier\"; CFL-MGD \"is far more effective than the other three algorithms in \
    terms of both training loss and test accuracy\"";

/// Fig. 4 read off the curves: the training loss after 50 and 100 of `rounds`
/// rounds and at the end, and the test accuracy after 100; the claim is
/// checked on the training loss after round 100 (or the last, if sooner).
fn convergence(rounds: usize) -> Table {
    let (at_50, at_100) = (rounds.min(50), rounds.min(100));
    let loss = |r: usize| Metric::AtRound(Field::TrainLoss, r);
    Table {
        title: "Fig. 4: training loss on the way (the clients' mean loss on their data at the \
                start of the round, under the model each picked), lower is better"
            .into(),
        columns: vec![
            Column::new(
                &format!("training loss, round {at_100}"),
                loss(at_100),
                TEN_PERCENT,
            ),
            Column::new(&format!("round {at_50}"), loss(at_50), TEN_PERCENT),
            Column::new(&format!("round {rounds}"), loss(rounds), TEN_PERCENT),
            Column::new(
                &format!("test accuracy % after round {at_100}"),
                Metric::AtRound(Field::TestAccuracy, at_100),
                POINTS,
            ),
        ],
        no_paper: Some(FIGURES_ONLY.into()),
        claim: Some(Claim {
            method: "cflmgd",
            like: None,
            beats: &["ifca", "fedavg"],
        }),
        ..Default::default()
    }
}

const CFLMGD_AGAINST_THE_PAPER: &str = include_str!("cflmgd_rotated_mnist_against_the_paper.md");

/// IFCA Fig. 4 read off the runs: the round from which every training client
/// is in its own cluster (the per-round misclustering is 0 to the end).
fn clusters_found() -> Table {
    Table {
        title: "Fig. 4: the round from which every training client is in its cluster".into(),
        columns: vec![Column::new(
            "round",
            Metric::SettledAt(Field::Misclustering),
            TEN_PERCENT,
        )],
        no_paper: Some(
            "the paper draws Fig. 4 as curves only (cluster-identity accuracy per round): every \
             cluster found at about round 30 on rotated MNIST, 10 on rotated CIFAR"
                .into(),
        ),
        ..Default::default()
    }
}

/// The IFCA paper's claims about Table I and Fig. 4.
fn ifca_claims() -> Vec<PaperClaim> {
    vec![
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
            quote: "the algorithm identifies all the clusters after a relatively small number of \
                    communication rounds (around 30 for Rotated MNIST [...])",
            source: "Section VI-B, Fig. 4; checked as: the round from which every training \
                     client is in its cluster, per seed, at most 30",
            check: Check::AtMost {
                table: 1,
                method: "ifca",
                bound: 30.0,
            },
        },
        PaperClaim {
            quote: "[...] and 10 for Rotated CIFAR",
            source: "Section VI-B, Fig. 4",
            check: Check::NotChecked(
                "Table I's rotated CIFAR-10 cells are not run here (no CIFAR-10 reproduction yet, \
                 and no CIFAR-10 files in this machine's data root)",
            ),
        },
    ]
}

/// The CFL-MGD paper's claims about Table 2 and Figs. 3-4.
fn cflmgd_claims() -> Vec<PaperClaim> {
    vec![
        PaperClaim {
            quote: "It is evident that the MCFL algorithm proposed in this paper is far more \
                    effective than the other three algorithms in terms of both training loss and \
                    test accuracy.",
            source: "Section 5, Fig. 4 and Table 2 (MNIST); checked on Table 2's test accuracy",
            check: Check::Ordering {
                table: 0,
                claim: Claim {
                    method: "cflmgd",
                    like: None,
                    beats: &["ifca", "fedavg"],
                },
            },
        },
        PaperClaim {
            quote: "in the first 100 rounds, the MCFL loss function curve decreases much faster \
                    than the other three algorithms and converges to a fixed point earlier",
            source: "Section 5, Fig. 4(a); checked on the training loss after round 100",
            check: Check::Ordering {
                table: 1,
                claim: Claim {
                    method: "cflmgd",
                    like: None,
                    beats: &["ifca", "fedavg"],
                },
            },
        },
        PaperClaim {
            quote: "This faster convergence speed is due to the addition of the momentum term",
            source: "Section 5, on CIFAR-10's Fig. 3; checked on MNIST against IFCA at the same \
                     effective step, lr / (1 − β) = 1.0, on the training loss after round 100",
            check: Check::Ordering {
                table: 1,
                claim: Claim {
                    method: "cflmgd",
                    like: None,
                    beats: &["ifca-step"],
                },
            },
        },
    ]
}
