//! The data-set table's vocabulary, as the algorithm table is for algorithms:
//! what a kind of data set is ([`DataKind`]: its `[data]` table, its
//! validation, the files it reads and how it is built), and how callers visit
//! a kind by name ([`VisitKind`]). The table itself, the closed
//! [`crate::DataConfig`] enum, is written once in `lib.rs` with
//! [`data_table!`]: one line per kind.
//!
//! Where a kind's files are ([`DataConfig::resolve_data_dir`]): the
//! configured `data.data_dir` (which `--data-dir DIR` overrides), else
//! `<root>/<dir_name>`, the root given by the caller (the run library reads it
//! from [`DATA_ROOT_VAR`], else [`DEFAULT_DATA_ROOT`]): this crate reads no
//! environment.
//!
//! [`DataConfig::resolve_data_dir`]: crate::DataConfig::resolve_data_dir

use std::fmt::Debug;
use std::path::{Path, PathBuf};

use serde::Serialize;
use serde::de::DeserializeOwned;

use fedcluster_core::{Batch, ClientId, Input};

use crate::data_set::DataSet;
use crate::dataset::{ClientData, TargetsOwned};
use crate::error::{DataError, Result};

/// The environment variable naming the data root: a directory holding each
/// data set under its [`Files::dir_name`] (`mnist/`, `shakespeare/`, ...).
pub const DATA_ROOT_VAR: &str = "FEDCLUSTER_DATA";

/// The data root when [`DATA_ROOT_VAR`] is not set, relative to the working
/// directory: where `fedcluster data fetch` writes.
pub const DEFAULT_DATA_ROOT: &str = "data";

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
    /// The directory the files are read from: `configured` (the config's
    /// `data.data_dir`, or `--data-dir`), else `<root>/<dir_name>`.
    pub fn resolve(&self, configured: Option<&Path>, root: &Path) -> PathBuf {
        configured.map_or_else(|| root.join(self.dir_name), Path::to_path_buf)
    }

    /// The one-line error for files that are not there: the data set, `what`
    /// (`no data in data/mnist`, or the missing file), then every way to give
    /// the directory and the fetch that downloads it, e.g. `MNIST: no data in
    /// data/mnist: set data.data_dir, pass --data-dir DIR, or set
    /// FEDCLUSTER_DATA to a directory holding mnist/; \`fedcluster data fetch
    /// mnist\` downloads it`; `fetch_into` names where the fetch writes when
    /// that is not the directory just named.
    pub fn missing(&self, what: &str, fetch_into: Option<&Path>) -> String {
        let get = match (self.fetch, fetch_into) {
            (Some(name), None) => format!("`fedcluster data fetch {name}` downloads it"),
            (Some(name), Some(dir)) => format!(
                "`fedcluster data fetch {name}` downloads it into {}",
                dir.display()
            ),
            (None, _) => format!("it must be {}", self.directory),
        };
        format!(
            "{}: {what}: set data.data_dir, pass --data-dir DIR, or set {DATA_ROOT_VAR} to a \
             directory holding {}/; {get}",
            self.title, self.dir_name
        )
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

    /// The spec's `data_dir` field, to resolve (`None`: the kind reads no
    /// files).
    fn data_dir_mut(_spec: &mut Self::Spec) -> Option<&mut Option<PathBuf>> {
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

/// `K`'s directory (resolved by [`crate::DataConfig::resolve_data_dir`]),
/// or the error naming the data set and every way to give it.
pub(crate) fn required_dir<K: DataKind>(spec: &K::Spec) -> Result<&Path> {
    match (K::FILES, K::data_dir(spec)) {
        (_, Some(dir)) => Ok(dir),
        (Some(files), None) => Err(DataError::invalid(
            "data_dir",
            files.missing("no data directory given", None),
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

            /// The directory the kind's files are read from, as configured
            /// (`None`: not given, or a kind that reads no files).
            pub fn data_dir(&self) -> Option<&std::path::Path> {
                match self {
                    $(DataConfig::$variant(s) =>
                        <$module::$kind as $crate::table::DataKind>::data_dir(s),)*
                }
            }

            /// Resolves where a kind that reads files finds them and writes
            /// it into `data_dir`: as configured (`data.data_dir`, which
            /// `--data-dir` overrides), else `<root>/<dir_name>` (see
            /// [`$crate::table::Files::resolve`]). `None` for a kind that
            /// reads no files.
            pub fn resolve_data_dir(&mut self, root: &std::path::Path) -> Option<&std::path::Path> {
                let files = self.files()?;
                let slot = match self {
                    $(DataConfig::$variant(s) =>
                        <$module::$kind as $crate::table::DataKind>::data_dir_mut(s),)*
                }?;
                let dir = files.resolve(slot.as_deref(), root);
                Some(slot.insert(dir).as_path())
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

#[cfg(test)]
mod tests {
    use std::path::Path;

    use crate::DataConfig;

    fn data(table: &str) -> DataConfig {
        toml::from_str(table).unwrap()
    }

    const MNIST: &str = "kind = \"mnist\"\ntransforms = [\"identity\"]\nclients = 2\n\
                         points_per_client = 1\ntest_clients = 0\n";

    #[test]
    fn a_kinds_directory_is_the_configured_one_else_its_name_under_the_root() {
        let root = Path::new("/the/root");
        let mut given = data(&format!("{MNIST}data_dir = \"mine\"\n"));
        assert_eq!(given.resolve_data_dir(root), Some(Path::new("mine")));
        let mut unset = data(MNIST);
        assert_eq!(unset.data_dir(), None);
        assert_eq!(
            unset.resolve_data_dir(root),
            Some(Path::new("/the/root/mnist"))
        );
        assert_eq!(unset.data_dir(), Some(Path::new("/the/root/mnist")));
        let mut plays = data("kind = \"shakespeare\"\nclients = 2\n");
        assert_eq!(
            plays.resolve_data_dir(Path::new("data")),
            Some(Path::new("data/shakespeare"))
        );
        let mut synthetic = data(
            "kind = \"ifca-synthetic\"\nclients = 2\npoints_per_client = 2\n\
             test_points_per_client = 0\ndim = 2\nclusters = 2\nnoise_std = 0.1\nseparation = 1.0\n",
        );
        let before = synthetic.clone();
        assert_eq!(synthetic.resolve_data_dir(root), None);
        assert_eq!(synthetic, before);
    }

    #[test]
    fn the_missing_data_line_names_the_set_the_field_the_flag_the_variable_and_the_fetch() {
        let mnist = DataConfig::files_of("mnist").unwrap();
        assert_eq!(
            mnist.missing("no data in data/mnist", None),
            "MNIST: no data in data/mnist: set data.data_dir, pass --data-dir DIR, or set \
             FEDCLUSTER_DATA to a directory holding mnist/; `fedcluster data fetch mnist` \
             downloads it"
        );
        assert!(
            mnist
                .missing("no data in /x", Some(Path::new("data/mnist")))
                .ends_with("`fedcluster data fetch mnist` downloads it into data/mnist")
        );
        let femnist = DataConfig::files_of("femnist").unwrap();
        assert!(
            femnist
                .missing("no data in data/femnist", None)
                .ends_with("holding femnist/; it must be LEAF's FEMNIST directory (its train/ and test/ JSON files)")
        );
    }
}
