//! The algorithm table's vocabulary: what an algorithm is ([`Algorithm`]: a
//! config and the construction of its two halves), what its construction may
//! take ([`Setup`], ground truth only as named optional inputs), and how
//! callers visit the configured algorithm with its concrete types
//! ([`Visit`], [`VisitType`]). The table itself, the closed
//! [`crate::AlgorithmConfig`] enum, is written once in `lib.rs` with
//! [`algorithm_table!`]: one line per algorithm.

use std::fmt::Debug;

use serde::Serialize;
use serde::de::DeserializeOwned;

use fedcluster_core::{ClientHalf, Message, Model, ServerHalf};

use crate::common::checked::{Checked, FieldError, Validate};

/// One algorithm: its config and the construction of its halves. Each
/// algorithm directory implements it on a unit type (`ifca::Ifca`, ...).
pub trait Algorithm: 'static {
    /// The config table under `[algorithm]` (without `name`).
    type Config: Validate + Clone + Debug + Serialize + DeserializeOwned;
    /// Server-to-client message; what crosses the wire in networked runs.
    type Down: Message + Serialize + DeserializeOwned;
    /// Client-to-server message.
    type Up: Message + Serialize + DeserializeOwned;
    /// The server half; serde, so a run can checkpoint it between rounds.
    type Server: ServerHalf<Down = Self::Down, Up = Self::Up> + Serialize + DeserializeOwned;
    /// The client half; every client starts from a clone of it. Serde, so a
    /// run can checkpoint what each client keeps between rounds.
    type Client: ClientHalf<Down = Self::Down, Up = Self::Up>
        + Clone
        + Serialize
        + DeserializeOwned
        + 'static;

    /// Whether the server starts from [`Setup::initial_models`] when given
    /// (its cluster models are drawn by the server, not trained by clients
    /// first).
    const STARTS_FROM_MODELS: bool = false;

    /// The server half for `setup`. Errors name the config field (relative to
    /// `[algorithm]`) that does not fit the setup.
    fn server(config: Checked<Self::Config>, setup: &Setup<'_>)
    -> Result<Self::Server, FieldError>;

    /// The client half: it needs the config only, so a networked client never
    /// builds a server.
    fn client(config: &Checked<Self::Config>) -> Self::Client;

    /// Model-sized vectors a run of this algorithm holds per client at its
    /// peak besides the cluster models and the optimizer moments (a client's
    /// own model kept between rounds, the server's copy of it): a term of the
    /// memory estimate (`run::memory`), measured for each algorithm that
    /// declares one (`cli/tests/memory.rs`).
    fn models_per_client(_config: &Self::Config) -> usize {
        0
    }

    /// Bytes the server holds at once per ordered pair of clients at its
    /// peak (pairwise distance or similarity matrices and the clustering built
    /// on them): a term of the memory estimate that grows with the square of
    /// the clients, measured for each algorithm that declares one
    /// (`cli/tests/memory.rs`).
    fn bytes_per_client_pair(_config: &Self::Config) -> usize {
        0
    }

    /// A fork (`--fork-from`): `server`, read from a checkpoint of a run of
    /// this algorithm under another config, goes on under `config`, which
    /// differs from the checkpoint's in the algorithm fields `differing`
    /// (dotted, relative to `[algorithm]`). An algorithm accepts only when
    /// the rounds so far used none of them, so that the fork computes what a
    /// run of `config` from its first round computes; the client halves are
    /// kept as they are, so a field they hold may never differ. The default
    /// refuses every fork.
    fn continue_under(
        _server: &mut Self::Server,
        _config: &Checked<Self::Config>,
        differing: &[String],
    ) -> Result<(), String> {
        Err(match differing.is_empty() {
            true => "it continues only its own checkpoints (`--resume`)".to_string(),
            false => format!(
                "it continues only its own checkpoints (`--resume`); this config changes {}",
                differing.join(", ")
            ),
        })
    }
}

/// Everything a server half may be built from besides its config.
#[derive(Clone, Copy)]
pub struct Setup<'a> {
    /// The model architecture.
    pub model: &'a dyn Model,
    /// Number of clients in the federation.
    pub num_clients: usize,
    /// The run's seed (initial models come from `(seed, Init, ..)` streams).
    pub seed: u64,
    /// Training points per client, as the clients would report them when
    /// joining (the two-phase method picks its anchors among the largest).
    pub client_sizes: Option<&'a [usize]>,
    /// Ground truth, for the oracle baselines only: each client's true
    /// cluster.
    pub true_clusters: Option<TrueClusters<'a>>,
    /// Ground truth, for the oracle baselines only: the true cluster
    /// parameters (synthetic data).
    pub true_models: Option<&'a [Vec<f32>]>,
    /// The models to start from instead of drawing them (`fedcluster run
    /// --init-from`), for the algorithms with [`Algorithm::STARTS_FROM_MODELS`].
    pub initial_models: Option<&'a [Vec<f32>]>,
}

/// Ground-truth cluster labels, handed to an oracle on purpose.
#[derive(Debug, Clone, Copy)]
pub struct TrueClusters<'a> {
    /// Number of clusters.
    pub clusters: usize,
    /// True cluster of each client.
    pub labels: &'a [usize],
}

impl<'a> Setup<'a> {
    /// A setup without sizes or ground truth.
    pub fn new(model: &'a dyn Model, num_clients: usize, seed: u64) -> Self {
        Self {
            model,
            num_clients,
            seed,
            client_sizes: None,
            true_clusters: None,
            true_models: None,
            initial_models: None,
        }
    }

    /// Checks, before the server allocates them, that `clusters` cluster
    /// models (`replicas` times over) fit this setup: at most one cluster per
    /// client, and at most [`fedcluster_core::limits::MAX_MODEL_VALUES`]
    /// coordinates in all. Errors name `field`.
    pub fn check_models(
        &self,
        field: &str,
        clusters: usize,
        replicas: usize,
    ) -> Result<(), FieldError> {
        if clusters > self.num_clients {
            return Err(FieldError::new(
                field,
                format!(
                    "{clusters} clusters for {} clients: at most one cluster per client",
                    self.num_clients
                ),
            ));
        }
        let values = clusters as u128 * replicas as u128 * self.model.num_params() as u128;
        let what = format!(
            "{replicas} replica(s) x {clusters} clusters x {} parameters, model values held",
            self.model.num_params()
        );
        match fedcluster_core::limits::exceeds(
            &what,
            values,
            fedcluster_core::limits::MAX_MODEL_VALUES,
        ) {
            Some(why) => Err(FieldError::new(field, why)),
            None => Ok(()),
        }
    }

    /// The true clusters, or an error on `field` naming what needs them.
    pub fn require_true_clusters(
        &self,
        field: &str,
        who: &str,
    ) -> Result<TrueClusters<'a>, FieldError> {
        self.true_clusters.ok_or_else(|| {
            FieldError::new(
                field,
                format!("{who} needs the true clusters, which this run does not have"),
            )
        })
    }
}

/// Receives the configured algorithm with its concrete type.
pub trait Visit {
    /// What visiting gives.
    type Output;
    /// Called with the algorithm `A` and its validated config.
    fn visit<A: Algorithm>(self, config: Checked<A::Config>) -> Self::Output;
}

/// Receives an algorithm type by name, before any config is parsed (to read a
/// config table as that algorithm's type).
pub trait VisitType {
    /// What visiting gives.
    type Output;
    /// Called with the algorithm `A`.
    fn visit<A: Algorithm>(self) -> Self::Output;
}

/// One line of the algorithm table as data, for what names algorithms
/// outside Rust (the Python package's Flower strategy classes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AlgorithmInfo {
    /// The `name` a config gives it (`"local-kmeans"`).
    pub name: &'static str,
    /// Its type in this crate (`"LocalKMeans"`), a name in CamelCase.
    pub type_name: &'static str,
    /// One line on what it is and where it comes from (the table line's doc
    /// comment).
    pub title: &'static str,
}

/// Declares the algorithm modules and the closed [`crate::AlgorithmConfig`]
/// enum, one line per algorithm, each with a one-line doc comment (its
/// title): `/// Title` then `Variant = "name" in module::Type,`. Names,
/// validation, dispatch ([`crate::AlgorithmConfig::visit`]), the
/// unknown-name error and [`crate::AlgorithmConfig::TABLE`] all derive from
/// these lines.
macro_rules! algorithm_table {
    ($(
        #[doc = $title:literal]
        $variant:ident = $name:literal in $module:ident :: $algorithm:ident,
    )*) => {
        $(pub mod $module;)*

        /// The algorithms, chosen by `name` in the `[algorithm]` table.
        #[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
        #[serde(tag = "name", deny_unknown_fields)]
        pub enum AlgorithmConfig {
            $(
                #[doc = $title]
                #[doc = ""]
                #[doc = concat!("`name = \"", $name, "\"`: see [`", stringify!($module), "`].")]
                #[serde(rename = $name)]
                $variant(<$module::$algorithm as $crate::table::Algorithm>::Config),
            )*
        }

        impl AlgorithmConfig {
            /// Every algorithm name, in table order.
            pub const NAMES: &[&str] = &[$($name),*];

            /// Every line of the table, in table order.
            pub const TABLE: &[$crate::table::AlgorithmInfo] = &[$($crate::table::AlgorithmInfo {
                name: $name,
                type_name: stringify!($algorithm),
                title: $title.trim_ascii(),
            }),*];

            /// The `name` of the algorithm as written in configs.
            pub fn name(&self) -> &'static str {
                match self {
                    $(AlgorithmConfig::$variant(_) => $name,)*
                }
            }

            /// Validates the config and hands it to `visitor` with the
            /// algorithm's type.
            pub fn visit<V: $crate::table::Visit>(
                &self,
                visitor: V,
            ) -> Result<V::Output, $crate::FieldError> {
                Ok(match self {
                    $(AlgorithmConfig::$variant(c) => visitor
                        .visit::<$module::$algorithm>($crate::Checked::new(c.clone())?),)*
                })
            }

            /// Hands the algorithm called `name` to `visitor` (`None` for an
            /// unknown name).
            pub fn visit_named<V: $crate::table::VisitType>(
                name: &str,
                visitor: V,
            ) -> Option<V::Output> {
                match name {
                    $($name => Some(visitor.visit::<$module::$algorithm>()),)*
                    _ => None,
                }
            }

            /// Checks every field.
            pub fn validate(&self) -> Result<(), $crate::FieldError> {
                match self {
                    $(AlgorithmConfig::$variant(c) => $crate::Validate::validate(c),)*
                }
            }
        }
    };
}
pub(crate) use algorithm_table;

#[cfg(test)]
mod tests {
    use crate::AlgorithmConfig;

    #[test]
    fn every_line_of_the_table_has_a_title_and_a_distinct_type_name() {
        let table = AlgorithmConfig::TABLE;
        let names: Vec<&str> = table.iter().map(|a| a.name).collect();
        assert_eq!(names, AlgorithmConfig::NAMES);
        let mut types: Vec<&str> = table.iter().map(|a| a.type_name).collect();
        types.sort_unstable();
        types.dedup();
        assert_eq!(types.len(), table.len(), "two algorithms share a type name");
        for a in table {
            assert!(
                a.type_name.starts_with(|c: char| c.is_ascii_uppercase()),
                "{}: type name {}",
                a.name,
                a.type_name
            );
            assert!(
                !a.title.is_empty() && a.title == a.title.trim() && !a.title.contains('\n'),
                "{}: title {:?}",
                a.name,
                a.title
            );
        }
        assert_eq!(AlgorithmConfig::TABLE[0].type_name, "Ifca");
    }
}
