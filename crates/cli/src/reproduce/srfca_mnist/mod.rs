//! The SR-FCA paper's MNIST experiments (Tables 1, 2 and 4): inverted MNIST (2
//! clusters) and rotated MNIST (4 clusters), m = 100 clients of n = 600 images,
//! full participation, MLP 784-200-10; SR-FCA with 2 REFINE steps against
//! Local, Global, CFL, Local-KMeans, IFCA, FedSoft and ONE_SHOT-IFCA.
//!
//! Local training follows the paper's public code: every method trains with
//! Adam on minibatches of 50, the moments kept per client; SR-FCA's REFINE runs
//! 5 local steps per round and takes the trimmed mean of the updates. Rounds:
//! 280 (inverted) and 250 (rotated), REFINE 56 and 42 rounds, as the public
//! code. Test accuracy: each training client's model (its cluster's, or its
//! own) on the test data of its true cluster, averaged over the clients.

use std::path::PathBuf;

use anyhow::{Context, Result};
use indicatif::{ProgressBar, ProgressStyle};

use fedcluster_algorithms::common::trainer::Optimizer;
use fedcluster_algorithms::srfca::{AfterOneShot, Distance, Threshold};
use fedcluster_algorithms::{
    Aggregation, InitScheme, cfl, fedavg, fedsoft, ifca, local, oneshot, srfca,
};
use fedcluster_data::{MnistClustersSpec, Transform};

use crate::config::{AlgorithmConfig, DataConfig, ModelConfig, RunConfig};
use crate::experiment::{build_data, execute};
use fedcluster_sim::record::TestPick;

/// Options of the reproduction.
#[derive(Debug, Clone)]
pub struct Options {
    /// Directory of the MNIST IDX files.
    pub data_dir: PathBuf,
    /// Seeds per (setting, method).
    pub seeds: usize,
    /// Rounds per run (SR-FCA's clustering rounds count among them); `None`:
    /// each setting's own (280 inverted, 250 rotated).
    pub rounds: Option<usize>,
    /// Worker threads (0: one per core).
    pub threads: usize,
    /// Only these methods, by label, case-insensitive (all when empty).
    pub methods: Vec<String>,
}

impl Options {
    /// The methods selected, in the report's order.
    fn selected(&self) -> Vec<&'static str> {
        METHODS
            .iter()
            .copied()
            .filter(|m| {
                self.methods.is_empty() || self.methods.iter().any(|x| x.eq_ignore_ascii_case(m))
            })
            .collect()
    }

    /// The paper's protocol: 5 seeds, each setting's rounds.
    pub fn full(data_dir: PathBuf, threads: usize) -> Self {
        Self {
            data_dir,
            seeds: 5,
            rounds: None,
            threads,
            methods: Vec::new(),
        }
    }

    /// A smoke run: 1 seed, 12 rounds.
    pub fn quick(data_dir: PathBuf, threads: usize) -> Self {
        Self {
            data_dir,
            seeds: 1,
            rounds: Some(12),
            threads,
            methods: Vec::new(),
        }
    }
}

const M: usize = 100;
const N: usize = 600;
const TEST_CLIENTS: usize = 32;
const ADAM_LR: f32 = 1e-3;
const BATCH: usize = 50;
const LOCAL_STEPS: usize = 5;
/// ONE_SHOT's and Local-KMeans' local training steps.
const ONE_SHOT_STEPS: usize = 250;
/// SR-FCA's trimming level β.
const TRIM: f64 = 0.15;
/// SR-FCA's REFINE steps.
const REFINE_STEPS: usize = 2;

/// One setting and the paper's numbers for it.
struct Setting {
    label: &'static str,
    transforms: &'static [Transform],
    /// Rounds (the public code's iterations).
    rounds: usize,
    /// SR-FCA's TrimmedMeanGD rounds per REFINE step.
    refine_rounds: usize,
    /// SR-FCA's λ as a quantile of the pairwise cross-cluster losses.
    lambda_quantile: f64,
    /// Paper, Table 1 (test accuracy %) by method label.
    accuracy: &'static [(&'static str, f64)],
    /// Paper, Table 2 (misclustering) by method label.
    misclustering: &'static [(&'static str, f64)],
    /// Paper, Table 4: SR-FCA after the first and second REFINE (mean, std).
    after_refine: [(f64, f64); 2],
}

const SETTINGS: &[Setting] = &[
    Setting {
        label: "inverted MNIST (k = 2)",
        transforms: &[Transform::Identity, Transform::Invert],
        rounds: 280,
        refine_rounds: 56,
        lambda_quantile: 0.25,
        accuracy: &[
            ("SR-FCA", 92.03),
            ("Local", 76.52),
            ("Global", 88.61),
            ("CFL", 88.30),
            ("Local-KMeans", 10.56),
            ("IFCA", 91.55),
        ],
        misclustering: &[
            ("SR-FCA", 0.0),
            ("CFL", 0.08),
            ("Local-KMeans", 0.36),
            ("IFCA", 0.0),
        ],
        after_refine: [(91.88, 0.39), (92.03, 0.30)],
    },
    Setting {
        label: "rotated MNIST (k = 4)",
        transforms: &[
            Transform::Identity,
            Transform::Rotate90,
            Transform::Rotate180,
            Transform::Rotate270,
        ],
        rounds: 250,
        refine_rounds: 42,
        lambda_quantile: 0.1,
        accuracy: &[
            ("SR-FCA", 91.66),
            ("Local", 85.55),
            ("Global", 80.88),
            ("CFL", 80.47),
            ("Local-KMeans", 10.35),
            ("IFCA", 91.80),
        ],
        misclustering: &[
            ("SR-FCA", 0.0),
            ("CFL", 0.14),
            ("Local-KMeans", 0.28),
            ("IFCA", 0.0),
        ],
        after_refine: [(91.63, 0.12), (91.66, 0.13)],
    },
];

const METHODS: &[&str] = &[
    "SR-FCA",
    "Local",
    "Global",
    "CFL",
    "Local-KMeans",
    "IFCA",
    "FedSoft",
    "ONE_SHOT-IFCA",
];

fn adam() -> Optimizer {
    Optimizer::Adam { batch_size: BATCH }
}

impl Setting {
    fn k(&self) -> usize {
        self.transforms.len()
    }

    fn rounds(&self, o: &Options) -> usize {
        o.rounds.unwrap_or(self.rounds)
    }

    /// The setting's REFINE rounds, or a fifth of overridden rounds.
    fn refine_rounds(&self, o: &Options) -> usize {
        o.rounds.map_or(self.refine_rounds, |r| (r / 5).max(1))
    }

    fn srfca_config(&self, o: &Options, then: AfterOneShot) -> srfca::Config {
        srfca::Config {
            threshold: Threshold::Quantile {
                value: self.lambda_quantile,
            },
            min_size: 2,
            distance: Distance::CrossLoss,
            local_steps: ONE_SHOT_STEPS,
            local_lr: ADAM_LR,
            local_optimizer: adam(),
            refine_steps: REFINE_STEPS,
            refine_rounds: self.refine_rounds(o),
            trim: TRIM,
            lr: ADAM_LR,
            optimizer: adam(),
            refine_local_steps: LOCAL_STEPS,
            init: InitScheme::Model,
            then,
        }
    }

    /// Rounds (from 1) after which Table 4's intermediate accuracies are
    /// read: ONE_SHOT's local models, then the end of each REFINE (after its
    /// TrimmedMeanGD, RECLUSTER and MERGE; the cross-loss distance spends one
    /// evaluation round per REFINE).
    fn table4_rounds(&self, o: &Options) -> Vec<usize> {
        let r = self.refine_rounds(o);
        std::iter::once(1)
            .chain((1..=REFINE_STEPS).map(|step| 2 + step * (r + 1)))
            .filter(|&round| round <= self.rounds(o))
            .collect()
    }

    fn algorithm(&self, method: &str, o: &Options) -> AlgorithmConfig {
        let k = self.k();
        match method {
            "SR-FCA" => AlgorithmConfig::Srfca(self.srfca_config(o, AfterOneShot::Refine)),
            "ONE_SHOT-IFCA" => AlgorithmConfig::Srfca(self.srfca_config(
                o,
                AfterOneShot::Ifca {
                    local_steps: LOCAL_STEPS,
                },
            )),
            "Local" => AlgorithmConfig::Local(local::Config {
                lr: ADAM_LR,
                local_steps: LOCAL_STEPS,
                participation: 1.0,
                init: InitScheme::Model,
                optimizer: adam(),
            }),
            "Global" => AlgorithmConfig::Global(fedavg::Config {
                aggregation: Aggregation::Model,
                lr: ADAM_LR,
                local_steps: LOCAL_STEPS,
                participation: 1.0,
                init: InitScheme::Model,
                optimizer: adam(),
            }),
            // ε₁, ε₂ are not tuned; the update norms of 5 Adam steps are about
            // lr·√p·5 ≈ 2.
            "CFL" => AlgorithmConfig::Cfl(cfl::Config {
                lr: ADAM_LR,
                local_steps: LOCAL_STEPS,
                eps1: 1.0,
                eps2: 1.6,
                warmup_rounds: 20,
                min_split_size: 2,
                init: InitScheme::Model,
                optimizer: adam(),
            }),
            // Local models from independent random starts (as separately trained
            // local models are), k-means on their weights, FedAvg per cluster.
            "Local-KMeans" => AlgorithmConfig::LocalKmeans(oneshot::Config {
                clusters: k,
                erm_steps: ONE_SHOT_STEPS,
                erm_lr: ADAM_LR,
                erm_init: InitScheme::Model,
                kmeans_restarts: 10,
                aggregation: Aggregation::Model,
                lr: ADAM_LR,
                local_steps: LOCAL_STEPS,
                participation: 1.0,
                optimizer: adam(),
            }),
            "IFCA" => AlgorithmConfig::Ifca(ifca::Config {
                clusters: k,
                aggregation: Aggregation::Model,
                lr: ADAM_LR.into(),
                local_steps: LOCAL_STEPS,
                participation: 1.0,
                restarts: 1,
                init: InitScheme::Model,
                stable_rounds: 0,
                weight_sharing: false,
                momentum: 0.0,
                optimizer: adam(),
            }),
            _ => AlgorithmConfig::Fedsoft(fedsoft::Config {
                clusters: k,
                lr: ADAM_LR,
                mu: 0.1,
                local_steps: LOCAL_STEPS,
                estimate_every: 5,
                smoothing: 1e-4,
                participation: 1.0,
                init: InitScheme::Model,
                optimizer: adam(),
            }),
        }
    }

    fn config(&self, method: &str, seed: u64, o: &Options) -> RunConfig {
        RunConfig {
            name: Some("srfca-mnist".into()),
            seed,
            rounds: self.rounds(o),
            threads: o.threads,
            eval_every: 0,
            eval_at: if method == "SR-FCA" {
                self.table4_rounds(o)
            } else {
                Vec::new()
            },
            test_pick: TestPick::Assigned,
            local_eval_models: 0,
            data: DataConfig::Mnist(MnistClustersSpec {
                transforms: self.transforms.to_vec(),
                clients: M,
                points_per_client: N,
                test_clients: TEST_CLIENTS,
                downsample: false,
                data_dir: Some(o.data_dir.clone()),
            }),
            model: ModelConfig::Mlp { hidden: 200 },
            algorithm: self.algorithm(method, o),
        }
    }
}

/// One run's final numbers.
struct Run {
    setting: usize,
    method: &'static str,
    accuracy: Option<f64>,
    misclustering: Option<f64>,
    clusters: Option<usize>,
    /// SR-FCA only: test accuracy after each of [`Setting::table4_rounds`].
    intermediate: Vec<Option<f64>>,
    seconds: f64,
}

fn run_all(o: &Options) -> Result<Vec<Run>> {
    let methods = o.selected();
    if methods.is_empty() {
        anyhow::bail!("no run selected: the methods are {METHODS:?}");
    }
    let bar = ProgressBar::new((SETTINGS.len() * methods.len() * o.seeds) as u64).with_style(
        ProgressStyle::with_template("{bar:40} {pos}/{len} runs  {msg}  {elapsed_precise}")
            .expect("valid template"),
    );
    let mut runs = Vec::new();
    for (si, setting) in SETTINGS.iter().enumerate() {
        for seed in 1..=o.seeds as u64 {
            let data = build_data(&setting.config("Global", seed, o))?;
            for &method in &methods {
                bar.set_message(format!("{} {method} seed {seed}", setting.label));
                let config = setting.config(method, seed, o);
                let outcome = execute(&config, &data, &mut |_| {})
                    .with_context(|| format!("{method} on {}, seed {seed}", setting.label))?;
                let last = outcome.final_record();
                let intermediate = config
                    .eval_at
                    .iter()
                    .map(|&round| {
                        outcome
                            .records
                            .iter()
                            .find(|r| r.round + 1 == round && r.replica == outcome.selected)
                            .and_then(|r| r.test_accuracy)
                    })
                    .collect();
                runs.push(Run {
                    setting: si,
                    method,
                    accuracy: last.and_then(|r| r.test_accuracy),
                    misclustering: last.and_then(|r| r.majority_misclustering),
                    clusters: last.and_then(|r| r.clusters_found),
                    intermediate,
                    seconds: outcome.wall_seconds,
                });
                bar.inc(1);
            }
        }
    }
    bar.finish_and_clear();
    Ok(runs)
}

mod report;

pub use report::reproduce;
