//! A run config as a Python object.

use std::path::Path;

use anyhow::anyhow;
use pyo3::prelude::*;

use fedcluster_run::config::RunConfig;

use crate::errors::bad_config;

/// A validated run config (every default filled in).
#[pyclass(module = "fedcluster._native", frozen)]
pub struct Config {
    pub(crate) config: RunConfig,
}

#[pymethods]
impl Config {
    /// Loads a config: `kind` is `"path"` (a TOML file), `"toml"` (TOML
    /// text) or `"json"` (a JSON object, from a Python dict); `overrides`
    /// are `key=value` settings as the CLI's `--set` takes them.
    #[new]
    #[pyo3(signature = (source, kind, overrides = Vec::new()))]
    fn new(source: &str, kind: &str, overrides: Vec<String>) -> PyResult<Self> {
        let config = match kind {
            "path" => RunConfig::load(Path::new(source), &overrides),
            "toml" => RunConfig::parse(source, &overrides, "config"),
            "json" => serde_json::from_str::<toml::Table>(source)
                .map_err(|e| anyhow!("config: {e}"))
                .and_then(|table| Ok(toml::to_string(&table)?))
                .and_then(|text| RunConfig::parse(&text, &overrides, "config")),
            other => Err(anyhow!(
                "config kind `{other}`: expected path, toml or json"
            )),
        }
        .map_err(bad_config)?;
        Ok(Self { config })
    }

    /// The resolved config as TOML (what a client half is built from).
    #[getter]
    fn toml(&self) -> PyResult<String> {
        self.config.to_toml().map_err(bad_config)
    }

    /// The resolved config as JSON (its tables as objects).
    #[getter]
    fn json(&self) -> PyResult<String> {
        serde_json::to_string(&self.config).map_err(|e| bad_config(e.into()))
    }

    /// The algorithm's name.
    #[getter]
    fn algorithm(&self) -> &'static str {
        self.config.algorithm.name()
    }

    /// Rounds of the run.
    #[getter]
    fn rounds(&self) -> usize {
        self.config.rounds
    }

    /// The run's seed.
    #[getter]
    fn seed(&self) -> u64 {
        self.config.seed
    }

    /// The config's name, if it has one.
    #[getter]
    fn name(&self) -> Option<String> {
        self.config.name.clone()
    }
}

/// The embedded default config (`fedcluster run` with no config: IFCA on the
/// IFCA paper's synthetic mixture), as TOML text.
#[pyfunction]
pub fn default_config() -> &'static str {
    fedcluster_run::config::DEFAULT_CONFIG
}
