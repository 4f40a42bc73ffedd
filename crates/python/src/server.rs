//! `fedcluster.Server`: the configured server half, its messages carried by
//! the caller ([`fedcluster_run::bridge`]).

use std::sync::{Arc, Mutex, PoisonError};

use numpy::PyArray1;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};

use fedcluster_run::bridge::Hosted;
use fedcluster_run::config::RunConfig;

use crate::config::Config;
use crate::errors::failed;
use crate::model::{PyModel, checked};
use crate::run::{json, outcome_dict, save_run};

/// The server half of a configured run, driven round by round.
#[pyclass(module = "fedcluster._native")]
pub struct Server {
    // Behind a mutex for `Sync`; only ever reached through `&mut self`.
    hosted: Mutex<Hosted>,
    config: RunConfig,
    /// The Python model the run trains, if given (its errors are raised
    /// after each call that ran it).
    model: Option<Arc<PyModel>>,
}

impl Drop for Server {
    /// The engine thread is joined with the GIL released: it may be
    /// waiting for the GIL in a call of a Python model.
    fn drop(&mut self) {
        let hosted = self
            .hosted
            .get_mut()
            .unwrap_or_else(PoisonError::into_inner);
        Python::attach(|py| py.detach(|| hosted.stop()));
    }
}

impl Server {
    fn hosted(&mut self) -> &mut Hosted {
        self.hosted
            .get_mut()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

#[pymethods]
impl Server {
    /// Builds the config's data set (for the metrics and the clients' sizes),
    /// model and server half; `threads` > 0 replaces the config's. With
    /// `model` (a Python object following `fedcluster.model.ModelProtocol`)
    /// the run trains it instead of the config's `[model]`.
    #[new]
    #[pyo3(signature = (config, threads = 0, model = None))]
    fn new(
        py: Python<'_>,
        config: &Config,
        threads: usize,
        model: Option<Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        let py_model = crate::model::given(model.as_ref())?;
        let given = crate::model::shared(&py_model);
        let mut config = config.config.clone();
        if threads > 0 {
            config.threads = threads;
        }
        let start = config.clone();
        let hosted = py.detach(|| Hosted::start_with_model(start, given));
        let hosted = checked(&py_model, hosted.map_err(failed))?;
        Ok(Self {
            hosted: Mutex::new(hosted),
            config,
            model: py_model,
        })
    }

    /// Clients of the federation.
    #[getter]
    fn num_clients(&mut self) -> usize {
        self.hosted().num_clients()
    }

    /// The model's tensors: `[(name, shape)]` in the order of a model's
    /// flat values.
    #[getter]
    fn layout(&mut self) -> Vec<(String, Vec<usize>)> {
        (self.hosted().model().1.iter())
            .map(|t| (t.name.clone(), t.shape.clone()))
            .collect()
    }

    /// Starts the next round: `(round, rounds, num_clients, [(client,
    /// message bytes), ...])`, or `None` after the last round.
    #[allow(clippy::type_complexity)]
    fn plan<'py>(
        &mut self,
        py: Python<'py>,
    ) -> PyResult<Option<(usize, usize, usize, Vec<(usize, Bound<'py, PyBytes>)>)>> {
        let hosted = self
            .hosted
            .get_mut()
            .unwrap_or_else(PoisonError::into_inner);
        let planned = py.detach(|| hosted.plan()).map_err(failed);
        let planned = checked(&self.model, planned)?;
        Ok(planned.map(|p| {
            let messages = (p.messages.iter())
                .map(|(id, bytes)| (*id, PyBytes::new(py, bytes)))
                .collect();
            (p.round, p.rounds, p.num_clients, messages)
        }))
    }

    /// Takes `client`'s reply (bytes) to the open round.
    fn receive(&mut self, py: Python<'_>, client: usize, reply: &[u8]) -> PyResult<()> {
        let reply = reply.to_vec();
        let hosted = self.hosted();
        py.detach(|| hosted.receive(client, reply)).map_err(failed)
    }

    /// Ends the open round: a dict of `records` (JSON, one row per
    /// replica), `models` (the selected replica's, flat `float32`) and
    /// `rejected` (`[(client, why)]`: replies the server refused).
    #[pyo3(signature = (allow_missing = false))]
    fn finish<'py>(
        &mut self,
        py: Python<'py>,
        allow_missing: bool,
    ) -> PyResult<Bound<'py, PyDict>> {
        let hosted = self
            .hosted
            .get_mut()
            .unwrap_or_else(PoisonError::into_inner);
        let done = py.detach(|| hosted.finish(allow_missing)).map_err(failed);
        let done = checked(&self.model, done)?;
        let out = PyDict::new(py);
        out.set_item("records", json(&done.records)?)?;
        let models: Vec<Bound<'py, PyArray1<f32>>> = (done.models.iter())
            .map(|m| PyArray1::from_slice(py, m))
            .collect();
        out.set_item("models", models)?;
        out.set_item("rejected", done.rejected)?;
        out.set_item("selected", done.selected)?;
        Ok(out)
    }

    /// Writes the finished run's directory `out` as `fedcluster run --out`
    /// does (`metrics.csv`, `summary.json`, `models.safetensors`, ...):
    /// `out` must be new or empty (or a run directory, with `overwrite`).
    #[pyo3(signature = (out, overwrite = false))]
    fn save(
        &mut self,
        py: Python<'_>,
        out: std::path::PathBuf,
        overwrite: bool,
    ) -> PyResult<String> {
        let config = self.config.clone();
        let outcome = self.hosted().outcome().map_err(failed)?;
        let saved = py.detach(|| save_run(&out, overwrite, &config, outcome));
        Ok(saved.map_err(failed)?.display().to_string())
    }

    /// The run's outcome (as `run` returns it), after the last round.
    fn outcome<'py>(&mut self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let config = self.config.clone();
        let hosted = self.hosted();
        let outcome = hosted.outcome().map_err(failed)?;
        outcome_dict(py, &config, outcome)
    }
}
