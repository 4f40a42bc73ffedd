//! A Python model's own minibatch training (`train_minibatch`): its
//! minibatches drawn here from the client's stream exactly as the flat loop
//! (`core::train::minibatch::flat_steps`) draws them, the optimizer (the
//! run's config: SGD with momentum and weight decay, or Adam; an optional
//! proximal pull) and its state between rounds handed over as dicts.

use numpy::PyArray1;
use pyo3::prelude::*;
use pyo3::types::PyDict;

use fedcluster_core::train::minibatch::next_rows;
use fedcluster_core::train::{MinibatchOptimizer, MinibatchSpec, OptimizerState};
use fedcluster_core::{Batch, Rng};

use super::call::{Call, arguments, fill_flat};

/// `steps` steps of `spec` by the object's `train_minibatch(params, x, y,
/// batches, optimizer, state) -> (loss of the first minibatch,
/// parameters)`, which may update `state`'s arrays (in place or by
/// replacing them) and its `t`. `batch` is not empty and `steps` > 0.
pub fn train_minibatch(
    call: &Call<'_>,
    params: &mut [f32],
    batch: Batch<'_>,
    spec: &MinibatchSpec<'_>,
    steps: usize,
    state: &mut OptimizerState,
    rng: &mut Rng,
) -> Result<f64, String> {
    state.ready(spec.optimizer, params.len());
    let rows = minibatches(batch.len(), spec.batch_size, steps, rng);
    Python::attach(|py| {
        let (p, x, y) = arguments(py, params, batch);
        let batches: Vec<Bound<'_, PyArray1<u64>>> =
            rows.iter().map(|r| PyArray1::from_slice(py, r)).collect();
        let optimizer = optimizer_dict(py, spec).map_err(|e| e.to_string())?;
        let saved = state_dict(py, state).map_err(|e| e.to_string())?;
        let value = call.with(py, (p, x, y, batches, optimizer, saved.clone()))?;
        let loss = call.trained(py, &value, params)?;
        restore_state(py, call.method, &saved, state)?;
        Ok(loss)
    })
}

/// The rows of each of `steps` minibatches of `size` among `n` points, as
/// the flat loop visits them (reshuffled from `rng` at each epoch's start).
fn minibatches(n: usize, size: usize, steps: usize, rng: &mut Rng) -> Vec<Vec<u64>> {
    let size = size.clamp(1, n.max(1));
    let mut order: Vec<usize> = (0..n).collect();
    let mut cursor = n;
    (0..steps)
        .map(|_| {
            let rows = next_rows(&mut order, &mut cursor, size, rng);
            rows.iter().map(|&r| r as u64).collect()
        })
        .collect()
}

/// `{"name": "sgd" | "adam", "lr", "momentum", "weight_decay",
/// "batch_size", "pull_mu", "pull_centre"}` (the pull's `None` without one).
fn optimizer_dict<'py>(py: Python<'py>, spec: &MinibatchSpec<'_>) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    let (name, momentum, weight_decay) = match spec.optimizer {
        MinibatchOptimizer::Sgd {
            momentum,
            weight_decay,
        } => ("sgd", momentum, weight_decay),
        MinibatchOptimizer::Adam => ("adam", 0.0, 0.0),
    };
    d.set_item("name", name)?;
    d.set_item("lr", spec.lr)?;
    d.set_item("momentum", momentum)?;
    d.set_item("weight_decay", weight_decay)?;
    d.set_item("batch_size", spec.batch_size)?;
    d.set_item("pull_mu", spec.pull.map(|p| p.mu))?;
    d.set_item(
        "pull_centre",
        spec.pull.map(|p| PyArray1::from_slice(py, p.centre)),
    )?;
    Ok(d)
}

/// `{"first", "second", "t"}`: Adam's moments (or SGD's momentum buffer in
/// `first`, `second` empty) and the steps taken.
fn state_dict<'py>(py: Python<'py>, state: &OptimizerState) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("first", PyArray1::from_slice(py, &state.first))?;
    d.set_item("second", PyArray1::from_slice(py, &state.second))?;
    d.set_item("t", state.t)?;
    Ok(d)
}

/// `state` as the model left `saved`.
fn restore_state(
    py: Python<'_>,
    method: &str,
    saved: &Bound<'_, PyDict>,
    state: &mut OptimizerState,
) -> Result<(), String> {
    let item = |key: &str| {
        saved
            .get_item(key)
            .ok()
            .flatten()
            .ok_or_else(|| format!("the Python model's {method} removed the state's `{key}`"))
    };
    fill_flat(
        py,
        &item("first")?,
        &mut state.first,
        "values of state[\"first\"]",
        method,
    )?;
    fill_flat(
        py,
        &item("second")?,
        &mut state.second,
        "values of state[\"second\"]",
        method,
    )?;
    state.t = item("t")?
        .extract()
        .map_err(|_| format!("the Python model's {method} left state[\"t\"] not an int >= 0"))?;
    Ok(())
}
