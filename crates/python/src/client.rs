//! `fedcluster.Client`: one client's half of the configured algorithm
//! ([`fedcluster_run::hosted_client`]).

use std::sync::{Arc, Mutex, PoisonError};

use anyhow::bail;
use numpy::{PyArray1, PyArrayMethods, PyReadonlyArray1, PyReadonlyArray2};
use pyo3::prelude::*;
use pyo3::types::PyBytes;

use fedcluster_core::RoundCtx;
use fedcluster_data::{ClientData, TargetsOwned, Task};
use fedcluster_run::hosted_client::HostedClient;

use crate::config::Config;
use crate::errors::failed;
use crate::model::{PyModel, checked};

/// One client's half, its data and model.
#[pyclass(module = "fedcluster._native")]
pub struct Client {
    // Behind a mutex for `Sync`; only ever reached through `&mut self`.
    half: Mutex<HostedClient>,
    /// The Python model the half trains, if given (its errors are raised
    /// after each reply).
    model: Option<Arc<PyModel>>,
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
    /// Client `client` of the config's data set (its training data only);
    /// with `model` (a Python object following
    /// `fedcluster.model.ModelProtocol`), it trains that model.
    #[new]
    #[pyo3(signature = (config, client, model = None))]
    fn new(
        py: Python<'_>,
        config: &Config,
        client: usize,
        model: Option<Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        let mut clients = Self::many(py, config, vec![client], model)?;
        Ok(clients.remove(0))
    }

    /// Clients `clients` of the config's data set, the data set built once.
    #[staticmethod]
    #[pyo3(signature = (config, clients, model = None))]
    fn many(
        py: Python<'_>,
        config: &Config,
        clients: Vec<usize>,
        model: Option<Bound<'_, PyAny>>,
    ) -> PyResult<Vec<Self>> {
        let py_model = crate::model::given(model.as_ref())?;
        let given = crate::model::shared(&py_model);
        let config = &config.config;
        let halves = py
            .detach(|| HostedClient::from_config_many_with_model(config, &clients, given))
            .map_err(failed)?;
        Ok(halves
            .into_iter()
            .map(|half| Self {
                half: Mutex::new(half),
                model: py_model.clone(),
            })
            .collect())
    }

    /// Client `client` holding `features` (`n x d`, `float32`) and real
    /// `targets` (`n`, `float32`, regression).
    #[staticmethod]
    #[pyo3(signature = (config, client, features, targets, model = None))]
    fn with_real_targets(
        config: &Config,
        client: usize,
        features: PyReadonlyArray2<'_, f32>,
        targets: PyReadonlyArray1<'_, f32>,
        model: Option<Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        let y = TargetsOwned::Real(targets.as_array().to_vec());
        Self::with_data(config, client, features, y, Task::Regression, model)
    }

    /// Client `client` holding `features` (`n x d`, `float32`) and class
    /// `targets` (`n`, `uint32`, each below `classes`).
    #[staticmethod]
    #[pyo3(signature = (config, client, features, targets, classes, model = None))]
    fn with_class_targets(
        config: &Config,
        client: usize,
        features: PyReadonlyArray2<'_, f32>,
        targets: PyReadonlyArray1<'_, u32>,
        classes: usize,
        model: Option<Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        let y = TargetsOwned::Class(targets.as_array().to_vec());
        let task = Task::Classification { classes };
        Self::with_data(config, client, features, y, task, model)
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
        let half = self.half.get_mut().unwrap_or_else(PoisonError::into_inner);
        let reply = py.detach(|| half.handle(ctx, &message)).map_err(failed);
        let reply = checked(&self.model, reply)?;
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
        model: Option<Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        let py_model = crate::model::given(model.as_ref())?;
        let given = crate::model::shared(&py_model);
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
            HostedClient::from_data_with_model(&config.config, client, data, dim, task, given)
        })()
        .map_err(failed)?;
        Ok(Self {
            half: Mutex::new(half),
            model: py_model,
        })
    }
}
