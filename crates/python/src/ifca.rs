//! IFCA's messages (`fedcluster_algorithms::ifca::{Down, Up}`) as numpy
//! arrays, for a client half written in Python (the bring-your-own-PyTorch
//! adapter): the same bytes the Rust client half reads and writes.

use anyhow::{anyhow, bail};
use numpy::{PyArray1, PyArray3, PyArrayMethods, PyReadonlyArray1, PyReadonlyArray2};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};

use fedcluster_algorithms::ifca::{Down, Up};
use fedcluster_core::Message;
use fedcluster_net::codec;

use crate::errors::failed;

/// A server-to-client IFCA message: `models` (`replicas x k x p`; with
/// `own`, only each replica's own cluster is sent, the others are zeros),
/// `lrs` (a step size per replica), `shared` (leading parameters shared by
/// the `k` models), `own` (`None`, or each replica's cluster: the client
/// skips the assignment) and `velocities` (`None`, or momentum buffers laid
/// out like `models`).
#[pyfunction]
pub fn ifca_decode_down<'py>(py: Python<'py>, message: &[u8]) -> PyResult<Bound<'py, PyDict>> {
    let down: Down =
        codec::decode(message).map_err(|e| failed(anyhow!("not an IFCA message: {e}")))?;
    let (r, k, p) = (down.replicas, down.k, down.params_per_model());
    let cube = |values: &[f32]| -> PyResult<Bound<'py, PyArray3<f32>>> {
        PyArray1::from_slice(py, values).reshape([r, k, p])
    };
    let out = PyDict::new(py);
    out.set_item("models", cube(&down.models)?)?;
    out.set_item("lrs", PyArray1::from_slice(py, &down.lrs))?;
    out.set_item("shared", down.shared)?;
    out.set_item(
        "own",
        down.own.as_ref().map(|o| PyArray1::from_slice(py, o)),
    )?;
    let velocities = down.velocities.as_ref().map(|v| cube(v)).transpose()?;
    out.set_item("velocities", velocities)?;
    Ok(out)
}

/// A client-to-server IFCA message: per replica the `chosen` cluster, its
/// loss (`None` where the replica diverged on this client), the `payload`
/// (`replicas x p`: the gradient, or the model after local training),
/// `velocity` (`replicas x p` momentum buffers, or `None`) and the client's
/// number of training `samples`.
#[pyfunction]
#[pyo3(signature = (chosen, losses, payload, samples, velocity = None))]
pub fn ifca_encode_up<'py>(
    py: Python<'py>,
    chosen: PyReadonlyArray1<'_, u32>,
    losses: Vec<Option<f64>>,
    payload: PyReadonlyArray2<'_, f32>,
    samples: usize,
    velocity: Option<PyReadonlyArray2<'_, f32>>,
) -> PyResult<Bound<'py, PyBytes>> {
    let chosen = chosen.as_array().to_vec();
    let (replicas, _) = payload.as_array().dim();
    let check = || -> anyhow::Result<()> {
        if chosen.len() != replicas || losses.len() != replicas {
            bail!(
                "{} chosen clusters and {} losses for a payload of {replicas} replicas",
                chosen.len(),
                losses.len()
            );
        }
        if let Some(v) = &velocity
            && v.as_array().dim() != payload.as_array().dim()
        {
            bail!("velocity's shape differs from payload's");
        }
        Ok(())
    };
    check().map_err(failed)?;
    let up = Up {
        chosen,
        losses,
        payload: payload.as_array().iter().copied().collect(),
        velocity: velocity.map_or_else(Vec::new, |v| v.as_array().iter().copied().collect()),
        samples,
    };
    if !up.is_finite() {
        return Err(failed(anyhow!(
            "non-finite values (NaN or infinity) in the reply"
        )));
    }
    let bytes = codec::encode(&up).map_err(|e| failed(e.into()))?;
    Ok(PyBytes::new(py, &bytes))
}

/// An encoded IFCA reply as a dict (the arguments of [`ifca_encode_up`],
/// `payload` and `velocity` flat).
#[pyfunction]
pub fn ifca_decode_up<'py>(py: Python<'py>, reply: &[u8]) -> PyResult<Bound<'py, PyDict>> {
    let up: Up = codec::decode(reply).map_err(|e| failed(anyhow!("not an IFCA reply: {e}")))?;
    let out = PyDict::new(py);
    out.set_item("chosen", PyArray1::from_slice(py, &up.chosen))?;
    out.set_item("losses", up.losses)?;
    out.set_item("payload", PyArray1::from_slice(py, &up.payload))?;
    out.set_item("velocity", PyArray1::from_slice(py, &up.velocity))?;
    out.set_item("samples", up.samples)?;
    Ok(out)
}
