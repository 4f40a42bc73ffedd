//! `fedcluster.Client`: one client's half of the configured algorithm
//! ([`fedcluster_run::hosted_client`]).

use std::sync::Mutex;

use anyhow::bail;
use numpy::{PyArray1, PyArrayMethods, PyReadonlyArray1, PyReadonlyArray2};
use pyo3::prelude::*;
use pyo3::types::PyBytes;

use fedcluster_core::RoundCtx;
use fedcluster_data::{ClientData, TargetsOwned, Task};
use fedcluster_run::hosted_client::HostedClient;

use crate::config::Config;
use crate::errors::failed;

/// One client's half, its data and model.
#[pyclass(module = "fedcluster._native")]
pub struct Client {
    // Behind a mutex for `Sync`; only ever reached through `&mut self`.
    half: Mutex<HostedClient>,
}

impl Client {
    fn half(&mut self) -> &mut HostedClient {
        self.half
            .get_mut()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

#[pymethods]
impl Client {
    /// Client `client` of the config's data set (its training data only).
    #[new]
    fn new(py: Python<'_>, config: &Config, client: usize) -> PyResult<Self> {
        let config = &config.config;
        let half = py
            .detach(|| HostedClient::from_config(config, client))
            .map_err(failed)?;
        Ok(Self {
            half: Mutex::new(half),
        })
    }

    /// Clients `clients` of the config's data set, the data set built once.
    #[staticmethod]
    fn many(py: Python<'_>, config: &Config, clients: Vec<usize>) -> PyResult<Vec<Self>> {
        let config = &config.config;
        let halves = py
            .detach(|| HostedClient::from_config_many(config, &clients))
            .map_err(failed)?;
        Ok(halves
            .into_iter()
            .map(|half| Self {
                half: Mutex::new(half),
            })
            .collect())
    }

    /// Client `client` holding `features` (`n x d`, `float32`) and real
    /// `targets` (`n`, `float32`, regression).
    #[staticmethod]
    fn with_real_targets(
        config: &Config,
        client: usize,
        features: PyReadonlyArray2<'_, f32>,
        targets: PyReadonlyArray1<'_, f32>,
    ) -> PyResult<Self> {
        let y = TargetsOwned::Real(targets.as_array().to_vec());
        Self::with_data(config, client, features, y, Task::Regression)
    }

    /// Client `client` holding `features` (`n x d`, `float32`) and class
    /// `targets` (`n`, `uint32`, each below `classes`).
    #[staticmethod]
    fn with_class_targets(
        config: &Config,
        client: usize,
        features: PyReadonlyArray2<'_, f32>,
        targets: PyReadonlyArray1<'_, u32>,
        classes: usize,
    ) -> PyResult<Self> {
        let y = TargetsOwned::Class(targets.as_array().to_vec());
        Self::with_data(
            config,
            client,
            features,
            y,
            Task::Classification { classes },
        )
    }

    /// This client's id.
    #[getter]
    fn id(&mut self) -> usize {
        self.half().id()
    }

    /// This client's training data: `(features, targets)`, `n x d`
    /// `float32` and `n` targets (`float32` values, or `uint32` classes).
    fn data<'py>(&mut self, py: Python<'py>) -> PyResult<(Bound<'py, PyAny>, Bound<'py, PyAny>)> {
        let (data, dim) = self.half().data();
        let n = data.len();
        let x = PyArray1::from_slice(py, &data.x)
            .reshape([n, dim])?
            .into_any();
        let y = match &data.y {
            TargetsOwned::Real(y) => PyArray1::from_slice(py, y).into_any(),
            TargetsOwned::Class(y) => PyArray1::from_slice(py, y).into_any(),
        };
        Ok((x, y))
    }

    /// The algorithm's name.
    #[getter]
    fn algorithm(&mut self) -> &'static str {
        self.half().algorithm()
    }

    /// Answers round `round`'s message (of `rounds`, in a federation of
    /// `num_clients`) with the reply's bytes.
    fn handle<'py>(
        &mut self,
        py: Python<'py>,
        message: &[u8],
        round: usize,
        rounds: usize,
        num_clients: usize,
    ) -> PyResult<Bound<'py, PyBytes>> {
        let ctx = RoundCtx {
            round,
            rounds,
            num_clients,
        };
        let message = message.to_vec();
        let half = self.half();
        let reply = py.detach(|| half.handle(ctx, &message)).map_err(failed)?;
        Ok(PyBytes::new(py, &reply))
    }

    /// The half's state between rounds, as bytes.
    fn state<'py>(&mut self, py: Python<'py>) -> PyResult<Bound<'py, PyBytes>> {
        let state = self.half().state().map_err(failed)?;
        Ok(PyBytes::new(py, &state))
    }

    /// Restores a state `state` returned (of a client of the same algorithm).
    fn restore(&mut self, state: &[u8]) -> PyResult<()> {
        self.half().restore(state).map_err(failed)
    }
}

impl Client {
    fn with_data(
        config: &Config,
        client: usize,
        features: PyReadonlyArray2<'_, f32>,
        y: TargetsOwned,
        task: Task,
    ) -> PyResult<Self> {
        let x = features.as_array();
        let (n, dim) = x.dim();
        let half = (|| {
            if y.len() != n {
                bail!("targets: {} for {n} rows of features", y.len());
            }
            let data = ClientData {
                x: x.iter().copied().collect(),
                y,
            };
            HostedClient::from_data(&config.config, client, data, dim, task)
        })()
        .map_err(failed)?;
        Ok(Self {
            half: Mutex::new(half),
        })
    }
}
