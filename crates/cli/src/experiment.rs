//! Executes one configured experiment in process: builds the data, the model and
//! the algorithm's halves, runs the engine and collects metric records.

use std::time::Instant;

use anyhow::{Context, Result, bail};

use fedcluster_algorithms::twophase::{self, Start};
use fedcluster_algorithms::{
    Aggregation, cfl, fedavg, fedsoft, ifca, local, oneshot, oracle, srfca,
};
use fedcluster_core::{Batch, ClientHalf, Model, ServerHalf};
use fedcluster_data::{FederatedData, Task};
use fedcluster_models::{Cnn, LinearRegression, LogisticRegression, Mlp};
use fedcluster_sim::record::{RoundRecord, TestSet, Truth, records};
use fedcluster_sim::{InProcess, Transport, run};
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::config::{CheckedAlgorithm, DataConfig, ModelConfig, RunConfig};

/// Everything a run produced.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// One record per replica per round, round-major.
    pub records: Vec<RoundRecord>,
    /// The replica the algorithm selected at the end.
    pub selected: usize,
    /// Number of replicas.
    pub replicas: usize,
    /// Wall-clock seconds of the federated rounds.
    pub wall_seconds: f64,
}

impl Outcome {
    /// The selected replica's record of the last round.
    pub fn final_record(&self) -> Option<&RoundRecord> {
        self.records
            .iter()
            .rev()
            .find(|r| r.replica == self.selected)
    }

    /// Every replica's record of the last round.
    pub fn final_records(&self) -> Vec<&RoundRecord> {
        let last = self.records.last().map_or(0, |r| r.round);
        self.records.iter().filter(|r| r.round == last).collect()
    }
}

/// Generates the configured data set.
pub fn build_data(config: &RunConfig) -> Result<FederatedData> {
    let data = match &config.data {
        DataConfig::IfcaSynthetic(spec) => {
            fedcluster_data::synthetic::ifca_synthetic(spec, config.seed)
        }
        DataConfig::MixedRegression(spec) => {
            fedcluster_data::synthetic::mixed_regression(spec, config.seed)
        }
        DataConfig::Mnist(spec) => {
            let mnist = fedcluster_data::load_mnist(mnist_dir(&spec.data_dir)?)?;
            fedcluster_data::mnist_clusters(&mnist, spec, config.seed)
        }
        DataConfig::MnistAnchored(spec) => {
            let mnist = fedcluster_data::load_mnist(mnist_dir(&spec.data_dir)?)?;
            fedcluster_data::mnist_anchored(&mnist, spec, config.seed)
        }
    }
    .context("cannot build the data set")?;
    data.validate().context("the data set is malformed")?;
    Ok(data)
}

/// The MNIST directory a config names.
fn mnist_dir(dir: &Option<std::path::PathBuf>) -> Result<&std::path::Path> {
    dir.as_deref().ok_or_else(|| {
        anyhow::anyhow!(
            "field `data.data_dir`: MNIST needs the directory of its IDX files \
             (set it or pass --data-dir DIR)"
        )
    })
}

/// Builds the configured model for `data`.
pub fn build_model(config: &RunConfig, data: &FederatedData) -> Result<Box<dyn Model>> {
    Ok(match (config.model, &data.task) {
        (ModelConfig::Linear, Task::Regression) => Box::new(LinearRegression::new(data.dim)?),
        (ModelConfig::Logistic, Task::Classification { classes }) => {
            Box::new(LogisticRegression::new(data.dim, *classes)?)
        }
        (ModelConfig::Mlp { hidden }, Task::Classification { classes }) => {
            Box::new(Mlp::new(data.dim, hidden, *classes)?)
        }
        (
            ModelConfig::Cnn {
                channels,
                kernel,
                conv1,
                conv2,
                hidden,
            },
            Task::Classification { classes },
        ) => {
            let pixels = data.dim / channels.max(1);
            let side = (pixels as f64).sqrt().round() as usize;
            if side * side * channels != data.dim {
                bail!(
                    "field `model.channels`: {} features are not square images of {channels} channel(s)",
                    data.dim
                );
            }
            let shape = Cnn {
                height: side,
                width: side,
                channels,
                kernel,
                conv1,
                conv2,
                hidden,
                classes: *classes,
            };
            Box::new(Cnn::new(shape).map_err(|e| anyhow::anyhow!("field `model`: {e}"))?)
        }
        (ModelConfig::Cnn { .. }, _) => {
            bail!("field `model.kind`: `cnn` needs a classification data set")
        }
        (ModelConfig::Linear, _) => {
            bail!("field `model.kind`: `linear` needs a regression data set")
        }
        (ModelConfig::Mlp { .. }, _) => {
            bail!("field `model.kind`: `mlp` needs a classification data set")
        }
        (ModelConfig::Logistic, _) => {
            bail!("field `model.kind`: `logistic` needs a classification data set")
        }
    })
}

/// What the caller sees after each round.
#[derive(Debug, Clone, Copy)]
pub struct Progress {
    /// Round index, from 0.
    pub round: usize,
    /// Training loss of the best replica so far.
    pub train_loss: Option<f64>,
}

/// A progress bar over a run's rounds showing the training loss (hidden when
/// `quiet`).
pub fn round_bar(rounds: usize, quiet: bool) -> indicatif::ProgressBar {
    let bar = if quiet {
        indicatif::ProgressBar::hidden()
    } else {
        indicatif::ProgressBar::new(rounds as u64)
    };
    bar.set_style(
        indicatif::ProgressStyle::with_template(
            "{bar:40} round {pos}/{len} {msg} [{elapsed_precise}]",
        )
        .expect("template"),
    );
    bar
}

/// Moves `bar` to the round `p` reports.
pub fn show_progress(bar: &indicatif::ProgressBar, p: Progress) {
    bar.set_position(p.round as u64 + 1);
    if let Some(l) = p.train_loss {
        bar.set_message(format!("train loss {l:.4}"));
    }
}

/// Runs `config` on `data` in process, calling `progress` after every round.
pub fn execute(
    config: &RunConfig,
    data: &FederatedData,
    progress: &mut dyn FnMut(Progress),
) -> Result<Outcome> {
    let model = build_model(config, data)?;
    let driver = Driver::new(config, data, model.as_ref());
    with_halves(
        config,
        data,
        model.as_ref(),
        InProcessRun { driver, progress },
    )
}

/// Receives the configured algorithm's server half and a client half (every
/// client's starts as a clone of it): runs them in process, as a networked
/// coordinator, or as one networked client.
pub trait Halves {
    /// What running them gives.
    type Output;
    /// Runs the two halves.
    fn run<S, C>(self, server: S, client: C) -> Result<Self::Output>
    where
        S: ServerHalf,
        C: ClientHalf<Down = S::Down, Up = S::Up> + Clone,
        S::Down: Serialize + DeserializeOwned,
        S::Up: Serialize + DeserializeOwned;
}

/// Builds the halves of `config`'s algorithm for `data` and `model` and hands
/// them to `halves`.
pub fn with_halves<H: Halves>(
    config: &RunConfig,
    data: &FederatedData,
    model: &dyn Model,
    halves: H,
) -> Result<H::Output> {
    let algorithm = config
        .checked_algorithm()
        .map_err(|e| anyhow::anyhow!("field `algorithm.{}`: {}", e.field, e.message))?;
    let m = data.train.len();
    let seed = config.seed;
    match algorithm {
        CheckedAlgorithm::Ifca(c) => {
            if c.weight_sharing && model.head_start() == 0 {
                bail!(
                    "field `algorithm.weight_sharing`: model `{}` has a single layer, there is nothing to share",
                    model.name()
                );
            }
            let client = ifca::IfcaClient::new(c.aggregation, c.local_steps)
                .with_momentum(c.momentum)
                .with_optimizer(c.optimizer);
            halves.run(ifca::IfcaServer::new(c, model, m, seed), client)
        }
        CheckedAlgorithm::Oneshot(c) => {
            let client = oneshot::OneShotClient::new(&c);
            halves.run(oneshot::OneShotServer::new(c, m, seed), client)
        }
        CheckedAlgorithm::Global(c) => {
            let client = fedavg::FedAvgClient::new(c.aggregation, c.lr, c.local_steps)
                .with_optimizer(c.optimizer);
            let server = fedavg::FedAvgServer::new(c, model, 1, vec![0; m], seed)?;
            halves.run(server, client)
        }
        CheckedAlgorithm::Oracle(c) => {
            let client = fedavg::FedAvgClient::new(c.aggregation, c.lr, c.local_steps)
                .with_optimizer(c.optimizer);
            let truth = oracle::TrueClusters {
                clusters: data.truth.clusters,
                labels: data.truth.train_labels.clone(),
            };
            let server = oracle::server(c, model, truth, seed)?;
            halves.run(server, client)
        }
        CheckedAlgorithm::Twophase(c) => {
            let client = twophase::TwoPhaseClient::new(&c);
            let server = if c.start == Start::Labels {
                let labels = data.truth.train_labels.clone();
                twophase::TwoPhaseServer::with_labels(c, model, labels, seed)?
            } else if c.start == Start::Truth {
                let Some(truth) = data.truth.params.as_ref() else {
                    bail!(
                        "field `algorithm.start`: `truth` needs a data set with known cluster parameters"
                    );
                };
                if truth.len() != c.clusters {
                    bail!(
                        "field `algorithm.clusters`: `start = \"truth\"` needs one model per true cluster ({}), got {}",
                        truth.len(),
                        c.clusters
                    );
                }
                twophase::TwoPhaseServer::with_models(c, truth.concat(), model.num_params(), m)
            } else {
                let sizes = data.train.iter().map(|cl| cl.len()).collect();
                twophase::TwoPhaseServer::new(c, model, sizes, seed)?
            };
            halves.run(server, client)
        }
        CheckedAlgorithm::Fedsoft(c) => {
            let client = fedsoft::FedSoftClient::new(&c);
            let server = fedsoft::FedSoftServer::new(c, model, m, seed);
            halves.run(server, client)
        }
        CheckedAlgorithm::Cfl(c) => {
            let client = cfl::CflClient::new(Aggregation::Model, c.lr, c.local_steps)
                .with_optimizer(c.optimizer);
            let server = cfl::CflServer::new(c, model, m, seed);
            halves.run(server, client)
        }
        CheckedAlgorithm::Srfca(c) => {
            let client = srfca::SrFcaClient::new(&c);
            let server = srfca::SrFcaServer::new(c, model, m, seed)?;
            halves.run(server, client)
        }
        CheckedAlgorithm::Local(c) => {
            let client =
                local::LocalClient::new(c.lr, c.local_steps, c.init).with_optimizer(c.optimizer);
            halves.run(local::LocalServer::new(c, model, m), client)
        }
    }
}

/// Runs the engine over a transport and turns its events into records.
pub(crate) struct Driver<'a> {
    config: &'a RunConfig,
    data: &'a FederatedData,
    model: &'a dyn Model,
    train: Vec<Batch<'a>>,
    test: Vec<Batch<'a>>,
}

/// The in-process run: every client half in this process.
struct InProcessRun<'a, 'p> {
    driver: Driver<'a>,
    progress: &'p mut dyn FnMut(Progress),
}

impl Halves for InProcessRun<'_, '_> {
    type Output = Outcome;
    fn run<S, C>(self, server: S, client: C) -> Result<Outcome>
    where
        S: ServerHalf,
        C: ClientHalf<Down = S::Down, Up = S::Up> + Clone,
        S::Down: Serialize + DeserializeOwned,
        S::Up: Serialize + DeserializeOwned,
    {
        let d = &self.driver;
        let mut transport = InProcess::new(
            vec![client; d.data.train.len()],
            d.train.clone(),
            d.model,
            d.config.seed,
            d.config.threads,
        )?;
        d.drive(server, &mut transport, self.progress)
    }
}

impl<'a> Driver<'a> {
    pub(crate) fn new(
        config: &'a RunConfig,
        data: &'a FederatedData,
        model: &'a dyn Model,
    ) -> Self {
        Self {
            config,
            data,
            model,
            train: data.train.iter().map(|c| c.batch(data.dim)).collect(),
            test: data.test.iter().map(|c| c.batch(data.dim)).collect(),
        }
    }

    /// Runs `server` for the configured rounds over `transport`, recording
    /// every round.
    pub(crate) fn drive<S, T>(
        &self,
        mut server: S,
        transport: &mut T,
        progress: &mut dyn FnMut(Progress),
    ) -> Result<Outcome>
    where
        S: ServerHalf,
        T: Transport<S::Down, S::Up>,
    {
        let cfg = self.config;
        let truth = Truth {
            clusters: self.data.truth.clusters,
            labels: &self.data.truth.train_labels,
            test_labels: &self.data.truth.test_labels,
            params: self.data.truth.params.as_deref(),
        };
        let test = TestSet {
            model: self.model,
            clients: &self.test,
            pick: cfg.test_pick,
            local_models: cfg.local_eval_models,
        };
        let mut all = Vec::new();
        let (mut selected, mut replicas) = (0, 0);
        let start = Instant::now();
        run(&mut server, transport, cfg.rounds, cfg.seed, |event| {
            let last = event.round + 1 == cfg.rounds;
            let periodic = (cfg.eval_every > 0 && (event.round + 1) % cfg.eval_every == 0)
                || cfg.eval_at.contains(&(event.round + 1));
            let evaluate = (last || periodic) && !self.test.is_empty();
            let recs = records(&event, &truth, evaluate.then_some(&test));
            selected = event.snapshot.selected;
            replicas = recs.len();
            progress(Progress {
                round: event.round,
                train_loss: recs.get(selected).and_then(|r| r.train_loss),
            });
            all.extend(recs);
            Ok(())
        })
        .context("federated run failed")?;
        Ok(Outcome {
            records: all,
            selected,
            replicas,
            wall_seconds: start.elapsed().as_secs_f64(),
        })
    }
}
