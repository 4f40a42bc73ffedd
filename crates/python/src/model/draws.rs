//! `fedcluster._native.Draws`: the run's random stream, lent to a Python
//! model's `init` so that its initial parameters are drawn from the stream
//! the run gives the model (the same stream, so the same draws, as a native
//! model's `init` gets).

use numpy::PyArray1;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use rand::Rng as _;

use fedcluster_core::Rng;
use fedcluster_core::limits;

/// The run's random stream for one `init` call; what the model draws from
/// it is taken from the run's stream after the call.
#[pyclass(module = "fedcluster._native")]
pub struct Draws {
    rng: Rng,
}

impl Draws {
    /// The stream `rng`, lent out.
    pub fn new(rng: Rng) -> Self {
        Self { rng }
    }

    /// The stream after the model's draws.
    pub fn rng(&self) -> &Rng {
        &self.rng
    }
}

#[pymethods]
impl Draws {
    /// `n` values from `U[low, high)` as `float32`, each drawn as a native
    /// model draws one (`models::init::uniform_fan_in` draws
    /// `U[-1/sqrt(fan_in), 1/sqrt(fan_in))`, PyTorch's `nn.Linear` default).
    fn uniform<'py>(
        &mut self,
        py: Python<'py>,
        low: f32,
        high: f32,
        n: usize,
    ) -> PyResult<Bound<'py, PyArray1<f32>>> {
        if !(low.is_finite() && high.is_finite() && low < high) {
            return Err(PyValueError::new_err(format!(
                "uniform: expected finite low < high, got {low} and {high}"
            )));
        }
        if n as u128 > limits::MAX_MODEL_VALUES {
            return Err(PyValueError::new_err(format!(
                "uniform: {n} values is beyond the limit of {} a model may hold",
                limits::MAX_MODEL_VALUES
            )));
        }
        let values: Vec<f32> = (0..n).map(|_| self.rng.random_range(low..high)).collect();
        Ok(PyArray1::from_vec(py, values))
    }

    /// A 64-bit seed drawn from the stream (for `torch.manual_seed` or
    /// `numpy.random.default_rng`).
    fn seed(&mut self) -> u64 {
        self.rng.random()
    }
}
