//! The IFCA paper's Table I (rotated MNIST: IFCA, global, local at three
//! (m, n)) and the CFL-MGD paper's Table 2 (rotated MNIST: CFL-MGD, IFCA,
//! FedAvg and FedAvg with momentum), on the configs under `configs/`.

use super::Protocol;
use crate::reproduce::harness::{
    Column, ConfigFile, Experiment, Field, Method, Metric, POINTS, Paper, Plot, Setting, Table,
    config_file,
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

fn common(p: &Protocol, rounds: usize) -> Vec<String> {
    let mut o = vec![format!(
        "rounds={}",
        p.rounds.unwrap_or(if p.quick { 3 } else { rounds })
    )];
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
        tables: tables("Table I"),
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
    let mut momentum =
        Method::new("fedavg-momentum", "FedAvg + momentum", CFLMGD).with_paper(accuracy(&[None]));
    momentum.overrides.push("algorithm.clusters=1".into());
    Experiment {
        name: "cflmgd-rotated-mnist",
        title: "CFL-MGD paper, Table 2: rotated MNIST".into(),
        protocol: PROTOCOL.into(),
        settings: vec![size(2400, 100)],
        methods: vec![
            Method::new("cflmgd", "CFL-MGD", CFLMGD).with_paper(accuracy(&[Some(96.05)])),
            Method::new("ifca", "IFCA", IFCA).with_paper(accuracy(&[Some(92.60)])),
            Method::new("fedavg", "FedAvg", GLOBAL).with_paper(accuracy(&[Some(89.84)])),
            momentum,
        ],
        seeds: p.seeds(3),
        overrides: common(p, 300),
        tables: tables("Table 2"),
        plots: vec![
            Plot::curves(Field::TestAccuracy, false),
            Plot::curves(Field::TrainLoss, true),
        ],
        curves: true,
        smoke: p.quick || p.rounds.is_some(),
        ..Default::default()
    }
}
