//! One client's half of the configured algorithm, whose messages someone
//! else carries (the Python package, a Flower ClientApp): it takes a round's
//! encoded message and returns the encoded reply, exactly as a joining
//! client does (`net::Session::serve`: the same data, model and random
//! stream `(seed, Client, round, id)`), and its state between rounds can be
//! saved and restored (MessagePack, as in run checkpoints; a Flower node
//! keeps it in the run's context).

use std::sync::Arc;

use anyhow::{Context, Result, anyhow, bail};

use fedcluster_algorithms::{Algorithm, Checked, Visit};
use fedcluster_core::{
    ClientEnv, ClientHalf, ClientId, Input, Model, Purpose, RoundCtx, Workspace, stream,
};
use fedcluster_data::{ClientData, Task};
use fedcluster_net::codec;

use crate::config::RunConfig;
use crate::experiment::{algorithm_field, check_input_dim};
use crate::own_clients::own_clients;

/// A client half with its data and model.
pub struct HostedClient {
    id: ClientId,
    seed: u64,
    algorithm: &'static str,
    half: Box<dyn ErasedHalf>,
    data: ClientData,
    dim: usize,
    /// Shared by the clients built together (one architecture, no state).
    model: Arc<dyn Model>,
    ws: Workspace,
}

impl HostedClient {
    /// Client `id` of the config's data set (its training data alone, as
    /// `fedcluster join` holds it).
    pub fn from_config(config: &RunConfig, id: ClientId) -> Result<Self> {
        let mut clients = Self::from_config_many(config, &[id])?;
        Ok(clients.remove(0))
    }

    /// Clients `ids` of the config's data set, the data set built once.
    pub fn from_config_many(config: &RunConfig, ids: &[ClientId]) -> Result<Vec<Self>> {
        Self::from_config_many_with_model(config, ids, None)
    }

    /// [`HostedClient::from_config_many`] with `model` (a model built
    /// outside the config) in place of the config's `[model]` where given.
    pub fn from_config_many_with_model(
        config: &RunConfig,
        ids: &[ClientId],
        model: Option<Arc<dyn Model>>,
    ) -> Result<Vec<Self>> {
        let mut own = own_clients(config, ids)?;
        let model: Arc<dyn Model> = match model {
            Some(model) => {
                check_input_dim(model.as_ref(), own.input.dim)?;
                model
            }
            None => config.model.build(&own.input)?.into(),
        };
        (ids.iter().enumerate())
            .map(|(i, &id)| Self::new(config, id, own.take(i), own.input.dim, Arc::clone(&model)))
            .collect()
    }

    /// Client `id` holding `x` (`n x dim` features, row-major) and `y` (`n`
    /// targets: real for regression, class indices below `task`'s classes).
    pub fn from_data(
        config: &RunConfig,
        id: ClientId,
        data: ClientData,
        dim: usize,
        task: Task,
    ) -> Result<Self> {
        Self::from_data_with_model(config, id, data, dim, task, None)
    }

    /// [`HostedClient::from_data`] with `model` (a model built outside the
    /// config) in place of the config's `[model]` where given.
    pub fn from_data_with_model(
        config: &RunConfig,
        id: ClientId,
        data: ClientData,
        dim: usize,
        task: Task,
        model: Option<Arc<dyn Model>>,
    ) -> Result<Self> {
        let n = data.len();
        if n == 0 || dim == 0 || data.x.len() != n * dim {
            bail!(
                "features: {} values for {n} samples of dimension {dim}",
                data.x.len()
            );
        }
        if let (Task::Classification { classes }, fedcluster_data::TargetsOwned::Class(y)) =
            (task, &data.y)
            && let Some(bad) = y.iter().find(|&&c| c as usize >= classes)
        {
            bail!("targets: class {bad} is not below the {classes} classes");
        }
        let model: Arc<dyn Model> = match model {
            Some(model) => {
                check_input_dim(model.as_ref(), dim)?;
                model
            }
            // A caller's own arrays declare no image shape: image models take
            // square images of their configured channels.
            None => config.model.build(&Input::flat(dim, task))?.into(),
        };
        Self::new(config, id, data, dim, model)
    }

    fn new(
        config: &RunConfig,
        id: ClientId,
        data: ClientData,
        dim: usize,
        model: Arc<dyn Model>,
    ) -> Result<Self> {
        let half = config.algorithm.visit(MakeHalf).map_err(algorithm_field)?;
        Ok(Self {
            id,
            seed: config.seed,
            algorithm: config.algorithm.name(),
            half,
            data,
            dim,
            model,
            ws: Workspace::default(),
        })
    }

    /// This client's id.
    pub fn id(&self) -> ClientId {
        self.id
    }

    /// This client's training data and its features per sample.
    pub fn data(&self) -> (&ClientData, usize) {
        (&self.data, self.dim)
    }

    /// The algorithm's name.
    pub fn algorithm(&self) -> &'static str {
        self.algorithm
    }

    /// Answers the encoded message of round `round` (of `rounds`, in a
    /// federation of `num_clients`) with the encoded reply.
    pub fn handle(&mut self, ctx: RoundCtx, message: &[u8]) -> Result<Vec<u8>> {
        let RoundCtx {
            round, num_clients, ..
        } = ctx;
        if self.id >= num_clients {
            bail!(
                "client {} is not in a federation of {num_clients} clients",
                self.id
            );
        }
        if round >= ctx.rounds {
            bail!("round {round} is not below the run's {} rounds", ctx.rounds);
        }
        let mut env = ClientEnv {
            id: self.id,
            round,
            data: self.data.batch(self.dim),
            model: self.model.as_ref(),
            rng: stream(self.seed, Purpose::Client, round as u64, self.id as u64),
            ws: &mut self.ws,
        };
        self.half
            .handle(&ctx, message, &mut env)
            .with_context(|| format!("round {round}: client {}", self.id))
    }

    /// The client half's state between rounds, encoded.
    pub fn state(&self) -> Result<Vec<u8>> {
        self.half.state()
    }

    /// Restores a state [`HostedClient::state`] saved (of the same algorithm).
    pub fn restore(&mut self, state: &[u8]) -> Result<()> {
        self.half
            .restore(state)
            .with_context(|| format!("client {}: cannot restore its state", self.id))
    }
}

/// A client half behind encoded messages.
trait ErasedHalf: Send {
    fn handle(
        &mut self,
        ctx: &RoundCtx,
        message: &[u8],
        env: &mut ClientEnv<'_>,
    ) -> Result<Vec<u8>>;
    fn state(&self) -> Result<Vec<u8>>;
    fn restore(&mut self, state: &[u8]) -> Result<()>;
}

/// The client half of algorithm `A`.
struct Typed<A: Algorithm>(A::Client);

impl<A: Algorithm> ErasedHalf for Typed<A>
where
    A::Client: 'static,
{
    fn handle(
        &mut self,
        ctx: &RoundCtx,
        message: &[u8],
        env: &mut ClientEnv<'_>,
    ) -> Result<Vec<u8>> {
        let msg: A::Down =
            codec::decode(message).map_err(|e| anyhow!("undecodable message: {e}"))?;
        let up = self.0.handle(ctx, &msg, env)?;
        Ok(codec::encode(&up)?)
    }

    // MessagePack, as in run checkpoints: some halves' state (tagged enums)
    // is beyond postcard.
    fn state(&self) -> Result<Vec<u8>> {
        Ok(rmp_serde::to_vec_named(&self.0)?)
    }

    fn restore(&mut self, state: &[u8]) -> Result<()> {
        self.0 = rmp_serde::from_slice(state).map_err(|e| anyhow!("undecodable state: {e}"))?;
        Ok(())
    }
}

/// Builds the configured algorithm's client half.
struct MakeHalf;

impl Visit for MakeHalf {
    type Output = Box<dyn ErasedHalf>;
    fn visit<A: Algorithm>(self, config: Checked<A::Config>) -> Box<dyn ErasedHalf> {
        Box::new(Typed::<A>(A::client(&config)))
    }
}
