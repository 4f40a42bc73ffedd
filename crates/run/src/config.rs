//! The run configuration: a TOML file describing data, model, algorithm, rounds
//! and seed. Unknown keys and bad values are rejected with their field path.

use std::path::Path;

use anyhow::{Context, Result, anyhow, bail};
use serde::{Deserialize, Serialize};

pub use crate::model::ModelConfig;
pub use fedcluster_algorithms::AlgorithmConfig;
use fedcluster_algorithms::common::checked::at_most;
use fedcluster_algorithms::{Algorithm, FieldError, VisitType};
use fedcluster_core::limits;
pub use fedcluster_data::DataConfig;
use fedcluster_data::table::{DataKind, VisitKind};

/// A whole experiment.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunConfig {
    /// Free-form name, used in reports.
    #[serde(default)]
    pub name: Option<String>,
    /// Seed of every random stream of the run.
    #[serde(default)]
    pub seed: u64,
    /// Number of federated rounds.
    pub rounds: usize,
    /// Worker threads (0: one per core). Results do not depend on it.
    #[serde(default)]
    pub threads: usize,
    /// Evaluate the test clients every this many rounds (0: last round only).
    #[serde(default)]
    pub eval_every: usize,
    /// Also evaluate the test clients after these rounds (numbered from 1).
    #[serde(default)]
    pub eval_at: Vec<usize>,
    /// How each test client picks its model: `lowest-loss` (default),
    /// `highest-accuracy`, `assigned` (each training client's model, on its
    /// true cluster's test data), `own` (each training client's model on its
    /// own test split, averaged with equal weight per client) or `personal`
    /// (as `own`, a client never assigned placed by the algorithm's newcomer
    /// rule).
    #[serde(default)]
    pub test_pick: fedcluster_sim::record::TestPick,
    /// Local training: score at most this many local models (evenly spaced) on
    /// their cluster's test data; 0 (default) scores every one.
    #[serde(default)]
    pub local_eval_models: usize,
    /// Start from the cluster models in this `models.safetensors` (a run
    /// directory's), instead of drawing them (`fedcluster run --init-from`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub init_from: Option<std::path::PathBuf>,
    /// The federated data set.
    pub data: DataConfig,
    /// The model architecture.
    #[serde(default)]
    pub model: ModelConfig,
    /// The algorithm and its parameters.
    pub algorithm: AlgorithmConfig,
}

/// The embedded default experiment: IFCA on the IFCA paper's synthetic mixture.
pub const DEFAULT_CONFIG: &str = include_str!("../../../configs/ifca-synthetic.toml");

/// The `--set` override that starts the run from the models in `file`.
pub fn init_from_override(file: &std::path::Path) -> String {
    let file = toml::Value::String(file.to_string_lossy().into_owned());
    format!("init_from={file}")
}

/// The data root, where a data set's files are looked for when neither
/// `--data-dir` nor the config's `data.data_dir` gives them
/// (`<root>/<dir_name>`, e.g. `data/mnist`): the environment variable
/// `FEDCLUSTER_DATA` ([`fedcluster_data::table::DATA_ROOT_VAR`]) when set and
/// not empty, else `data` in the working directory (where `fedcluster data
/// fetch` writes by default). Read here, where the process's environment is
/// the run's, and handed to [`DataConfig::resolve_data_dir`].
pub fn data_root() -> std::path::PathBuf {
    use fedcluster_data::table::{DATA_ROOT_VAR, DEFAULT_DATA_ROOT};
    std::env::var_os(DATA_ROOT_VAR)
        .filter(|root| !root.is_empty())
        .map_or_else(|| DEFAULT_DATA_ROOT.into(), std::path::PathBuf::from)
}

/// The `--set` override that points `data.data_dir` at `dir`.
pub fn data_dir_override(dir: &std::path::Path) -> String {
    let dir = toml::Value::String(dir.to_string_lossy().into_owned());
    format!("data.data_dir={dir}")
}

impl RunConfig {
    /// Parses TOML text, applies `key=value` overrides and validates the result.
    /// `origin` names the source in error messages.
    pub fn parse(text: &str, overrides: &[String], origin: &str) -> Result<Self> {
        let mut table: toml::Table = toml::from_str(text).map_err(|e| {
            anyhow!("{origin}: invalid TOML: {}", e.message().trim())
                .context(one_line(&e.to_string()))
        })?;
        for o in overrides {
            apply_override(&mut table, o)?;
        }
        let refined = tagged_section_error(&table);
        let sections = table.clone();
        let config: RunConfig = serde_path_to_error::deserialize(toml::Value::Table(table))
            .map_err(|e| {
                if let Some((path, inner)) = &refined {
                    return anyhow!("{origin}: field `{path}`: {inner}");
                }
                let mut path = e.path().to_string();
                let inner = one_line(&e.inner().to_string());
                // Inside a tagged table serde names only the table: find the
                // unknown key in it.
                if let Some(key) = inner
                    .strip_prefix("unknown field `")
                    .and_then(|rest| rest.split('`').next())
                    .filter(|_| !path.contains('.') && path != ".")
                    && let Some(at) = sections.get(&path).and_then(|v| key_path(v, key))
                {
                    path = format!("{path}{at}");
                }
                if path == "." || path.is_empty() {
                    anyhow!("{origin}: {inner}")
                } else {
                    anyhow!("{origin}: field `{path}`: {inner}")
                }
            })?;
        config
            .validate()
            .map_err(|e| anyhow!("{origin}: field `{}`: {}", e.field, e.message))?;
        Ok(config)
    }

    /// Reads and parses a config file (at most
    /// [`limits::MAX_CONFIG_BYTES`]).
    pub fn load(path: &Path, overrides: &[String]) -> Result<Self> {
        let text = read_config_text(path)?;
        Self::parse(&text, overrides, &path.display().to_string())
    }

    /// Whether the round `round` (from 0) is scored on the test split: the
    /// last, and those `eval_every` and `eval_at` name.
    pub fn evaluates(&self, round: usize) -> bool {
        let periodic = self.eval_every > 0 && (round + 1).is_multiple_of(self.eval_every);
        round + 1 == self.rounds || periodic || self.eval_at.contains(&(round + 1))
    }

    /// The config as TOML, every default filled in.
    pub fn to_toml(&self) -> Result<String> {
        Ok(toml::to_string_pretty(self)?)
    }

    fn validate(&self) -> Result<(), FieldError> {
        if self.rounds == 0 {
            return Err(FieldError::new("rounds", "must be at least 1, got 0"));
        }
        at_most("rounds", self.rounds, limits::MAX_ROUNDS)?;
        at_most("threads", self.threads, limits::MAX_THREADS)?;
        if let Some((i, r)) = self
            .eval_at
            .iter()
            .enumerate()
            .find(|(_, r)| **r == 0 || **r > self.rounds)
        {
            return Err(FieldError::new(
                format!("eval_at[{i}]"),
                format!("round {r} is not among the rounds 1..={}", self.rounds),
            ));
        }
        self.data.validate().map_err(|e| match e {
            fedcluster_data::DataError::Invalid { field, why } => {
                FieldError::new(field, why).within("data")
            }
            other => FieldError::new("data", other.to_string()),
        })?;
        self.algorithm.validate().map_err(|e| e.within("algorithm"))
    }
}

/// The text of the config file at `path`, refused past
/// [`limits::MAX_CONFIG_BYTES`] without reading further.
fn read_config_text(path: &Path) -> Result<String> {
    use std::io::Read as _;
    let context = || format!("cannot read config {}", path.display());
    let file = std::fs::File::open(path).with_context(context)?;
    let mut bytes = Vec::new();
    file.take(limits::MAX_CONFIG_BYTES + 1)
        .read_to_end(&mut bytes)
        .with_context(context)?;
    if bytes.len() as u64 > limits::MAX_CONFIG_BYTES {
        bail!(
            "config {}: larger than {} bytes, the most a config may hold",
            path.display(),
            limits::MAX_CONFIG_BYTES
        );
    }
    String::from_utf8(bytes).map_err(|e| {
        anyhow!(
            "config {}: not UTF-8 text (invalid byte at offset {})",
            path.display(),
            e.utf8_error().valid_up_to()
        )
    })
}

/// Serde loses the field path inside internally tagged enums (`[data]` by
/// `kind`, `[algorithm]` by `name`); this re-reads such a section as its variant's
/// struct to find the exact field of the first error.
fn tagged_section_error(table: &toml::Table) -> Option<(String, String)> {
    let body = |section: &str, tag: &str| -> Option<(toml::Table, String)> {
        let mut t = table.get(section)?.as_table()?.clone();
        let name = t.remove(tag)?.as_str()?.to_string();
        Some((t, name))
    };
    if let Some((t, kind)) = body("data", "kind") {
        let found = DataConfig::visit_named(&kind, ProbeData(t)).flatten();
        if found.is_some() {
            return found;
        }
    }
    let (t, name) = body("algorithm", "name")?;
    AlgorithmConfig::visit_named(&name, ProbeAlgorithm(t)).flatten()
}

/// Reads a `[data]` table as the named kind's spec type.
struct ProbeData(toml::Table);

impl VisitKind for ProbeData {
    type Output = Option<(String, String)>;
    fn visit<K: DataKind>(self) -> Self::Output {
        probe::<K::Spec>("data", self.0)
    }
}

/// Reads an `[algorithm]` table as the named algorithm's config type.
struct ProbeAlgorithm(toml::Table);

impl VisitType for ProbeAlgorithm {
    type Output = Option<(String, String)>;
    fn visit<A: Algorithm>(self) -> Self::Output {
        probe::<A::Config>("algorithm", self.0)
    }
}

/// The path and message of the first error reading `body` as a `T`.
fn probe<T: serde::de::DeserializeOwned>(
    section: &str,
    body: toml::Table,
) -> Option<(String, String)> {
    serde_path_to_error::deserialize::<_, T>(toml::Value::Table(body))
        .err()
        .map(|e| {
            let inner = one_line(&e.inner().to_string());
            // A missing field is an error of the table itself (path `.`):
            // name the field that is missing.
            let at = match e.path().to_string().as_str() {
                "." | "" => inner
                    .strip_prefix("missing field `")
                    .and_then(|rest| rest.split('`').next())
                    .map(|key| format!(".{key}"))
                    .unwrap_or_default(),
                path => format!(".{path}"),
            };
            (format!("{section}{at}"), inner)
        })
}

/// Where `key` sits in `value` (`.key` or `.table.key`), depth first.
fn key_path(value: &toml::Value, key: &str) -> Option<String> {
    let table = value.as_table()?;
    if table.contains_key(key) {
        return Some(format!(".{key}"));
    }
    table
        .iter()
        .find_map(|(name, v)| key_path(v, key).map(|rest| format!(".{name}{rest}")))
}

/// `s` on one line, without the ` in `key`` that some deserializers append
/// (the field path is already given in front).
fn one_line(s: &str) -> String {
    let line = s.split_whitespace().collect::<Vec<_>>().join(" ");
    match line.rfind(" in `") {
        Some(at) if line.ends_with('`') && !line[at + 5..line.len() - 1].contains('`') => {
            line[..at].to_string()
        }
        _ => line,
    }
}

/// Applies one `--set key.path=value` override; `value` is read as a TOML value
/// (`3`, `0.1`, `true`, `"text"`, `[1, 2]`, `{ kind = "gd" }`), or as a plain
/// string if it is not one. `key.path?=value` sets the key only where the config
/// already has it (and does nothing elsewhere).
fn apply_override(table: &mut toml::Table, assignment: &str) -> Result<()> {
    let Some((key, raw)) = assignment.split_once('=') else {
        bail!("--set {assignment}: expected key=value");
    };
    let (key, only_if_present) = match key.trim().strip_suffix('?') {
        Some(key) => (key.trim(), true),
        None => (key.trim(), false),
    };
    if only_if_present && !has_key(table, key) {
        return Ok(());
    }
    let value = toml::from_str::<toml::Table>(&format!("v = {raw}"))
        .ok()
        .and_then(|mut t| t.remove("v"))
        .unwrap_or_else(|| toml::Value::String(raw.trim().to_string()));
    let parts: Vec<&str> = key.split('.').collect();
    if parts.iter().any(|p| p.is_empty()) {
        bail!("--set {assignment}: empty key segment");
    }
    let mut node = table;
    for part in &parts[..parts.len() - 1] {
        node = node
            .entry(part.to_string())
            .or_insert_with(|| toml::Value::Table(toml::Table::new()))
            .as_table_mut()
            .ok_or_else(|| anyhow!("--set {key}: `{part}` is not a table"))?;
    }
    node.insert(parts[parts.len() - 1].to_string(), value);
    Ok(())
}

/// Whether the dotted `key` names a value in `table`.
fn has_key(table: &toml::Table, key: &str) -> bool {
    let mut parts = key.split('.');
    let mut node = table.get(parts.next().unwrap_or_default());
    for part in parts {
        node = node.and_then(|v| v.as_table()).and_then(|t| t.get(part));
    }
    node.is_some()
}
