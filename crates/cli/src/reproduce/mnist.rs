//! MNIST reproductions: the IFCA paper's Table I (rotated MNIST: IFCA, global,
//! local at three (m, n)) and the CFL-MGD paper's Table 2 (rotated MNIST:
//! CFL-MGD, IFCA, FedAvg with and without momentum).
//!
//! Protocol of the papers' public code: MLP 784-200-10, k = 4 rotations,
//! m_test·n = 40,000 test images, full participation, τ = 10 full-batch local
//! steps at lr 0.1, 300 rounds; CFL-MGD with momentum 0.9. Test accuracy: each
//! test client uses the model with the lowest loss on its data (local models: on
//! the test data of their cluster). Cluster accuracy: 1 − test misclustering.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context, Result};
use indicatif::{ProgressBar, ProgressStyle};

use fedcluster_algorithms::{Aggregation, InitScheme, cflmgd, fedavg, ifca, local};
use fedcluster_data::{MnistClustersSpec, Transform};

use super::mean_std;
use crate::config::{AlgorithmConfig, DataConfig, ModelConfig, RunConfig};
use crate::experiment::{Outcome, build_data, execute};
use crate::plot::{Series, line_chart};
use crate::table::render;

/// Options of an MNIST reproduction.
#[derive(Debug, Clone)]
pub struct Options {
    /// Directory of the MNIST IDX files.
    pub data_dir: PathBuf,
    /// Seeds per (method, size).
    pub seeds: usize,
    /// Rounds per run.
    pub rounds: usize,
    /// Evaluate the test clients every this many rounds.
    pub eval_every: usize,
    /// Worker threads (0: one per core).
    pub threads: usize,
    /// Only these `(m, n)` sizes (all when empty).
    pub sizes: Vec<(usize, usize)>,
    /// Only these methods, by label, case-insensitive (all when empty).
    pub methods: Vec<String>,
    /// Local baseline: score at most this many local models (0: all).
    pub local_eval_models: usize,
}

impl Options {
    /// The papers' protocol: 300 rounds, 3 seeds, evaluation every 10 rounds.
    pub fn full(data_dir: PathBuf, threads: usize) -> Self {
        Self {
            data_dir,
            seeds: 3,
            rounds: 300,
            eval_every: 10,
            threads,
            sizes: Vec::new(),
            methods: Vec::new(),
            local_eval_models: 0,
        }
    }

    /// A smoke run: 3 rounds, 1 seed, evaluation every round, 240 local models
    /// scored (evenly spaced) instead of all.
    pub fn quick(data_dir: PathBuf, threads: usize) -> Self {
        Self {
            data_dir,
            seeds: 1,
            rounds: 3,
            eval_every: 1,
            threads,
            sizes: Vec::new(),
            methods: Vec::new(),
            local_eval_models: QUICK_LOCAL_MODELS,
        }
    }
}

/// One compared method: its label, its paper numbers per size and its config.
struct Method {
    label: &'static str,
    paper: &'static [f64],
    algorithm: fn() -> AlgorithmConfig,
}

/// One reproduction: sizes `(m, n)` and methods.
pub struct Experiment {
    name: &'static str,
    title: &'static str,
    sizes: &'static [(usize, usize)],
    methods: &'static [Method],
}

const LR: f32 = 0.1;
/// `--quick` scores this many local models (evenly spaced) instead of all:
/// scoring every one of 4,800 models on 10,000 test images dominated the run.
const QUICK_LOCAL_MODELS: usize = 240;
const TAU: usize = 10;

fn ifca() -> AlgorithmConfig {
    AlgorithmConfig::Ifca(ifca::Config {
        clusters: 4,
        aggregation: Aggregation::Model,
        lr: LR.into(),
        local_steps: TAU,
        participation: 1.0,
        restarts: 1,
        init: InitScheme::Model,
        stable_rounds: 0,
        weight_sharing: false,
        momentum: 0.0,
        optimizer: Default::default(),
    })
}

fn global() -> AlgorithmConfig {
    AlgorithmConfig::Global(fedavg::Config {
        aggregation: Aggregation::Model,
        lr: LR,
        local_steps: TAU,
        participation: 1.0,
        init: InitScheme::Model,
        optimizer: Default::default(),
    })
}

fn local() -> AlgorithmConfig {
    AlgorithmConfig::Local(local::Config {
        lr: LR,
        local_steps: TAU,
        participation: 1.0,
        init: InitScheme::Model,
        optimizer: Default::default(),
    })
}

fn cfl_mgd(clusters: usize) -> AlgorithmConfig {
    AlgorithmConfig::Cflmgd(cflmgd::Config {
        clusters,
        aggregation: Aggregation::Model,
        lr: LR,
        momentum: 0.9,
        local_steps: TAU,
        participation: 1.0,
        restarts: 1,
        init: InitScheme::Model,
    })
}

/// The IFCA paper, Table I (rotated MNIST), test accuracy in %.
pub const IFCA_ROTATED_MNIST: Experiment = Experiment {
    name: "ifca-rotated-mnist",
    title: "IFCA paper, Table I: rotated MNIST",
    sizes: &[(4800, 50), (2400, 100), (1200, 200)],
    methods: &[
        Method {
            label: "IFCA",
            paper: &[94.20, 95.05, 95.25],
            algorithm: ifca,
        },
        Method {
            label: "global",
            paper: &[86.74, 88.65, 89.73],
            algorithm: global,
        },
        Method {
            label: "local",
            paper: &[63.32, 73.66, 80.05],
            algorithm: local,
        },
    ],
};

/// The CFL-MGD paper, Table 2 (rotated MNIST, P = 4, m = 2400, n = 100).
pub const CFLMGD_ROTATED_MNIST: Experiment = Experiment {
    name: "cflmgd-rotated-mnist",
    title: "CFL-MGD paper, Table 2: rotated MNIST",
    sizes: &[(2400, 100)],
    methods: &[
        Method {
            label: "CFL-MGD",
            paper: &[96.05],
            algorithm: || cfl_mgd(4),
        },
        Method {
            label: "IFCA",
            paper: &[92.60],
            algorithm: ifca,
        },
        Method {
            label: "FedAvg",
            paper: &[89.84],
            algorithm: global,
        },
        Method {
            label: "FedAvg + momentum",
            paper: &[],
            algorithm: || cfl_mgd(1),
        },
    ],
};

/// One run's result.
struct Run {
    method: &'static str,
    size: (usize, usize),
    seed: u64,
    outcome: Outcome,
}

fn run_config(
    exp: &Experiment,
    method: &Method,
    size: (usize, usize),
    seed: u64,
    o: &Options,
) -> RunConfig {
    let (m, n) = size;
    // Local models are scored on their cluster's whole test set: expensive, so
    // only at the end.
    let eval_every = if method.label == "local" {
        0
    } else {
        o.eval_every
    };
    RunConfig {
        name: Some(exp.name.into()),
        seed,
        rounds: o.rounds,
        threads: o.threads,
        eval_every,
        eval_at: Vec::new(),
        test_pick: Default::default(),
        local_eval_models: o.local_eval_models,
        data: DataConfig::Mnist(MnistClustersSpec {
            transforms: vec![
                Transform::Identity,
                Transform::Rotate90,
                Transform::Rotate180,
                Transform::Rotate270,
            ],
            clients: m,
            points_per_client: n,
            test_clients: 40_000 / n,
            downsample: false,
            data_dir: Some(o.data_dir.clone()),
        }),
        model: ModelConfig::Mlp { hidden: 200 },
        algorithm: (method.algorithm)(),
    }
}

impl Experiment {
    /// The sizes `o` selects.
    fn sizes(&self, o: &Options) -> Vec<(usize, usize)> {
        self.sizes
            .iter()
            .copied()
            .filter(|s| o.sizes.is_empty() || o.sizes.contains(s))
            .collect()
    }

    /// The methods `o` selects.
    fn methods(&self, o: &Options) -> Vec<&Method> {
        self.methods
            .iter()
            .filter(|m| {
                o.methods.is_empty() || o.methods.iter().any(|x| x.eq_ignore_ascii_case(m.label))
            })
            .collect()
    }
}

/// Runs every selected (size, method, seed) of `exp`, showing progress.
fn run_all(exp: &Experiment, o: &Options) -> Result<Vec<Run>> {
    let (sizes, methods) = (exp.sizes(o), exp.methods(o));
    if sizes.is_empty() || methods.is_empty() {
        anyhow::bail!(
            "no run selected: sizes {:?} and methods {:?} are known",
            exp.sizes,
            exp.methods.iter().map(|m| m.label).collect::<Vec<_>>()
        );
    }
    let total = (sizes.len() * methods.len() * o.seeds) as u64;
    let bar = ProgressBar::new(total).with_style(
        ProgressStyle::with_template("{bar:40} {pos}/{len} runs  {msg}  {elapsed_precise}")
            .expect("valid template"),
    );
    let mut runs = Vec::new();
    for &size in &sizes {
        for seed in 1..=o.seeds as u64 {
            // The data set depends on (size, seed) only: build it once for all methods.
            let first = run_config(exp, methods[0], size, seed, o);
            let data = build_data(&first)?;
            for &method in &methods {
                bar.set_message(format!("{} (m, n) = {size:?} seed {seed}", method.label));
                let config = run_config(exp, method, size, seed, o);
                let outcome = execute(&config, &data, &mut |_| {}).with_context(|| {
                    format!("{} at (m, n) = {size:?}, seed {seed}", method.label)
                })?;
                runs.push(Run {
                    method: method.label,
                    size,
                    seed,
                    outcome,
                });
                bar.inc(1);
            }
        }
    }
    bar.finish_and_clear();
    Ok(runs)
}

/// Runs the experiment and writes `report.md`, `results.csv`, `curves.csv` and
/// the accuracy plots into `out`; returns the report's table.
pub fn reproduce(exp: &Experiment, o: &Options, out: &Path) -> Result<String> {
    let start = Instant::now();
    let runs = run_all(exp, o)?;
    std::fs::create_dir_all(out).with_context(|| format!("cannot create {}", out.display()))?;
    let mut results =
        String::from("method,m,n,seed,test_accuracy,cluster_accuracy,seconds_per_round\n");
    let mut curves = String::from("method,m,n,seed,round,test_accuracy,cluster_accuracy\n");
    for r in &runs {
        let last = r.outcome.final_record();
        let acc = last.and_then(|l| l.test_accuracy);
        let cl = last.and_then(|l| l.test_misclustering).map(|x| 1.0 - x);
        let spr = r.outcome.wall_seconds / o.rounds as f64;
        let f = |v: Option<f64>| v.map(|x| x.to_string()).unwrap_or_default();
        let _ = writeln!(
            results,
            "{},{},{},{},{},{},{spr}",
            r.method,
            r.size.0,
            r.size.1,
            r.seed,
            f(acc),
            f(cl)
        );
        for rec in r
            .outcome
            .records
            .iter()
            .filter(|x| x.replica == r.outcome.selected && x.test_accuracy.is_some())
        {
            let _ = writeln!(
                curves,
                "{},{},{},{},{},{},{}",
                r.method,
                r.size.0,
                r.size.1,
                r.seed,
                rec.round,
                f(rec.test_accuracy),
                f(rec.test_misclustering.map(|x| 1.0 - x))
            );
        }
    }
    std::fs::write(out.join("results.csv"), results)?;
    std::fs::write(out.join("curves.csv"), curves)?;
    let mut rows = Vec::new();
    for &size in &exp.sizes(o) {
        let si = exp
            .sizes
            .iter()
            .position(|s| *s == size)
            .expect("a known size");
        for method in exp.methods(o) {
            let accs: Vec<f64> = runs
                .iter()
                .filter(|r| r.method == method.label && r.size == size)
                .filter_map(|r| r.outcome.final_record().and_then(|l| l.test_accuracy))
                .map(|a| 100.0 * a)
                .collect();
            let (mean, std) = mean_std(&accs);
            let paper = method
                .paper
                .get(si)
                .map_or("-".to_string(), |p| format!("{p:.2}"));
            rows.push(vec![
                method.label.to_string(),
                format!("({}, {})", size.0, size.1),
                format!("{mean:.2} ± {std:.2} ({} seeds)", accs.len()),
                paper,
            ]);
        }
    }
    let table = render(
        &["method", "(m, n)", "ours: test accuracy %", "paper %"],
        &rows,
    );
    for (what, column, file) in [
        ("test accuracy", 0, "test_accuracy.svg"),
        ("cluster accuracy", 1, "cluster_accuracy.svg"),
    ] {
        let selected = exp.sizes(o);
        let size = selected[selected.len() / 2];
        let series: Vec<Series> = exp
            .methods(o)
            .into_iter()
            .map(|m| {
                let run = runs
                    .iter()
                    .find(|r| r.method == m.label && r.size == size && r.seed == 1);
                let points = run
                    .map(|r| {
                        r.outcome
                            .records
                            .iter()
                            .filter(|x| x.replica == r.outcome.selected)
                            .filter_map(|x| {
                                let v = if column == 0 {
                                    x.test_accuracy
                                } else {
                                    x.test_misclustering.map(|e| 1.0 - e)
                                };
                                v.map(|v| (x.round as f64 + 1.0, v))
                            })
                            .collect()
                    })
                    .unwrap_or_default();
                Series {
                    label: m.label.to_string(),
                    points,
                }
            })
            .filter(|s| !s.points.is_empty())
            .collect();
        line_chart(
            &out.join(file),
            &format!("{what}, (m, n) = ({}, {}), seed 1", size.0, size.1),
            "round",
            what,
            &series,
        )?;
    }
    let report = format!(
        "# {title}\n\nMLP 784-200-10, k = 4 rotations, full participation, tau = {TAU} full-batch \
         local steps at lr {LR}, {rounds} rounds, {seeds} seed(s), test clients of n images \
         (m_test·n = 40,000); CFL-MGD momentum 0.9. Test accuracy: each test client uses the model \
         with the lowest loss on its data (local: each model on its cluster's test data, averaged). \
         Took {secs:.0} s.\n\n{table}\n`results.csv` has every run (with cluster accuracy), \
         `curves.csv` the accuracy curves, `test_accuracy.svg` and `cluster_accuracy.svg` plot them.\n",
        title = exp.title,
        rounds = o.rounds,
        seeds = o.seeds,
        secs = start.elapsed().as_secs_f64(),
    );
    std::fs::write(out.join("report.md"), report)?;
    Ok(table)
}
