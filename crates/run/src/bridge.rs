//! A run whose messages someone else carries (the Python package, a Flower
//! strategy): the configured server half runs on its own thread through the
//! same engine, records and outcome as `fedcluster run`, and its transport
//! hands each round's plan to the host as encoded messages (the networked
//! mode's wire form) and takes the host's encoded replies back.
//!
//! The host drives it round by round: [`Hosted::plan`] (the round's
//! messages), [`Hosted::receive`] for each reply, in any order (each is
//! decoded and checked on arrival), [`Hosted::finish`] (replies delivered to
//! the server in client-id order, as every transport does; the round's
//! records back), and [`Hosted::outcome`] after the last round.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::sync::mpsc::{Receiver, Sender, channel};
use std::thread::JoinHandle;

use anyhow::{Context, Result, anyhow, bail};
use serde::Serialize;
use serde::de::DeserializeOwned;

use fedcluster_algorithms::{Algorithm, Checked, Setup, Visit};
use fedcluster_core::{ClientId, Message, Model, RoundCtx, ServerHalf, TensorSpec};
use fedcluster_net::codec;
use fedcluster_sim::record::RoundRecord;
use fedcluster_sim::{EngineError, Transport, check_plan, refused_shape};

use crate::config::RunConfig;
use crate::experiment::{
    Driver, Start, algorithm_field, build_data_set, check_starts_from, client_sizes,
    initial_models, model_for, setup,
};
use crate::mid_round::WholeRounds;
use crate::outcome::{Outcome, SoFar};

/// One round's messages, as the host carries them.
#[derive(Debug, Clone)]
pub struct Planned {
    /// Round index, from 0.
    pub round: usize,
    /// Rounds of the run.
    pub rounds: usize,
    /// Clients of the federation.
    pub num_clients: usize,
    /// Each planned client and its encoded message, by client id.
    pub messages: Vec<(ClientId, Vec<u8>)>,
}

/// What a finished round produced.
#[derive(Debug, Clone)]
pub struct RoundDone {
    /// One record per replica (`metrics.csv`'s rows of this round).
    pub records: Vec<RoundRecord>,
    /// The replica the algorithm would return now.
    pub selected: usize,
    /// The selected replica's models after the round.
    pub models: Vec<Vec<f32>>,
    /// Replies the server refused (wrong shape for the round), with why;
    /// they counted as not received.
    pub rejected: Vec<(ClientId, String)>,
}

/// Engine thread to host.
enum ToHost {
    /// The server half is built: the run can start.
    Ready {
        num_clients: usize,
        model: (&'static str, Vec<TensorSpec>),
    },
    Plan(Planned),
    /// The verdict on the last reply the host passed.
    Checked(Result<(), String>),
    Round(RoundDone),
    /// The run ended: its outcome, or why it stopped.
    Done(Result<Outcome>),
}

/// Host to engine thread.
enum ToEngine {
    Reply(ClientId, Vec<u8>),
    Finish,
}

/// Where the host stands in the run.
enum Phase {
    /// Between rounds.
    Idle,
    /// A round is out: who was sent a message, who has replied.
    Open {
        round: usize,
        planned: BTreeSet<ClientId>,
        replied: BTreeSet<ClientId>,
    },
    /// The last round is done (or the run failed).
    Over,
}

/// The host's handle on a run whose messages it carries.
pub struct Hosted {
    to_engine: Option<Sender<ToEngine>>,
    from_engine: Receiver<ToHost>,
    engine: Option<JoinHandle<()>>,
    num_clients: usize,
    model: (&'static str, Vec<TensorSpec>),
    phase: Phase,
    outcome: Option<Result<Outcome>>,
}

impl Hosted {
    /// Builds the config's data set, model and server half on the engine
    /// thread; returns once the first round can be planned, or with the
    /// reason it cannot (the CLI's message).
    pub fn start(config: RunConfig) -> Result<Self> {
        Self::start_with_model(config, None)
    }

    /// [`Hosted::start`] with `model` (a model built outside the config)
    /// in place of the config's `[model]` where given.
    pub fn start_with_model(config: RunConfig, model: Option<Arc<dyn Model>>) -> Result<Self> {
        let (to_engine, engine_inbox) = channel();
        let (to_host, from_engine) = channel();
        let engine = std::thread::Builder::new()
            .name("fedcluster-engine".into())
            .spawn(move || {
                let outcome = run_engine(&config, model, &to_host, engine_inbox);
                let _ = to_host.send(ToHost::Done(outcome));
            })
            .context("cannot start the engine thread")?;
        let mut hosted = Hosted {
            to_engine: Some(to_engine),
            from_engine,
            engine: Some(engine),
            num_clients: 0,
            model: ("", Vec::new()),
            phase: Phase::Idle,
            outcome: None,
        };
        match hosted.next()? {
            ToHost::Ready { num_clients, model } => {
                hosted.num_clients = num_clients;
                hosted.model = model;
            }
            ToHost::Done(Err(e)) => return Err(e),
            _ => bail!("the engine started out of order"),
        }
        Ok(hosted)
    }

    /// Clients of the federation.
    pub fn num_clients(&self) -> usize {
        self.num_clients
    }

    /// The model's name and tensors (the layout of every model's values).
    pub fn model(&self) -> &(&'static str, Vec<TensorSpec>) {
        &self.model
    }

    /// Starts the next round: its messages, or `None` after the last round.
    pub fn plan(&mut self) -> Result<Option<Planned>> {
        match &self.phase {
            Phase::Idle => {}
            Phase::Open { round, .. } => {
                bail!("round {round} is still open: finish it before planning the next")
            }
            Phase::Over => return Ok(None),
        }
        match self.next()? {
            ToHost::Plan(planned) => {
                self.phase = Phase::Open {
                    round: planned.round,
                    planned: planned.messages.iter().map(|(id, _)| *id).collect(),
                    replied: BTreeSet::new(),
                };
                Ok(Some(planned))
            }
            other => self.unexpected(other).map(|()| None),
        }
    }

    /// Takes `client`'s encoded reply to the open round: refused (with
    /// why) when the client was not sent a message this round, has already
    /// replied, or sent bytes that do not decode to the algorithm's reply or
    /// carry a non-finite number.
    pub fn receive(&mut self, client: ClientId, reply: Vec<u8>) -> Result<()> {
        let Phase::Open {
            round,
            planned,
            replied,
        } = &mut self.phase
        else {
            bail!("no round is open: call plan first");
        };
        if !planned.contains(&client) {
            bail!("round {round}: client {client} was not sent a message this round");
        }
        if replied.contains(&client) {
            bail!("round {round}: client {client} has already replied");
        }
        let round = *round;
        self.send(ToEngine::Reply(client, reply))?;
        match self.next()? {
            ToHost::Checked(Ok(())) => {
                if let Phase::Open { replied, .. } = &mut self.phase {
                    replied.insert(client);
                }
                Ok(())
            }
            ToHost::Checked(Err(why)) => bail!("round {round}: client {client}: {why}"),
            other => self
                .unexpected(other)
                .and_then(|()| bail!("the run ended early")),
        }
    }

    /// Ends the open round: the replies go to the server half in client-id
    /// order and the round's records come back. Fails, leaving the round
    /// open, when a planned client has not replied and `allow_missing` is
    /// false.
    pub fn finish(&mut self, allow_missing: bool) -> Result<RoundDone> {
        let Phase::Open {
            round,
            planned,
            replied,
        } = &self.phase
        else {
            bail!("no round is open: call plan first");
        };
        let missing: Vec<String> = planned
            .difference(replied)
            .map(ToString::to_string)
            .collect();
        if !missing.is_empty() && !allow_missing {
            let shown = missing.iter().take(8).cloned().collect::<Vec<_>>();
            bail!(
                "round {round}: {} planned client(s) have not replied ({}{}); \
                 receive their replies or finish with allow_missing",
                missing.len(),
                shown.join(", "),
                if missing.len() > shown.len() {
                    ", ..."
                } else {
                    ""
                }
            );
        }
        self.send(ToEngine::Finish)?;
        match self.next()? {
            ToHost::Round(done) => {
                self.phase = Phase::Idle;
                Ok(done)
            }
            other => self
                .unexpected(other)
                .and_then(|()| bail!("the run ended early")),
        }
    }

    /// The run's outcome, once [`Hosted::plan`] has returned `None`.
    pub fn outcome(&self) -> Result<&Outcome> {
        match &self.outcome {
            Some(Ok(outcome)) => Ok(outcome),
            Some(Err(e)) => Err(anyhow!("{e:#}")),
            None => bail!("the run is not over: plan and finish every round first"),
        }
    }

    fn send(&mut self, message: ToEngine) -> Result<()> {
        let sent = self.to_engine.as_ref().map(|s| s.send(message));
        match sent {
            Some(Ok(())) => Ok(()),
            _ => self.ended(),
        }
    }

    fn next(&mut self) -> Result<ToHost> {
        match self.from_engine.recv() {
            Ok(message) => Ok(message),
            Err(_) => self.ended(),
        }
    }

    /// The engine's end (kept, and its error returned), or a message out of
    /// turn.
    fn unexpected(&mut self, message: ToHost) -> Result<()> {
        let ToHost::Done(outcome) = message else {
            bail!("the engine answered out of order");
        };
        self.phase = Phase::Over;
        let failed = outcome.as_ref().err().map(|e| anyhow!("{e:#}"));
        self.outcome = Some(outcome);
        failed.map_or(Ok(()), Err)
    }

    fn ended<T>(&mut self) -> Result<T> {
        self.phase = Phase::Over;
        bail!("the run has ended")
    }
}

impl Hosted {
    /// Stops the engine thread and waits for it (what dropping does; a
    /// host that must not block the engine while waiting, e.g. one holding
    /// a lock the engine's model takes, calls it first without that lock).
    pub fn stop(&mut self) {
        // A closed channel stops the engine at its next exchange.
        self.to_engine = None;
        if let Some(engine) = self.engine.take() {
            let _ = engine.join();
        }
    }
}

impl Drop for Hosted {
    fn drop(&mut self) {
        self.stop();
    }
}

/// The engine thread: the configured run, its transport the host.
fn run_engine(
    config: &RunConfig,
    given: Option<Arc<dyn Model>>,
    to_host: &Sender<ToHost>,
    inbox: Receiver<ToEngine>,
) -> Result<Outcome> {
    let data_set = build_data_set(config)?;
    let data = data_set.view();
    let model = model_for(config, &data, given.as_ref())?;
    let driver = Driver::new(config, &data, model.as_ref())?;
    let sizes = client_sizes(&data);
    let initial = initial_models(config, model.as_ref())?;
    let run = HostedRun {
        driver,
        setup: setup(config, &data, model.as_ref(), &sizes, initial.as_deref()),
        bridge: Bridge {
            num_clients: data.train.num_clients(),
            to_host,
            inbox,
            rejected: Vec::new(),
        },
    };
    config.algorithm.visit(run).map_err(algorithm_field)?
}

/// The server half only; its clients are the host's.
struct HostedRun<'a> {
    driver: Driver<'a>,
    setup: Setup<'a>,
    bridge: Bridge<'a>,
}

impl Visit for HostedRun<'_> {
    type Output = Result<Outcome>;
    fn visit<A: Algorithm>(mut self, config: Checked<A::Config>) -> Result<Outcome> {
        check_starts_from::<A>(self.driver.config, &self.setup)?;
        let server = A::server(config, &self.setup).map_err(algorithm_field)?;
        let to_host = self.bridge.to_host;
        let model = self.driver.model;
        let ready = ToHost::Ready {
            num_clients: self.bridge.num_clients,
            model: (model.name(), model.tensors()),
        };
        to_host
            .send(ready)
            .map_err(|_| anyhow!("the host went away"))?;
        let report = |round: usize, server: &A::Server, bridge: &Bridge<'_>, so_far: &SoFar| {
            let snapshot = server.snapshot();
            let done = RoundDone {
                records: (so_far.records.iter())
                    .filter(|r| r.round == round)
                    .cloned()
                    .collect(),
                selected: snapshot.selected,
                models: (snapshot.replicas.get(snapshot.selected))
                    .map(|r| r.models.iter().map(|m| m.to_vec()).collect())
                    .unwrap_or_default(),
                rejected: bridge.rejected.clone(),
            };
            to_host
                .send(ToHost::Round(done))
                .map_err(|_| anyhow!("the host went away"))
        };
        self.driver.drive_from(
            server,
            &mut self.bridge,
            &mut |_| {},
            Start::default(),
            &mut WholeRounds,
            report,
        )
    }
}

/// The transport whose messages the host carries.
struct Bridge<'a> {
    num_clients: usize,
    to_host: &'a Sender<ToHost>,
    inbox: Receiver<ToEngine>,
    /// This round's refused replies.
    rejected: Vec<(ClientId, String)>,
}

impl Bridge<'_> {
    fn tell(&self, message: ToHost) -> Result<(), EngineError> {
        (self.to_host.send(message)).map_err(|_| stopped())
    }
}

fn stopped() -> EngineError {
    EngineError::Transport("the host stopped the run".into())
}

impl<Down, Up> Transport<Down, Up> for Bridge<'_>
where
    Down: Serialize,
    Up: DeserializeOwned + Message,
{
    fn exchange(
        &mut self,
        ctx: &RoundCtx,
        plan: &[(ClientId, Down)],
        deliver: &mut dyn FnMut(ClientId, Up) -> Result<(), EngineError>,
    ) -> Result<(), EngineError> {
        check_plan(ctx, plan, self.num_clients)?;
        let messages = (plan.iter())
            .map(|(id, msg)| Ok((*id, codec::encode(msg)?)))
            .collect::<Result<_, fedcluster_net::NetError>>()
            .map_err(|e| EngineError::Transport(e.to_string()))?;
        self.tell(ToHost::Plan(Planned {
            round: ctx.round,
            rounds: ctx.rounds,
            num_clients: ctx.num_clients,
            messages,
        }))?;
        let mut replies = BTreeMap::new();
        // Replies until the host finishes the round.
        while let ToEngine::Reply(id, bytes) = self.inbox.recv().map_err(|_| stopped())? {
            let verdict = codec::decode_reply::<Up>(&bytes).map(|up| {
                replies.insert(id, up);
            });
            self.tell(ToHost::Checked(verdict))?;
        }
        self.rejected.clear();
        for (id, up) in replies {
            if let Some(why) = refused_shape(deliver(id, up))? {
                self.rejected.push((id, why));
            }
        }
        Ok(())
    }

    fn num_clients(&self) -> usize {
        self.num_clients
    }
}
