//! The algorithm table and any algorithm's messages, by algorithm name: what
//! the Python package derives its per-algorithm surface from (the Flower
//! strategy classes, `fedcluster.messages`) instead of a list of its own.
//!
//! [`decode_down`] and [`decode_up`] read wire bytes as the named
//! algorithm's `Down` or `Up` type with the networked transport's codec
//! ([`fedcluster_net::codec`]), through [`AlgorithmConfig::visit_named`], and
//! hand back that type's serde form as JSON text (Python parses it with
//! `json`). An unknown name or bytes that are no such message are a
//! `ValueError`, never a panic.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use serde::Serialize;

use fedcluster_algorithms::{Algorithm, AlgorithmConfig, VisitType};
use fedcluster_net::codec;

/// Every algorithm name of the table, in table order.
#[pyfunction]
pub fn algorithm_names() -> Vec<&'static str> {
    AlgorithmConfig::NAMES.to_vec()
}

/// Every line of the algorithm table: `(name, type_name, title)`, the name
/// configs give it, its type's CamelCase name and a one-line title.
#[pyfunction]
pub fn algorithm_table() -> Vec<(&'static str, &'static str, &'static str)> {
    AlgorithmConfig::TABLE
        .iter()
        .map(|a| (a.name, a.type_name, a.title))
        .collect()
}

/// Which of an algorithm's two message types to read.
#[derive(Clone, Copy)]
enum Direction {
    Down,
    Up,
}

impl Direction {
    fn what(self) -> &'static str {
        match self {
            Direction::Down => "server-to-client message",
            Direction::Up => "client-to-server message",
        }
    }
}

/// Decodes bytes as the visited algorithm's message and writes it as JSON.
struct DecodeJson<'a> {
    bytes: &'a [u8],
    direction: Direction,
}

impl VisitType for DecodeJson<'_> {
    type Output = Result<String, String>;

    fn visit<A: Algorithm>(self) -> Self::Output {
        match self.direction {
            Direction::Down => {
                to_json(&codec::decode::<A::Down>(self.bytes).map_err(|e| e.to_string())?)
            }
            Direction::Up => {
                to_json(&codec::decode::<A::Up>(self.bytes).map_err(|e| e.to_string())?)
            }
        }
    }
}

fn to_json<T: Serialize>(message: &T) -> Result<String, String> {
    serde_json::to_string(message).map_err(|e| format!("not representable as JSON: {e}"))
}

fn decode(py: Python<'_>, algorithm: &str, bytes: &[u8], direction: Direction) -> PyResult<String> {
    let visitor = DecodeJson { bytes, direction };
    let decoded = py.detach(|| AlgorithmConfig::visit_named(algorithm, visitor));
    match decoded {
        None => Err(PyValueError::new_err(format!(
            "unknown algorithm `{algorithm}`: expected one of {}",
            AlgorithmConfig::NAMES.join(", ")
        ))),
        Some(Err(why)) => Err(PyValueError::new_err(format!(
            "not a `{algorithm}` {} ({} bytes): {why}",
            direction.what(),
            bytes.len()
        ))),
        Some(Ok(json)) => Ok(json),
    }
}

/// A server-to-client message of `algorithm` (its wire form) as JSON text.
#[pyfunction]
pub fn decode_down(py: Python<'_>, algorithm: &str, message: &[u8]) -> PyResult<String> {
    decode(py, algorithm, message, Direction::Down)
}

/// A client-to-server message of `algorithm` (its wire form) as JSON text.
#[pyfunction]
pub fn decode_up(py: Python<'_>, algorithm: &str, reply: &[u8]) -> PyResult<String> {
    decode(py, algorithm, reply, Direction::Up)
}
