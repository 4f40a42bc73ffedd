//! The package's exceptions: the CLI's one-line messages as Python errors.

use pyo3::PyErr;
use pyo3::create_exception;
use pyo3::exceptions::PyException;

create_exception!(
    fedcluster,
    FedclusterError,
    PyException,
    "An error of fedcluster: a run, a message or a state it cannot use."
);
create_exception!(
    fedcluster,
    ConfigError,
    FedclusterError,
    "A config fedcluster cannot run: the message names the field."
);

/// `e` as the CLI prints it, on one line.
pub fn one_line(e: &anyhow::Error) -> String {
    format!("{e:#}").replace('\n', " ")
}

/// A run or protocol error.
pub fn failed(e: anyhow::Error) -> PyErr {
    FedclusterError::new_err(one_line(&e))
}

/// A config error.
pub fn bad_config(e: anyhow::Error) -> PyErr {
    ConfigError::new_err(one_line(&e))
}
