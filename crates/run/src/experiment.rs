//! Executes one configured experiment in process: builds the data, the model and
//! the algorithm's halves, runs the engine and collects metric records.

use std::cell::RefCell;
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context, Result, anyhow};

use fedcluster_algorithms::{Algorithm, Checked, FieldError, Setup, TrueClusters, Visit};
use fedcluster_core::{Model, ServerHalf};
use fedcluster_data::table::Files;
use fedcluster_data::{DataConfig, DataError, DataSet, DataView, FederatedData};
use fedcluster_sim::parts::Interrupted;
use fedcluster_sim::record::{TestPick, TestSet, Truth, records};
use fedcluster_sim::{InProcess, RoundEvent, Rounds, Transport, run_in_parts};

use crate::checkpoint::{self, Whose};

use crate::config::{RunConfig, data_root};
use crate::mid_round::{MidRound, RunParts, WholeRounds, WithRecords};
use crate::outcome::{Outcome, SoFar};

/// How an in-process run is driven besides its config: `ready` is called
/// once the halves and the transport are built, just before the first round
/// (everything that can reject the config has passed: it may create the run
/// directory); `progress` after every round; `checkpoint` says when to
/// checkpoint and whether to resume.
pub struct Control<'p> {
    /// Called once, just before the first round.
    pub ready: &'p mut dyn FnMut() -> Result<()>,
    /// Called after every round.
    pub progress: &'p mut dyn FnMut(Progress),
    /// Checkpointing (`fedcluster run`; `None`: never).
    pub checkpoint: Option<crate::checkpoint::Policy>,
}

/// Synthetic data sets whose samples would take more than this many bytes
/// are generated client by client when a client is asked for, instead of
/// stored (the same samples either way).
pub const STORE_SYNTHETIC_UP_TO_BYTES: u128 = 1 << 30;

/// The configured data set: stored, or, for a synthetic one larger than
/// [`STORE_SYNTHETIC_UP_TO_BYTES`], generated on demand.
pub fn build_data_set(config: &RunConfig) -> Result<DataSet> {
    Ok(match generate(config)? {
        DataSet::Generated(g) if g.stored_bytes() > STORE_SYNTHETIC_UP_TO_BYTES => {
            DataSet::Generated(g)
        }
        DataSet::Generated(g) => DataSet::Stored(validated(g.materialize())?),
        DataSet::Stored(data) => DataSet::Stored(validated(data)?),
        // Consistent by construction (the same partition `build_data` validates).
        DataSet::Images(m) => DataSet::Images(m),
    })
}

/// Generates the configured data set, every client stored.
pub fn build_data(config: &RunConfig) -> Result<FederatedData> {
    validated(match generate(config)? {
        DataSet::Generated(g) => g.materialize(),
        DataSet::Stored(data) => data,
        DataSet::Images(m) => m.materialize(),
    })
}

/// The configured data set, its synthetic clients not generated yet.
pub(crate) fn generate(config: &RunConfig) -> Result<DataSet> {
    let data = located(&config.data);
    data.build(config.seed).map_err(|e| data_error(&data, e))
}

/// `data` with the directory of its files resolved: `data.data_dir` (which
/// `--data-dir` overrides), else `<data root>/<dir_name>` (see
/// [`crate::config::data_root`]). Every data set a run builds is located
/// here, so `fedcluster run`, `reproduce`, `serve`, `join` and the Python
/// package look in the same places. The config itself is left as given (its
/// `config.toml` in a run directory names no directory it was not given).
pub(crate) fn located(data: &DataConfig) -> DataConfig {
    let mut data = data.clone();
    data.resolve_data_dir(&data_root());
    data
}

/// A data set's error as the user sees it: files that are not there (no
/// directory, or a file missing from it) give one line naming the data set,
/// the directory and every way to give it (`data.data_dir`, `--data-dir`,
/// `FEDCLUSTER_DATA`, `fedcluster data fetch`); a missing client names
/// itself; anything else (files that are there but malformed) is an error
/// building the data set.
pub(crate) fn data_error(data: &DataConfig, e: DataError) -> anyhow::Error {
    let missing_file = match &e {
        DataError::Missing { .. } => true,
        DataError::Io { source, .. } => source.kind() == std::io::ErrorKind::NotFound,
        _ => false,
    };
    match (e, data.files(), data.data_dir()) {
        (e @ DataError::NoSuchClient { .. }, _, _) => anyhow::Error::new(e),
        (_, Some(files), Some(dir)) if !dir.is_dir() => no_data(&files, dir),
        (e, Some(files), Some(dir)) if missing_file => anyhow!(files.missing(
            &format!("{:#}", anyhow::Error::new(e)),
            fetched_elsewhere(&files, dir).as_deref()
        )),
        (DataError::Invalid { field, why }, _, _) if field == "data_dir" => {
            anyhow!("field `data.data_dir`: {why}")
        }
        (e, _, _) => anyhow::Error::new(e).context("cannot build the data set"),
    }
}

/// The directory `files` are read from outside a config (a benchmark):
/// `given` (`--data-dir`), else `<data root>/<dir_name>`; the error of
/// [`data_error`] when it is not a directory.
pub fn files_dir(files: &Files, given: Option<&Path>) -> Result<PathBuf> {
    let dir = files.resolve(given, &data_root());
    match dir.is_dir() {
        true => Ok(dir),
        false => Err(no_data(files, &dir)),
    }
}

/// The error for a data set whose directory `dir` is not there.
fn no_data(files: &Files, dir: &Path) -> anyhow::Error {
    let what = format!("no data in {}", dir.display());
    anyhow!(files.missing(&what, fetched_elsewhere(files, dir).as_deref()))
}

/// Where `fedcluster data fetch` writes `files` (`<data root>/<dir_name>`),
/// when that is not `dir`.
fn fetched_elsewhere(files: &Files, dir: &Path) -> Option<PathBuf> {
    Some(files.resolve(None, &data_root())).filter(|into| into != dir)
}

/// `data`, once it has passed [`FederatedData::validate`].
pub(crate) fn validated(data: FederatedData) -> Result<FederatedData> {
    data.validate().context("the data set is malformed")?;
    Ok(data)
}

/// Builds the configured model for `data` (see [`crate::model`]).
pub fn build_model(config: &RunConfig, data: &DataView<'_>) -> Result<Box<dyn Model>> {
    config.model.build(&data.input())
}

/// The model a run trains: `given`, a model built outside the config (the
/// Python package's model written in Python), once its input fits the
/// data's samples; else the config's `[model]` built for `data`.
pub fn model_for(
    config: &RunConfig,
    data: &DataView<'_>,
    given: Option<&std::sync::Arc<dyn Model>>,
) -> Result<std::sync::Arc<dyn Model>> {
    let Some(model) = given else {
        return Ok(build_model(config, data)?.into());
    };
    check_input_dim(model.as_ref(), data.input().dim)?;
    Ok(std::sync::Arc::clone(model))
}

/// Fails when `model` does not take samples of `dim` features.
pub fn check_input_dim(model: &dyn Model, dim: usize) -> Result<()> {
    if model.input_dim() != dim {
        anyhow::bail!(
            "the model takes {} features per sample, but the data's samples have {dim}",
            model.input_dim()
        );
    }
    Ok(())
}

/// What the caller sees after each round.
#[derive(Debug, Clone, Copy)]
pub struct Progress {
    /// Round index, from 0.
    pub round: usize,
    /// Training loss of the best replica so far.
    pub train_loss: Option<f64>,
}

/// Runs `config` on `data` in process, calling `progress` after every round.
pub fn execute(
    config: &RunConfig,
    data: &DataView<'_>,
    progress: &mut dyn FnMut(Progress),
) -> Result<Outcome> {
    execute_with(config, data, build_model(config, data)?.as_ref(), progress)
}

/// [`execute`] with the model already built (by [`build_model`], before
/// anything is written).
pub fn execute_with(
    config: &RunConfig,
    data: &DataView<'_>,
    model: &dyn Model,
    progress: &mut dyn FnMut(Progress),
) -> Result<Outcome> {
    let control = Control {
        ready: &mut || Ok(()),
        progress,
        checkpoint: None,
    };
    execute_controlled(config, data, model, control)
}

/// [`execute_with`] under `control` (see [`Control`]).
pub fn execute_controlled(
    config: &RunConfig,
    data: &DataView<'_>,
    model: &dyn Model,
    control: Control<'_>,
) -> Result<Outcome> {
    let sizes = client_sizes(data);
    let initial = initial_models(config, model)?;
    fedcluster_algorithms::common::recipe::check_layer_names(&config.algorithm, model)
        .map_err(algorithm_field)?;
    let run = InProcessRun {
        driver: Driver::new(config, data, model)?,
        setup: setup(config, data, model, &sizes, initial.as_deref()),
        control,
    };
    config.algorithm.visit(run).map_err(algorithm_field)?
}

/// What the algorithm's server may be built from: the model, the clients and
/// their sizes, the models it starts from (`init_from`), and the data's
/// ground truth as the setup's named inputs (read by the oracles only).
pub fn setup<'a>(
    config: &RunConfig,
    data: &DataView<'a>,
    model: &'a dyn Model,
    sizes: &'a [usize],
    initial_models: Option<&'a [Vec<f32>]>,
) -> Setup<'a> {
    Setup {
        client_sizes: Some(sizes),
        true_clusters: data.truth.is_known().then_some(TrueClusters {
            clusters: data.truth.clusters,
            labels: &data.truth.train_labels,
        }),
        true_models: data.truth.params.as_deref(),
        initial_models,
        ..Setup::new(model, data.train.num_clients(), config.seed)
    }
}

/// The models of the config's `init_from` file, checked against `model`.
pub fn initial_models(config: &RunConfig, model: &dyn Model) -> Result<Option<Vec<Vec<f32>>>> {
    config
        .init_from
        .as_deref()
        .map(|path| crate::model_file::load(path, model).context("field `init_from`"))
        .transpose()
}

/// Fails when the run starts from given models but algorithm `A` does not
/// start from server-drawn models.
pub fn check_starts_from<A: Algorithm>(config: &RunConfig, setup: &Setup<'_>) -> Result<()> {
    if setup.initial_models.is_some() && !A::STARTS_FROM_MODELS {
        anyhow::bail!(
            "field `init_from`: `{}` does not start from server models \
             (its clients train their own first); leave init_from out",
            config.algorithm.name()
        );
    }
    Ok(())
}

/// Training points per client.
pub fn client_sizes(data: &DataView<'_>) -> Vec<usize> {
    let train = &data.train;
    (0..train.num_clients()).map(|i| train.samples(i)).collect()
}

/// A config error of the algorithm table, as the CLI reports it.
pub fn algorithm_field(e: FieldError) -> anyhow::Error {
    anyhow::anyhow!("field `algorithm.{}`: {}", e.field, e.message)
}

/// The in-process run: every client half in this process.
struct InProcessRun<'a, 'p> {
    driver: Driver<'a>,
    setup: Setup<'a>,
    control: Control<'p>,
}

impl Visit for InProcessRun<'_, '_> {
    type Output = Result<Outcome>;
    fn visit<A: Algorithm>(self, config: Checked<A::Config>) -> Result<Outcome> {
        check_starts_from::<A>(self.driver.config, &self.setup)?;
        let client = A::client(&config);
        let forked_config = config.clone();
        let mut server = A::server(config, &self.setup).map_err(algorithm_field)?;
        let d = &self.driver;
        let mut transport = InProcess::with_prototype(
            client,
            d.data.train.as_ref(),
            d.model,
            d.config.seed,
            d.config.threads,
        )?;
        let Control {
            ready,
            progress,
            checkpoint,
        } = self.control;
        let threads = Some(transport.threads());
        let Some(policy) = checkpoint else {
            ready()?;
            let outcome = d.drive(server, &mut transport, progress)?;
            return Ok(Outcome { threads, ..outcome });
        };
        let key = checkpoint::config_key(d.config)?;
        let mut start = Start::default();
        let mut schedule = checkpoint::Schedule::new(policy.clone());
        let own = match policy.resume {
            true => checkpoint::load::<A::Server, A::Client>(&policy.path, &key, Whose::Own)?,
            false => None,
        };
        let (resumed, forked) = match (own, &policy.fork) {
            (Some(saved), _) => {
                let round = saved.next_round;
                schedule.saved_before(round);
                let part = checkpoint::load_part::<A::Server, A::Client>(
                    &policy.path,
                    &key,
                    round,
                    Whose::Own,
                )?;
                (Some((saved, part)), None)
            }
            (None, Some(fork)) => {
                let forked = crate::fork::load::<A>(fork, d.config, &forked_config)?;
                (Some(forked), Some(fork))
            }
            (None, None) => (None, None),
        };
        // A checkpoint that does not fit this run is refused before the run
        // directory is created.
        ready()?;
        if let Some(fork) = forked
            && let Some((saved, part)) = &resumed
        {
            // A fork's start becomes this run's own checkpoint before its
            // first round: a kill from now on resumes without the source.
            crate::fork::save_start(&mut schedule, &key, fork, saved, part.as_ref())?;
        }
        if let Some((saved, part)) = resumed {
            server = saved.server;
            transport.restore_halves(saved.clients)?;
            let round = saved.next_round;
            let interrupted = match part {
                Some(part) => {
                    transport.restore_halves(part.clients)?;
                    Some(Interrupted {
                        server: part.server,
                        done: part.done,
                        replied: part.replied,
                        bytes_up: part.bytes_up,
                        seconds: part.seconds,
                    })
                }
                None => None,
            };
            start = Start {
                first: round,
                so_far: saved.so_far,
                interrupted,
            };
        }
        let schedule = RefCell::new(schedule);
        let resumes_a_part = start.interrupted.is_some();
        let mut parts = MidRound::new(&schedule, &key, transport.threads(), resumes_a_part);
        let rounds = d.config.rounds;
        d.drive_from(
            server,
            &mut transport,
            progress,
            start,
            &mut parts,
            |round, s, t, so_far| {
                let mut schedule = schedule.borrow_mut();
                if !schedule.due(round, rounds) {
                    return Ok(());
                }
                schedule.save(&key, round + 1, so_far, s, t.stored_halves())
            },
        )
        .map(|outcome| Outcome { threads, ..outcome })
    }
}

/// Where a driven run starts: round `first` after the rounds `so_far`
/// recorded, perhaps within round `first` ([`Interrupted`]).
pub(crate) struct Start<S> {
    pub(crate) first: usize,
    pub(crate) so_far: SoFar,
    pub(crate) interrupted: Option<Interrupted<S>>,
}

impl<S> Start<S> {
    /// Seconds the run took before this start, every session of it: the
    /// rounds before `first` and, resumed within round `first`, that round's
    /// parts so far (which the checkpoint of the round's start does not hold).
    pub(crate) fn seconds_before(&self) -> f64 {
        let within = self.interrupted.as_ref().map_or(0.0, |cut| cut.seconds);
        self.so_far.wall_seconds + within
    }
}

impl<S> Default for Start<S> {
    fn default() -> Self {
        Self {
            first: 0,
            so_far: SoFar::default(),
            interrupted: None,
        }
    }
}

/// Runs the engine over a transport and turns its events into records.
pub(crate) struct Driver<'a> {
    pub(crate) config: &'a RunConfig,
    data: &'a DataView<'a>,
    pub(crate) model: &'a dyn Model,
}

impl<'a> Driver<'a> {
    /// Fails when `test_pick = "own"` or `"personal"` meets a data set
    /// without one test split per training client.
    pub(crate) fn new(
        config: &'a RunConfig,
        data: &'a DataView<'a>,
        model: &'a dyn Model,
    ) -> Result<Self> {
        let (train, test) = (data.train.num_clients(), data.test.num_clients());
        let own = match config.test_pick {
            TestPick::Own => Some("own"),
            TestPick::Personal => Some("personal"),
            _ => None,
        };
        if let Some(pick) = own
            && test != train
        {
            anyhow::bail!(
                "field `test_pick`: \"{pick}\" scores each training client on its own test split, \
                 but {} has {train} training and {test} test clients",
                data.name,
            );
        }
        Ok(Self {
            config,
            data,
            model,
        })
    }

    /// Runs `server` for the configured rounds over `transport`, recording
    /// every round.
    pub(crate) fn drive<S, T>(
        &self,
        server: S,
        transport: &mut T,
        progress: &mut dyn FnMut(Progress),
    ) -> Result<Outcome>
    where
        S: ServerHalf,
        T: Transport<S::Down, S::Up>,
    {
        let no_checkpoint = |_: usize, _: &S, _: &T, _: &SoFar| Ok(());
        self.drive_from(
            server,
            transport,
            progress,
            Start::default(),
            &mut WholeRounds,
            no_checkpoint,
        )
    }

    /// [`Driver::drive`] from `start` (a resumed run), splitting the rounds
    /// `parts` splits, calling `after` with the round, the server, the
    /// transport and the records so far once each round is recorded.
    pub(crate) fn drive_from<S, T>(
        &self,
        mut server: S,
        transport: &mut T,
        progress: &mut dyn FnMut(Progress),
        start: Start<S>,
        parts: &mut dyn RunParts<S, T>,
        mut after: impl FnMut(usize, &S, &T, &SoFar) -> Result<()>,
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
            clients: self.data.test.as_ref(),
            train: self.data.train.as_ref(),
            pick: cfg.test_pick,
            local_models: cfg.local_eval_models,
        };
        let earlier = start.seconds_before();
        let Start {
            first,
            so_far,
            interrupted,
        } = start;
        let start = Instant::now();
        let state = RefCell::new(so_far);
        let observe = |event: RoundEvent<'_>| {
            let last = event.round + 1 == cfg.rounds;
            let evaluate = cfg.evaluates(event.round) && self.data.test.num_clients() > 0;
            let recs = records(&event, &truth, evaluate.then_some(&test));
            let mut s = state.borrow_mut();
            s.selected = event.snapshot.selected;
            if last && let Some(replica) = event.snapshot.replicas.get(s.selected) {
                s.models = replica.models.iter().map(|m| m.to_vec()).collect();
            }
            s.replicas = recs.len();
            progress(Progress {
                round: event.round,
                train_loss: recs.get(s.selected).and_then(|r| r.train_loss),
            });
            s.records.extend(recs);
            s.wall_seconds = earlier + start.elapsed().as_secs_f64();
            Ok(())
        };
        let checkpoint = |round: usize, s: &S, t: &T| {
            after(round, s, t, &state.borrow()).map_err(|e| format!("{e:#}"))
        };
        let rounds = Rounds {
            first,
            rounds: cfg.rounds,
            seed: cfg.seed,
        };
        let mut parts = WithRecords {
            parts,
            so_far: &state,
        };
        run_in_parts(
            &mut server,
            transport,
            rounds,
            interrupted,
            &mut parts,
            observe,
            checkpoint,
        )
        .context("federated run failed")?;
        let s = state.into_inner();
        Ok(Outcome {
            records: s.records,
            selected: s.selected,
            replicas: s.replicas,
            wall_seconds: earlier + start.elapsed().as_secs_f64(),
            models: s.models,
            model: (self.model.name(), self.model.tensors()),
            threads: None,
            metrics_absent: crate::outcome::metrics_absent(self.data),
        })
    }
}
