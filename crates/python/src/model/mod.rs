//! A model written in Python behind the Rust [`Model`] trait ([`PyModel`]),
//! so that every algorithm (they see models only as `&dyn Model`) trains a
//! user's own network: `fedcluster.run(config, model=...)`, `Server` and
//! `Client` take it in place of the config's `[model]`. The protocol the
//! Python object follows is documented in `python/src/fedcluster/model.py`
//! (`fedcluster.model.ModelProtocol`).
//!
//! **Crossing.** Parameters cross as one flat `float32` numpy array, batches
//! as `x` (`n x dim`, `float32`) and `y` (`n`, `float32` values or `uint32`
//! classes). Each is a copy: a numpy view of a borrowed Rust slice needs
//! `unsafe`, which this crate does not hold (ARCHITECTURE.md), and a copy
//! costs less than the Python call it feeds.
//!
//! **The GIL.** Rust runs with the GIL released (every caller in this crate
//! runs the engine inside `py.detach`); each model call takes it
//! (`Python::attach`) for that call alone. The engine runs clients on a rayon
//! pool, so these calls take turns: the Python model's work is serialised,
//! the rest runs in parallel. No caller waits on the engine while it holds
//! the GIL (`Server`'s drop included), so a call waiting for the GIL always
//! gets it.
//!
//! **Errors.** [`Model`]'s methods cannot fail, so the first error (an
//! exception, an output of the wrong length or type, a NaN at finite
//! parameters) is recorded in the model, naming the call ("the Python
//! model's loss_grad raised ValueError: ..."); from then on every call
//! returns NaN at once without calling Python, so the run goes on through
//! NaN as through a divergence (cheaply, never a panic), and its caller
//! ([`PyModel::failure`], checked after a run, every `Server` round and
//! every `Client` reply) raises that error instead of the run's outcome.
//! Stopping the engine mid-round would need a way to fail in every
//! algorithm's halves; NaN already has one.

mod call;
mod draws;
mod given;
mod training;

pub use draws::Draws;
pub use given::{check_run, checked, given, shared};

use std::sync::OnceLock;

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;

use fedcluster_core::train::MinibatchSpec;
use fedcluster_core::train::OptimizerState;
use fedcluster_core::{Batch, Model, Rng, TensorSpec, Workspace};

use call::{Call, fill_flat};

/// A Python object following `fedcluster.model.ModelProtocol`, as a
/// [`Model`].
pub struct PyModel {
    object: Py<PyAny>,
    num_params: usize,
    input_dim: usize,
    tensors: Vec<TensorSpec>,
    head_start: usize,
    flops: u64,
    /// Which optional methods the object has.
    has_count_correct: bool,
    has_train: bool,
    has_train_minibatch: bool,
    /// The first error of a call, naming it.
    failure: OnceLock<String>,
}

impl PyModel {
    /// Reads the object's sizes and layout once; a missing method or a bad
    /// size is a `TypeError` or `ValueError` naming it.
    pub fn new(object: &Bound<'_, PyAny>) -> PyResult<Self> {
        let size = |name: &str| -> PyResult<usize> {
            let value = object.getattr(name).map_err(|_| {
                PyTypeError::new_err(format!("model: the Python model has no `{name}`"))
            })?;
            value.extract::<usize>().map_err(|_| {
                PyValueError::new_err(format!(
                    "model.{name}: expected an int >= 0, got {}",
                    value.repr().map_or_else(|_| "?".into(), |r| r.to_string())
                ))
            })
        };
        let num_params = size("num_params")?;
        let input_dim = size("input_dim")?;
        if num_params == 0 || input_dim == 0 {
            return Err(PyValueError::new_err(
                "model: num_params and input_dim must be at least 1",
            ));
        }
        for method in ["init", "loss", "loss_grad"] {
            if !callable(object, method)? {
                return Err(PyTypeError::new_err(format!(
                    "model: the Python model has no method `{method}`"
                )));
            }
        }
        let optional = |name: &str| -> PyResult<usize> {
            match object.hasattr(name)? {
                true => size(name),
                false => Ok(0),
            }
        };
        let head_start = optional("head_start")?;
        if head_start > num_params {
            return Err(PyValueError::new_err(format!(
                "model.head_start: {head_start} is beyond the model's {num_params} parameters"
            )));
        }
        let flops = optional("flops_per_sample")? as u64;
        let tensors = layout(object, num_params)?;
        Ok(Self {
            object: object.clone().unbind(),
            num_params,
            input_dim,
            tensors,
            head_start,
            flops,
            has_count_correct: callable(object, "count_correct")?,
            has_train: callable(object, "train")?,
            has_train_minibatch: callable(object, "train_minibatch")?,
            failure: OnceLock::new(),
        })
    }

    /// The first error of a call into Python, if any (see the module doc).
    pub fn failure(&self) -> Option<&str> {
        self.failure.get().map(String::as_str)
    }

    /// Records `why` as the model's error, unless one came first.
    fn fail(&self, why: String) {
        let _ = self.failure.set(why);
    }

    /// Whether an earlier call failed (every later call returns NaN).
    fn failed(&self) -> bool {
        self.failure.get().is_some()
    }

    /// A call of the object's `method`, named in its errors.
    fn call(&self, method: &'static str) -> Call<'_> {
        Call {
            object: &self.object,
            method,
        }
    }

    /// `value`, or the call's error recorded and `failed` returned.
    fn settle<T>(&self, value: Result<T, String>, failed: T) -> T {
        value.unwrap_or_else(|why| {
            self.fail(why);
            failed
        })
    }
}

/// Whether `object.name` is there and callable.
fn callable(object: &Bound<'_, PyAny>, name: &str) -> PyResult<bool> {
    Ok(object.getattr_opt(name)?.is_some_and(|m| m.is_callable()))
}

/// The object's `layout()` (`[(name, shape), ...]`), checked to cover
/// `num_params`; one tensor `params` without it.
fn layout(object: &Bound<'_, PyAny>, num_params: usize) -> PyResult<Vec<TensorSpec>> {
    if !callable(object, "layout")? {
        return Ok(vec![TensorSpec::new("params", &[num_params])]);
    }
    let pairs: Vec<(String, Vec<usize>)> =
        object.call_method0("layout")?.extract().map_err(|_| {
            PyTypeError::new_err("model.layout(): expected a list of (name, shape) pairs")
        })?;
    let total: usize = pairs.iter().map(|(_, s)| s.iter().product::<usize>()).sum();
    if total != num_params {
        return Err(PyValueError::new_err(format!(
            "model.layout(): its tensors hold {total} values, but num_params is {num_params}"
        )));
    }
    Ok(pairs.iter().map(|(n, s)| TensorSpec::new(n, s)).collect())
}

impl Model for PyModel {
    fn name(&self) -> &'static str {
        "python"
    }

    fn num_params(&self) -> usize {
        self.num_params
    }

    fn input_dim(&self) -> usize {
        self.input_dim
    }

    fn tensors(&self) -> Vec<TensorSpec> {
        self.tensors.clone()
    }

    /// The object's `init(draws)`, its draws from `rng` (see [`Draws`]).
    fn init(&self, rng: &mut Rng, out: &mut [f32]) {
        if self.failed() {
            out.fill(f32::NAN);
            return;
        }
        let done = Python::attach(|py| {
            let draws = Py::new(py, Draws::new(rng.clone())).map_err(|e| e.to_string())?;
            let value = self.call("init").with(py, (draws.clone_ref(py),))?;
            fill_flat(py, &value, out, "parameters", "init")?;
            *rng = draws.borrow(py).rng().clone();
            match fedcluster_core::params::all_finite(out) {
                true => Ok(()),
                false => Err("the Python model's init returned a NaN or infinity".to_string()),
            }
        });
        if let Err(why) = done {
            out.fill(f32::NAN);
            self.fail(why);
        }
    }

    fn loss(&self, params: &[f32], batch: Batch<'_>, _ws: &mut Workspace) -> f64 {
        if batch.is_empty() {
            return 0.0;
        }
        if self.failed() {
            return f64::NAN;
        }
        let loss = self.call("loss").loss(params, batch);
        self.settle(loss, f64::NAN)
    }

    fn loss_grad(
        &self,
        params: &[f32],
        batch: Batch<'_>,
        grad: &mut [f32],
        _ws: &mut Workspace,
    ) -> f64 {
        if batch.is_empty() {
            grad.fill(0.0);
            return 0.0;
        }
        if self.failed() {
            grad.fill(f32::NAN);
            return f64::NAN;
        }
        let loss = self.call("loss_grad").loss_grad(params, batch, grad);
        let loss = self.settle(loss, f64::NAN);
        if self.failed() {
            grad.fill(f32::NAN);
        }
        loss
    }

    fn count_correct(
        &self,
        params: &[f32],
        batch: Batch<'_>,
        _ws: &mut Workspace,
    ) -> Option<usize> {
        if !self.has_count_correct || self.failed() {
            return None;
        }
        let counted = self.call("count_correct").count_correct(params, batch);
        self.settle(counted, None)
    }

    fn forward_flops_per_sample(&self) -> u64 {
        self.flops
    }

    fn head_start(&self) -> usize {
        self.head_start
    }

    /// The object's own `train` where it has one, else the flat loop over
    /// `loss_grad`.
    fn train(
        &self,
        params: &mut [f32],
        batch: Batch<'_>,
        lr: f32,
        steps: usize,
        ws: &mut Workspace,
    ) -> f64 {
        if !self.has_train {
            return ws.with_grad(self.num_params, |grad, ws| {
                fedcluster_core::train::full_batch::gradient_descent(
                    self, params, batch, lr, steps, grad, ws,
                )
            });
        }
        if self.failed() {
            return f64::NAN;
        }
        let trained = self.call("train").train(params, batch, lr, steps);
        self.settle(trained, f64::NAN)
    }

    /// The object's own `train_minibatch` where it has one (its minibatches
    /// drawn here, as the flat loop draws them), else `None`: the flat loop.
    fn train_minibatch(
        &self,
        params: &mut [f32],
        batch: Batch<'_>,
        spec: &MinibatchSpec<'_>,
        steps: usize,
        state: &mut OptimizerState,
        rng: &mut Rng,
        _ws: &mut Workspace,
    ) -> Option<f64> {
        if !self.has_train_minibatch || batch.is_empty() || steps == 0 {
            return None;
        }
        if self.failed() {
            return Some(f64::NAN);
        }
        let call = self.call("train_minibatch");
        let trained = training::train_minibatch(&call, params, batch, spec, steps, state, rng);
        Some(self.settle(trained, f64::NAN))
    }
}
