//! `fedcluster._native`: the Rust side of the Python package (`python/`).
//!
//! - [`config::Config`]: a run config, loaded from a file, TOML text or a
//!   Python dict, with the CLI's validation and messages.
//! - [`run::run`]: `fedcluster run` in process, its outcome as JSON and numpy.
//! - [`server::Server`]: the configured server half, its messages carried by
//!   the caller (Flower, any transport): `plan`, `receive`, `finish`.
//! - [`client::Client`]: one client's half: `handle`, `state`, `restore`.
//! - [`ifca`]: IFCA's messages as numpy arrays, for client code written in
//!   Python (the bring-your-own-PyTorch adapter).
//! - [`command::main`]: the `fedcluster` command line itself (the Rust
//!   binary's), for the package's `fedcluster` console command.
//! - [`model::PyModel`]: a model written in Python (a user's PyTorch
//!   module) behind the Rust `Model` trait, taken by `run`, `Server` and
//!   `Client` in place of the config's `[model]`.
//! - [`messages`]: the algorithm table (names, type names, titles: the
//!   Flower strategy classes derive from it) and any algorithm's messages
//!   decoded by its name.
//!
//! Every call that runs Rust for long releases the GIL. Errors are
//! `ConfigError` (the config) or `FedclusterError` (anything else), carrying
//! the CLI's one-line message.

mod client;
mod command;
mod config;
mod errors;
mod ifca;
mod messages;
mod model;
mod run;
mod server;

use pyo3::prelude::*;

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("FedclusterError", py.get_type::<errors::FedclusterError>())?;
    m.add("ConfigError", py.get_type::<errors::ConfigError>())?;
    m.add_class::<config::Config>()?;
    m.add_class::<server::Server>()?;
    m.add_class::<client::Client>()?;
    m.add_class::<model::Draws>()?;
    m.add_function(wrap_pyfunction!(run::run, m)?)?;
    m.add_function(wrap_pyfunction!(command::main, m)?)?;
    m.add_function(wrap_pyfunction!(config::default_config, m)?)?;
    m.add_function(wrap_pyfunction!(ifca::ifca_decode_down, m)?)?;
    m.add_function(wrap_pyfunction!(ifca::ifca_encode_up, m)?)?;
    m.add_function(wrap_pyfunction!(ifca::ifca_decode_up, m)?)?;
    m.add_function(wrap_pyfunction!(messages::algorithm_names, m)?)?;
    m.add_function(wrap_pyfunction!(messages::algorithm_table, m)?)?;
    m.add_function(wrap_pyfunction!(messages::decode_down, m)?)?;
    m.add_function(wrap_pyfunction!(messages::decode_up, m)?)?;
    Ok(())
}
