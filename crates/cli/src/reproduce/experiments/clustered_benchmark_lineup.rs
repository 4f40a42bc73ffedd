//! Which settings the clustered benchmark runs here: the five of
//! [`SETTINGS`] always, and each of [`OPTIONAL`] (rotated CIFAR-10, FEMNIST)
//! whose files are given, by its flag (`--cifar-dir`, `--femnist-dir`) or in
//! the data root (`cifar10/`, `femnist/` under `$FEDCLUSTER_DATA`, else
//! `data/`, as every CIFAR and FEMNIST reproduction finds them); for each
//! other, the report's "not run: data absent here" line with the ways to give
//! it. Without the files the benchmark's grids are exactly the five settings'.

use std::path::{Path, PathBuf};

use anyhow::{Result, bail};

use super::Protocol;
use super::clustered_benchmark_settings::{OPTIONAL, Reads, SETTINGS, SettingSpec};
use fedcluster_data::DataConfig;
use fedcluster_data::table::DATA_ROOT_VAR;

/// The directories of the optional settings' files, as the command gives
/// them (`None`: looked for in the data root).
#[derive(Debug, Clone, Default)]
pub struct OptionalData {
    /// `--cifar-dir`: CIFAR-10's binary version (extracted, or its .tar.gz).
    pub cifar_dir: Option<PathBuf>,
    /// `--femnist-dir`: LEAF's FEMNIST directory (`train/` and `test/`).
    pub femnist_dir: Option<PathBuf>,
}

/// A setting that runs here.
pub struct Included {
    pub spec: &'static SettingSpec,
    /// The directory of its files (`None`: where `fedcluster run` finds
    /// them, or it reads none).
    pub data_dir: Option<PathBuf>,
}

/// An optional setting that does not run here.
pub struct Absent {
    pub spec: &'static SettingSpec,
    /// The report's line: "not run: data absent here: ..." and how to give it.
    pub why: String,
}

/// The settings of this command, in the grids' order: the five, then the
/// optional ones given.
pub struct Lineup {
    pub included: Vec<Included>,
    pub absent: Vec<Absent>,
}

/// An optional setting's flag, the directory it gives and the data kind
/// whose files it names.
fn flag(reads: Reads, given: &OptionalData) -> (&'static str, Option<&Path>, &'static str) {
    match reads {
        Reads::Cifar10 => ("--cifar-dir", given.cifar_dir.as_deref(), "cifar10"),
        Reads::Femnist => ("--femnist-dir", given.femnist_dir.as_deref(), "femnist"),
        Reads::Nothing | Reads::Mnist => unreachable!("the five settings are always included"),
    }
}

/// Whether `dir` holds anything (the harness's rule for absent data).
fn holds_files(dir: &Path) -> bool {
    std::fs::read_dir(dir).is_ok_and(|mut d| d.next().is_some())
}

impl Lineup {
    /// The five settings alone, MNIST read from `p`'s `--data-dir`.
    pub fn base(p: &Protocol) -> Self {
        let included = SETTINGS
            .iter()
            .map(|spec| Included {
                spec,
                data_dir: (spec.reads == Reads::Mnist)
                    .then(|| p.data_dir.clone())
                    .flatten(),
            })
            .collect();
        Lineup {
            included,
            absent: Vec::new(),
        }
    }

    /// The five settings and each optional one whose files `given` names or
    /// `root` (the data root) holds. A flag naming a directory that is
    /// absent or empty is an error naming the flag.
    pub fn resolve(p: &Protocol, given: &OptionalData, root: &Path) -> Result<Self> {
        let mut lineup = Self::base(p);
        for spec in &OPTIONAL {
            let (flag, dir, kind) = flag(spec.reads, given);
            let files = DataConfig::files_of(kind).expect("a data kind of the table");
            let resolved = files.resolve(dir, root);
            if holds_files(&resolved) {
                lineup.included.push(Included {
                    spec,
                    data_dir: dir.map(Path::to_path_buf),
                });
                continue;
            }
            if dir.is_some() {
                bail!(
                    "{flag} {}: no such directory, or an empty one: it must be {} ({} is run \
                     only with it)",
                    resolved.display(),
                    files.directory,
                    spec.label
                );
            }
            let get = match files.fetch {
                Some(name) => format!("; `fedcluster data fetch {name}` downloads it"),
                None => "; docs/data.md says how LEAF writes it".into(),
            };
            lineup.absent.push(Absent {
                spec,
                why: format!(
                    "not run: data absent here: no {} in {}; pass {flag} DIR or set \
                     {DATA_ROOT_VAR} to a directory holding {}/; it must be {}{get}",
                    files.title,
                    resolved.display(),
                    files.dir_name,
                    files.directory,
                ),
            });
        }
        Ok(lineup)
    }

    /// The settings' specs, in order.
    pub fn specs(&self) -> Vec<&'static SettingSpec> {
        self.included.iter().map(|i| i.spec).collect()
    }

    /// `--only-setting`'s keys checked against this lineup: an absent
    /// setting's key is refused with its line, an unknown key with the
    /// known ones.
    pub fn check_only(&self, keys: &[String]) -> Result<()> {
        for key in keys {
            let is = |spec: &SettingSpec| spec.key.eq_ignore_ascii_case(key);
            if self.included.iter().any(|i| is(i.spec)) {
                continue;
            }
            if let Some(a) = self.absent.iter().find(|a| is(a.spec)) {
                bail!("--only-setting {key}: {}", a.why);
            }
            let known: Vec<&str> = SETTINGS.iter().chain(&OPTIONAL).map(|s| s.key).collect();
            bail!(
                "--only-setting {key}: clustered-benchmark has no such setting; known: {}",
                known.join(", ")
            );
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("fedcluster-lineup-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn without_the_files_only_the_five_run_and_each_other_says_how_to_give_it() {
        let root = scratch("empty");
        let lineup =
            Lineup::resolve(&Protocol::default(), &OptionalData::default(), &root).unwrap();
        let keys: Vec<&str> = lineup.specs().iter().map(|s| s.key).collect();
        assert_eq!(
            keys,
            ["rotated", "inverted", "permuted", "dirichlet", "synthetic"]
        );
        let why: Vec<&str> = lineup.absent.iter().map(|a| a.why.as_str()).collect();
        assert!(why[0].starts_with("not run: data absent here: no CIFAR-10 in"));
        assert!(why[0].contains("pass --cifar-dir DIR") && why[0].contains("fetch cifar10"));
        assert!(why[1].contains("pass --femnist-dir DIR") && why[1].contains("femnist/"));
        let e = lineup.check_only(&["femnist".into()]).unwrap_err();
        assert!(format!("{e}").contains("not run: data absent here"), "{e}");
        let e = lineup.check_only(&["cifar".into()]).unwrap_err();
        assert!(format!("{e}").contains("known: rotated,"), "{e}");
        let _ = std::fs::remove_dir_all(&root);
    }

    #[test]
    fn files_in_the_data_root_join_and_a_flag_to_nothing_is_refused() {
        let root = scratch("root");
        std::fs::create_dir_all(root.join("femnist/train")).unwrap();
        let lineup =
            Lineup::resolve(&Protocol::default(), &OptionalData::default(), &root).unwrap();
        assert_eq!(lineup.specs().last().unwrap().key, "femnist");
        assert_eq!(lineup.absent.len(), 1);
        let given = OptionalData {
            cifar_dir: Some(root.join("nowhere")),
            ..Default::default()
        };
        let Err(e) = Lineup::resolve(&Protocol::default(), &given, &root) else {
            panic!("--cifar-dir to a missing directory");
        };
        assert!(format!("{e}").starts_with("--cifar-dir "), "{e}");
        let _ = std::fs::remove_dir_all(&root);
    }
}
