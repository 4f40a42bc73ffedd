//! The data-set table's vocabulary, as the algorithm table is for algorithms:
//! what a kind of data set is ([`DataKind`]: its `[data]` table, its
//! validation, the files it reads and how it is built), and how callers visit
//! a kind by name ([`VisitKind`]). The table itself, the closed
//! [`crate::DataConfig`] enum, is written once in `lib.rs` with
//! [`data_table!`]: one line per kind.

use std::fmt::Debug;
use std::path::Path;

use serde::Serialize;
use serde::de::DeserializeOwned;

use fedcluster_core::{Batch, ClientId, Input};

use crate::data_set::DataSet;
use crate::dataset::{ClientData, TargetsOwned};
use crate::error::{DataError, Result};

/// What a kind reads from `data.data_dir` (a kind that reads nothing is
/// generated from the seed).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Files {
    /// The data set's name in messages (`MNIST`).
    pub title: &'static str,
    /// What the directory must hold (`the directory of its IDX files`).
    pub directory: &'static str,
    /// The directory's conventional name under a data root (`mnist`).
    pub dir_name: &'static str,
    /// The `fedcluster data fetch` name that downloads the files into
    /// `<root>/<dir_name>` (`None`: the user prepares them).
    pub fetch: Option<&'static str>,
}

impl Files {
    /// `; \`fedcluster data fetch NAME\` downloads it into data/DIR` when
    /// the files can be fetched, else empty.
    pub fn fetch_hint(&self) -> String {
        match self.fetch {
            Some(name) => format!(
                "; `fedcluster data fetch {name}` downloads it into data/{}",
                self.dir_name
            ),
            None => String::new(),
        }
    }
}

/// One kind of data set: its config and how its data set is built. Each
/// kind's module implements it on a unit type (`mnist::MnistClusters`, ...).
pub trait DataKind: 'static {
    /// The `[data]` table (without `kind`).
    type Spec: Clone + Debug + PartialEq + Serialize + DeserializeOwned;

    /// The files it reads (`None`: generated from the seed alone).
    const FILES: Option<Files> = None;

    /// Checks every field; the error names the first bad one.
    fn validate(spec: &Self::Spec) -> Result<()>;

    /// The directory [`Self::FILES`] are read from, as configured.
    fn data_dir(_spec: &Self::Spec) -> Option<&Path> {
        None
    }

    /// The data set of `spec` for the run's `seed`; a kind that reads files
    /// takes their directory from [`required_dir`], whose error names it.
    fn build(spec: &Self::Spec, seed: u64) -> Result<DataSet>;

    /// The training data of clients `ids` alone, for a joining process, when
    /// the kind can build them without building the rest (`None`: build the
    /// whole set and keep them).
    fn own_clients(_spec: &Self::Spec, _seed: u64, _ids: &[ClientId]) -> Option<Result<Own>> {
        None
    }
}

/// Some clients' training data alone: what a joining process holds (no other
/// client, no test client, no ground truth).
pub struct Own {
    /// What a model sees of one sample.
    pub input: Input,
    /// The data set's training clients (all of them, not only these).
    pub num_clients: usize,
    /// The clients asked for, in the order asked.
    pub clients: Vec<ClientData>,
}

impl Own {
    /// The `i`-th of the clients asked for.
    pub fn batch(&self, i: usize) -> Batch<'_> {
        self.clients[i].batch(self.input.dim)
    }

    /// The `i`-th of the clients asked for, taken out (empty after).
    pub fn take(&mut self, i: usize) -> ClientData {
        std::mem::replace(
            &mut self.clients[i],
            ClientData {
                x: Vec::new(),
                y: TargetsOwned::Real(Vec::new()),
            },
        )
    }
}

/// Receives a kind of data set by name, before its table is parsed (to read
/// a `[data]` table as that kind's spec).
pub trait VisitKind {
    /// What visiting gives.
    type Output;
    /// Called with the kind `K`.
    fn visit<K: DataKind>(self) -> Self::Output;
}

/// Fails on a client id the data set does not have.
pub fn check_client_ids(ids: &[ClientId], num_clients: usize) -> Result<()> {
    match ids.iter().find(|&&id| id >= num_clients) {
        Some(&id) => Err(DataError::NoSuchClient {
            id,
            clients: num_clients,
        }),
        None => Ok(()),
    }
}

/// `K`'s configured directory, or the error naming the data set, what the
/// directory must hold and the flag that gives it.
pub(crate) fn required_dir<K: DataKind>(spec: &K::Spec) -> Result<&Path> {
    match (K::FILES, K::data_dir(spec)) {
        (_, Some(dir)) => Ok(dir),
        (Some(files), None) => Err(DataError::invalid(
            "data_dir",
            format!(
                "{} needs {} (set it or pass --data-dir DIR){}",
                files.title,
                files.directory,
                files.fetch_hint()
            ),
        )),
        (None, None) => Err(DataError::invalid("data_dir", "this kind reads no files")),
    }
}

/// Declares the data-kind modules' table and the closed
/// [`crate::DataConfig`] enum, one line per kind: `Variant = "name" in
/// module::Kind,`. Names, validation, building, a joining process's own
/// clients, the files each kind reads and the unknown-kind error all derive
/// from these lines.
macro_rules! data_table {
    ($($variant:ident = $name:literal in $module:ident :: $kind:ident,)*) => {
        /// The data sets, chosen by `kind` in the `[data]` table.
        #[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
        #[serde(tag = "kind", deny_unknown_fields)]
        pub enum DataConfig {
            $(
                #[doc = concat!("`kind = \"", $name, "\"`: see [`", stringify!($module), "::", stringify!($kind), "`].")]
                #[serde(rename = $name)]
                $variant(<$module::$kind as $crate::table::DataKind>::Spec),
            )*
        }

        impl DataConfig {
            /// Every kind's name, in table order.
            pub const NAMES: &[&str] = &[$($name),*];

            /// The `kind` as written in configs.
            pub fn name(&self) -> &'static str {
                match self {
                    $(DataConfig::$variant(_) => $name,)*
                }
            }

            /// The files the kind reads (`None`: generated from the seed).
            pub fn files(&self) -> Option<$crate::table::Files> {
                match self {
                    $(DataConfig::$variant(_) =>
                        <$module::$kind as $crate::table::DataKind>::FILES,)*
                }
            }

            /// The files the kind called `name` reads (`None`: an unknown
            /// name, or a kind generated from the seed).
            pub fn files_of(name: &str) -> Option<$crate::table::Files> {
                match name {
                    $($name => <$module::$kind as $crate::table::DataKind>::FILES,)*
                    _ => None,
                }
            }

            /// Checks every field; the error names the first bad one.
            pub fn validate(&self) -> $crate::Result<()> {
                match self {
                    $(DataConfig::$variant(s) =>
                        <$module::$kind as $crate::table::DataKind>::validate(s),)*
                }
            }

            /// The data set for the run's `seed`.
            pub fn build(&self, seed: u64) -> $crate::Result<$crate::DataSet> {
                match self {
                    $(DataConfig::$variant(s) =>
                        <$module::$kind as $crate::table::DataKind>::build(s, seed),)*
                }
            }

            /// Clients `ids`' training data alone, where the kind builds them
            /// without the rest (`None`: build the whole set).
            pub fn own_clients(
                &self,
                seed: u64,
                ids: &[fedcluster_core::ClientId],
            ) -> Option<$crate::Result<$crate::table::Own>> {
                match self {
                    $(DataConfig::$variant(s) =>
                        <$module::$kind as $crate::table::DataKind>::own_clients(s, seed, ids),)*
                }
            }

            /// Hands the kind called `name` to `visitor` (`None` for an
            /// unknown name).
            pub fn visit_named<V: $crate::table::VisitKind>(
                name: &str,
                visitor: V,
            ) -> Option<V::Output> {
                match name {
                    $($name => Some(visitor.visit::<$module::$kind>()),)*
                    _ => None,
                }
            }
        }
    };
}
pub(crate) use data_table;
