//! The Python model a call of the package was given (`model=`), as the run
//! library takes it, and its first error raised where a run, a round or a
//! reply ends.

use std::sync::Arc;

use pyo3::prelude::*;

use fedcluster_core::Model;

use super::PyModel;

/// The Python model a call was given (`None` and Python's `None` alike
/// mean the config's `[model]`).
pub fn given(model: Option<&Bound<'_, PyAny>>) -> PyResult<Option<Arc<PyModel>>> {
    (model.filter(|m| !m.is_none()))
        .map(|m| PyModel::new(m).map(Arc::new))
        .transpose()
}

/// The given model as the run library takes it.
pub fn shared(model: &Option<Arc<PyModel>>) -> Option<Arc<dyn Model>> {
    model.clone().map(|m| m as Arc<dyn Model>)
}

/// The model's first error as a `FedclusterError`, if a call failed.
pub fn check(model: &Option<Arc<PyModel>>) -> PyResult<()> {
    match model.as_deref().and_then(PyModel::failure) {
        Some(why) => Err(crate::errors::FedclusterError::new_err(why.to_string())),
        None => Ok(()),
    }
}

/// The model's first error, for a run's own error chain.
pub fn check_run(model: &Option<Arc<PyModel>>) -> anyhow::Result<()> {
    match model.as_deref().and_then(PyModel::failure) {
        Some(why) => Err(anyhow::anyhow!("{why}")),
        None => Ok(()),
    }
}

/// `result`, unless the model failed first: its error then (a run that
/// went on through NaN after the model failed ends in a consequence of
/// that failure).
pub fn checked<T>(model: &Option<Arc<PyModel>>, result: PyResult<T>) -> PyResult<T> {
    check(model)?;
    result
}
