//! One call into the Python model: its arguments as numpy arrays, its
//! results checked (type, length, NaN), and every failure as one line naming
//! the call ("the Python model's loss_grad raised ValueError: ...").

use numpy::{PyArray1, PyArrayMethods, PyReadonlyArray1, PyUntypedArrayMethods};
use pyo3::call::PyCallArgs;
use pyo3::prelude::*;

use fedcluster_core::params::all_finite;
use fedcluster_core::{Batch, Targets};

/// A call of `method` on the Python model.
pub struct Call<'m> {
    pub object: &'m Py<PyAny>,
    pub method: &'static str,
}

impl Call<'_> {
    /// `object.method(*args)`, its exception as the call's error.
    pub fn with<'py>(
        &self,
        py: Python<'py>,
        args: impl PyCallArgs<'py>,
    ) -> Result<Bound<'py, PyAny>, String> {
        (self.object.bind(py).call_method1(self.method, args)).map_err(|e| self.raised(py, &e))
    }

    /// The mean loss at `params`.
    pub fn loss(&self, params: &[f32], batch: Batch<'_>) -> Result<f64, String> {
        Python::attach(|py| {
            let value = self.with(py, arguments(py, params, batch))?;
            let loss = self.float(&value, "a loss")?;
            self.not_nan_at(loss, params)
        })
    }

    /// The mean loss at `params`, its gradient written into `grad`.
    pub fn loss_grad(
        &self,
        params: &[f32],
        batch: Batch<'_>,
        grad: &mut [f32],
    ) -> Result<f64, String> {
        Python::attach(|py| {
            let value = self.with(py, arguments(py, params, batch))?;
            let (loss, g) = self.pair(&value, "(loss, gradient)")?;
            let loss = self.float(&loss, "a loss")?;
            fill_flat(py, &g, grad, "gradient values", self.method)?;
            if all_finite(params) && grad.iter().any(|v| v.is_nan()) {
                return Err(self.nan_at_finite("gradient"));
            }
            self.not_nan_at(loss, params)
        })
    }

    /// Samples classified correctly, or `None` (a regression model).
    pub fn count_correct(&self, params: &[f32], batch: Batch<'_>) -> Result<Option<usize>, String> {
        Python::attach(|py| {
            let value = self.with(py, arguments(py, params, batch))?;
            if value.is_none() {
                return Ok(None);
            }
            match value.extract::<usize>() {
                Ok(n) if n <= batch.len() => Ok(Some(n)),
                _ => Err(self.returned(&format!(
                    "{}, not a count of the batch's {} samples (or None)",
                    repr(&value),
                    batch.len()
                ))),
            }
        })
    }

    /// The object's own full-batch training: `train(params, x, y, lr,
    /// steps) -> (loss at the start, parameters)`; `params` replaced by
    /// what it returns.
    pub fn train(
        &self,
        params: &mut [f32],
        batch: Batch<'_>,
        lr: f32,
        steps: usize,
    ) -> Result<f64, String> {
        Python::attach(|py| {
            let (p, x, y) = arguments(py, params, batch);
            let value = self.with(py, (p, x, y, lr, steps))?;
            self.trained(py, &value, params)
        })
    }

    /// `(loss, parameters)` returned by a training call, the parameters
    /// written into `params`: the loss, NaN where the parameters are not
    /// finite (a finite loss vouches for finite parameters).
    pub fn trained(
        &self,
        py: Python<'_>,
        value: &Bound<'_, PyAny>,
        params: &mut [f32],
    ) -> Result<f64, String> {
        let (loss, p) = self.pair(value, "(loss, parameters)")?;
        let loss = self.float(&loss, "a loss")?;
        fill_flat(py, &p, params, "parameters", self.method)?;
        Ok(if all_finite(params) { loss } else { f64::NAN })
    }

    fn pair<'py>(
        &self,
        value: &Bound<'py, PyAny>,
        what: &str,
    ) -> Result<(Bound<'py, PyAny>, Bound<'py, PyAny>), String> {
        value
            .extract()
            .map_err(|_| self.returned(&format!("{}, not a pair {what}", repr(value))))
    }

    fn float(&self, value: &Bound<'_, PyAny>, what: &str) -> Result<f64, String> {
        value
            .extract::<f64>()
            .map_err(|_| self.returned(&format!("{}, not {what} (a float)", repr(value))))
    }

    /// `loss`, or an error when it is NaN at finite parameters (a NaN from
    /// a model that has not diverged is a bug in the model).
    fn not_nan_at(&self, loss: f64, params: &[f32]) -> Result<f64, String> {
        match loss.is_nan() && all_finite(params) {
            true => Err(self.nan_at_finite("loss")),
            false => Ok(loss),
        }
    }

    fn nan_at_finite(&self, what: &str) -> String {
        format!(
            "the Python model's {} returned a NaN {what} at finite parameters",
            self.method
        )
    }

    fn returned(&self, what: &str) -> String {
        format!("the Python model's {} returned {what}", self.method)
    }

    fn raised(&self, py: Python<'_>, e: &PyErr) -> String {
        let kind =
            (e.get_type(py).name()).map_or_else(|_| "an exception".into(), |n| n.to_string());
        let message = e
            .value(py)
            .str()
            .map_or_else(|_| String::new(), |s| s.to_string());
        format!(
            "the Python model's {} raised {kind}: {message}",
            self.method
        )
    }
}

/// `(params, x, y)` as numpy arrays: `float32` parameters, `n x dim`
/// `float32` features, `float32` values or `uint32` classes.
pub fn arguments<'py>(
    py: Python<'py>,
    params: &[f32],
    batch: Batch<'_>,
) -> (Bound<'py, PyAny>, Bound<'py, PyAny>, Bound<'py, PyAny>) {
    let p = PyArray1::from_slice(py, params).into_any();
    let x = PyArray1::from_slice(py, batch.x);
    let x = match x.reshape([batch.len(), batch.dim]) {
        Ok(x) => x.into_any(),
        // `Batch` holds `len * dim` values: the reshape cannot fail.
        Err(_) => x.into_any(),
    };
    let y = match batch.y {
        Targets::Real(y) => PyArray1::from_slice(py, y).into_any(),
        Targets::Class(y) => PyArray1::from_slice(py, y).into_any(),
    };
    (p, x, y)
}

/// Copies `value`, a flat `float32` array of `out.len()` values (any float
/// dtype is converted), into `out`; else an error naming `method` and `what`.
pub fn fill_flat(
    py: Python<'_>,
    value: &Bound<'_, PyAny>,
    out: &mut [f32],
    what: &str,
    method: &str,
) -> Result<(), String> {
    let returned = |got: String| format!("the Python model's {method} returned {got}");
    let array = match value.extract::<PyReadonlyArray1<'_, f32>>() {
        Ok(a) => a,
        Err(_) => as_float32(py, value).ok_or_else(|| {
            returned(format!(
                "{}, not a flat float32 array of {what}",
                repr(value)
            ))
        })?,
    };
    if array.ndim() != 1 || array.len() != out.len() {
        return Err(returned(format!(
            "{} {what} (shape {:?}); the model has {} parameters, and that may not change between calls",
            array.len(),
            array.shape(),
            out.len()
        )));
    }
    match array.as_slice() {
        Ok(values) => out.copy_from_slice(values),
        Err(_) => (out.iter_mut().zip(array.as_array().iter())).for_each(|(o, v)| *o = *v),
    }
    Ok(())
}

/// `value` as a 1-D `float32` array (numpy's `asarray`), when it is a
/// 1-D array of another float dtype.
fn as_float32<'py>(
    py: Python<'py>,
    value: &Bound<'py, PyAny>,
) -> Option<PyReadonlyArray1<'py, f32>> {
    let numpy = py.import("numpy").ok()?;
    let dtype = value.getattr("dtype").ok()?;
    let kind: String = dtype.getattr("kind").ok()?.extract().ok()?;
    if kind != "f" {
        return None;
    }
    let converted = numpy.call_method1("asarray", (value, "float32")).ok()?;
    converted.extract::<PyReadonlyArray1<'py, f32>>().ok()
}

/// `value`'s repr, shortened.
pub fn repr(value: &Bound<'_, PyAny>) -> String {
    let text = value.repr().map_or_else(|_| "?".into(), |r| r.to_string());
    match text.char_indices().nth(60) {
        Some((at, _)) => format!("{}...", &text[..at]),
        None => text,
    }
}
