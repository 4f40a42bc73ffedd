//! `fedcluster.run`: a whole run in process, as `fedcluster run` makes it.

use numpy::PyArray1;
use pyo3::prelude::*;
use pyo3::types::PyDict;

use fedcluster_run::config::RunConfig;
use fedcluster_run::experiment::{build_data_set, execute_with, model_for};
use fedcluster_run::outcome::Outcome;
use std::path::{Path, PathBuf};

use fedcluster_run::rundir::{Extras, RunDir, Summary, write_run};

use crate::config::Config;
use crate::errors::failed;

/// Runs `config` in process (`threads` > 0 replaces its `threads`) and
/// returns its outcome (see [`outcome_dict`]). The GIL is released while
/// it runs.
/// With `out`, the run's directory is written there as `fedcluster run
/// --out` writes it (see [`save_run`]). With `model` (a Python object
/// following `fedcluster.model.ModelProtocol`), the run trains it instead
/// of the config's `[model]`; its first error is raised (see
/// [`crate::model`]).
#[pyfunction]
#[pyo3(signature = (config, threads = 0, out = None, overwrite = false, model = None))]
pub fn run<'py>(
    py: Python<'py>,
    config: &Config,
    threads: usize,
    out: Option<PathBuf>,
    overwrite: bool,
    model: Option<Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyDict>> {
    let py_model = crate::model::given(model.as_ref())?;
    let given = crate::model::shared(&py_model);
    let mut config = config.config.clone();
    if threads > 0 {
        config.threads = threads;
    }
    let outcome = py
        .detach(|| -> anyhow::Result<Outcome> {
            // The target is checked before the run, so a bad one costs nothing.
            let reserved = out
                .as_deref()
                .map(|o| RunDir::reserve(o, overwrite))
                .transpose()?;
            let data_set = build_data_set(&config)?;
            let data = data_set.view();
            let model = model_for(&config, &data, given.as_ref())?;
            let outcome = execute_with(&config, &data, model.as_ref(), &mut |_| {})?;
            // A model that failed leaves no run directory.
            crate::model::check_run(&py_model)?;
            if let Some(reserved) = reserved {
                let dir = reserved.create()?;
                write_run(&dir, &config, &outcome, Extras::ALL)?;
                dir.finish()?;
            }
            Ok(outcome)
        })
        .map_err(failed);
    let outcome = crate::model::checked(&py_model, outcome)?;
    outcome_dict(py, &config, &outcome)
}

/// Writes a finished run's directory `out` (new or empty, or with
/// `overwrite` a run directory) as `fedcluster run --out` does; returns it.
pub fn save_run(
    out: &Path,
    overwrite: bool,
    config: &RunConfig,
    outcome: &Outcome,
) -> anyhow::Result<PathBuf> {
    let dir = RunDir::reserve(out, overwrite)?.create()?;
    write_run(&dir, config, outcome, Extras::ALL)?;
    dir.finish()
}

/// A run's outcome for Python: `records` (every replica's `metrics.csv`
/// rows, JSON), `summary` (`summary.json`'s text), `selected`, `models`
/// (the selected replica's models, flat `float32` arrays), `model` (its
/// name) and `layout` (its tensors' names and shapes, in the flat order).
pub fn outcome_dict<'py>(
    py: Python<'py>,
    config: &RunConfig,
    outcome: &Outcome,
) -> PyResult<Bound<'py, PyDict>> {
    let out = PyDict::new(py);
    out.set_item("records", json(&outcome.records)?)?;
    out.set_item("summary", json(&Summary::new(config, outcome))?)?;
    out.set_item("selected", outcome.selected)?;
    out.set_item("replicas", outcome.replicas)?;
    out.set_item("wall_seconds", outcome.wall_seconds)?;
    let models: Vec<Bound<'py, PyArray1<f32>>> = (outcome.models.iter())
        .map(|m| PyArray1::from_slice(py, m))
        .collect();
    out.set_item("models", models)?;
    let (name, tensors) = &outcome.model;
    out.set_item("model", *name)?;
    let layout: Vec<(String, Vec<usize>)> = (tensors.iter())
        .map(|t| (t.name.clone(), t.shape.clone()))
        .collect();
    out.set_item("layout", layout)?;
    Ok(out)
}

/// `value` as JSON text.
pub fn json<T: serde::Serialize>(value: &T) -> PyResult<String> {
    serde_json::to_string(value).map_err(|e| failed(e.into()))
}
