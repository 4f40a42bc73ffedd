//! `fedcluster data fetch NAME`: download a data set's files as published
//! into `DATA_ROOT/<dir>/`, each checked against its published MD5.
//!
//! For each file of the data set ([`sources::SOURCES`]):
//! 1. present under its final name: hashed; the right MD5 is "already there,
//!    checksum ok", a wrong one is refused (never overwritten unless
//!    `--force`, which downloads every file again from scratch);
//! 2. otherwise downloaded from its canonical address, or from the
//!    `--mirror` URL followed by its name (the next address or mirror listed
//!    when a server answers "not found"), through `NAME.part`, resumed if an earlier run left one,
//!    then verified and renamed into place ([`download`]); a mismatch leaves
//!    nothing behind and names the file and both checksums;
//! 3. a file with no published checksum (Shakespeare's complete works) is
//!    kept unverified, and the output says so and prints its SHA-256.
//!
//! The data root is `--data-root`, else `$FEDCLUSTER_DATA`, else `data`: the
//! root `fedcluster run` looks in when neither `--data-dir` nor the config's
//! `data.data_dir` names the directory
//! ([`fedcluster_run::config::data_root`]), so a fetch with no flag is found
//! by a run with no flag. At the end it prints where the files are and how
//! `fedcluster run` finds them, or, where no command reads the files yet,
//! what is missing.

pub mod download;
pub mod sources;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, Result, bail};
use clap::Args;
use clap::builder::PossibleValuesParser;

use download::{NotFound, Sums, download, part_path, sums_of};
use fedcluster_data::table::DATA_ROOT_VAR;
use fedcluster_run::config::data_root;
use sources::{Next, Remote, Source};

/// `fedcluster data fetch`.
#[derive(Debug, Args)]
pub struct FetchArgs {
    /// The data set.
    #[arg(value_parser = PossibleValuesParser::new(sources::names()))]
    pub name: String,
    /// Where data sets go: the files land in DIR/<name>/ (default:
    /// $FEDCLUSTER_DATA when set, else `data`, where `fedcluster run` looks).
    #[arg(long, value_name = "DIR")]
    pub data_root: Option<PathBuf>,
    /// Take every file from URL + its file name instead of its canonical
    /// address (a mirror). Repeatable: the next is tried when one answers
    /// "not found".
    #[arg(long, value_name = "URL")]
    pub mirror: Vec<String>,
    /// Download every file again, replacing what is under its final name and
    /// any partial download.
    #[arg(long)]
    pub force: bool,
    /// For tests and mirrors of modified files: expect MD5 for FILE (a file
    /// name of the data set) instead of the published checksum. Repeatable.
    #[arg(long, value_name = "FILE=MD5", hide = true)]
    pub expect_md5: Vec<String>,
}

/// Runs `fedcluster data fetch`.
pub fn fetch(args: &FetchArgs) -> Result<()> {
    let source = sources::find(&args.name).context("unknown data set")?;
    let expected = expected_md5s(source, &args.expect_md5)?;
    let root = args.data_root.clone().unwrap_or_else(data_root);
    let dir = root.join(source.dir_name);
    // One writer per data set directory (two fetches would write the same
    // partial downloads).
    let _lock = fedcluster_run::rundir::DirLock::take(&dir)?;
    std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let agent = ureq::AgentBuilder::new()
        .timeout_connect(Duration::from_secs(30))
        .timeout_read(Duration::from_secs(60))
        .user_agent(concat!("fedcluster/", env!("CARGO_PKG_VERSION")))
        .build();
    eprintln!("{} into {}", source.title, dir.display());
    let mut unverified = Vec::new();
    for remote in source.files {
        let urls = if args.mirror.is_empty() {
            remote.urls()
        } else {
            args.mirror
                .iter()
                .map(|m| mirrored(m, remote.file))
                .collect()
        };
        let md5 = expected.get(remote.file).copied().or(remote.md5);
        let sums = fetch_file(
            &agent,
            remote,
            &urls,
            &dir.join(remote.file),
            md5,
            args.force,
        )?;
        if md5.is_none() {
            unverified.push((remote.file, sums.sha256));
        }
    }
    println!(
        "{}: {} in {}",
        source.title,
        source
            .files
            .iter()
            .map(|f| f.file)
            .collect::<Vec<_>>()
            .join(", "),
        dir.display()
    );
    for (file, sha256) in &unverified {
        println!(
            "{file} is NOT verified against a published checksum (none is published); its \
             SHA-256 is {sha256}"
        );
    }
    match source.next {
        Next::Run if root == data_root() => println!(
            "`fedcluster run` reads it from there (the data root: ${DATA_ROOT_VAR}, else `data`); \
             elsewhere, pass `--data-dir {}` (the config's `data.data_dir`)",
            dir.display()
        ),
        Next::Run => println!(
            "pass `--data-dir {}` to `fedcluster run` (the config's `data.data_dir`), or set \
             {DATA_ROOT_VAR}={}",
            dir.display(),
            root.display()
        ),
        Next::Missing(why) => println!("not ready for `fedcluster run` yet: {why}"),
    }
    Ok(())
}

/// One file into `dest` from the first of `urls` that has it, or the reason
/// it could not be; its checksums.
fn fetch_file(
    agent: &ureq::Agent,
    remote: &Remote,
    urls: &[String],
    dest: &Path,
    md5: Option<&str>,
    force: bool,
) -> Result<Sums> {
    let part = part_path(dest);
    if force {
        for path in [dest, part.as_path()] {
            remove_if_present(path)?;
        }
    } else if dest.exists() {
        let sums = sums_of(dest)?;
        match md5 {
            Some(md5) if md5 == sums.md5 => {
                eprintln!("{}: already there, checksum ok", remote.file);
            }
            Some(md5) => bail!(
                "{} is already there with MD5 {}, expected {md5}: not overwritten (delete it, or \
                 pass --force to download it again)",
                dest.display(),
                sums.md5
            ),
            None => eprintln!("{}: already there (no published checksum)", remote.file),
        }
        return Ok(sums);
    }
    let resuming = std::fs::metadata(&part).map_or(0, |m| m.len());
    let mut urls = urls.iter().peekable();
    let got = loop {
        let url = urls.next().context("no address to fetch from")?;
        if resuming > 0 {
            eprintln!(
                "{}: resuming {url} from byte {resuming} of {}",
                remote.file,
                part.display()
            );
        } else {
            eprintln!("{}: downloading {url}", remote.file);
        }
        match download(agent, url, dest, md5) {
            Err(e) if urls.peek().is_some() && e.is::<NotFound>() => {
                eprintln!("{}: {e}; trying the next address", remote.file);
            }
            got => break got?,
        }
    };
    if resuming > 0 && got.resumed_from == 0 {
        eprintln!(
            "{}: the server sent the whole file (it ignored the range request)",
            remote.file
        );
    }
    match md5 {
        Some(_) => eprintln!(
            "{}: {} bytes, MD5 {} ok",
            remote.file, got.bytes, got.sums.md5
        ),
        None => eprintln!(
            "{}: {} bytes, SHA-256 {}: not verified (no published checksum)",
            remote.file, got.bytes, got.sums.sha256
        ),
    }
    Ok(got.sums)
}

/// The `--expect-md5 FILE=MD5` overrides, by file name; every name must be
/// one of `source`'s files and every MD5 32 hex digits.
fn expected_md5s<'a>(source: &Source, pairs: &'a [String]) -> Result<HashMap<&'a str, &'a str>> {
    let mut out = HashMap::new();
    for pair in pairs {
        let Some((file, md5)) = pair.split_once('=') else {
            bail!("--expect-md5 {pair}: expected FILE=MD5");
        };
        if !source.files.iter().any(|f| f.file == file) {
            let files: Vec<&str> = source.files.iter().map(|f| f.file).collect();
            bail!(
                "--expect-md5 {pair}: {} has no file {file:?} (its files: {})",
                source.name,
                files.join(", ")
            );
        }
        if md5.len() != 32
            || !md5
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
        {
            bail!("--expect-md5 {pair}: an MD5 is 32 lower-case hex digits");
        }
        out.insert(file, md5);
    }
    Ok(out)
}

/// `file` under the mirror `base`.
fn mirrored(base: &str, file: &str) -> String {
    if base.ends_with('/') {
        format!("{base}{file}")
    } else {
        format!("{base}/{file}")
    }
}

fn remove_if_present(path: &Path) -> Result<()> {
    match std::fs::remove_file(path) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
            Err(e).with_context(|| format!("cannot delete {}", path.display()))
        }
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expected_checksums_name_a_file_of_the_data_set() {
        let cifar = sources::find("cifar10").unwrap();
        let md5 = "0123456789abcdef0123456789abcdef";
        let ok = [format!("cifar-10-binary.tar.gz={md5}")];
        let got = expected_md5s(cifar, &ok).unwrap();
        assert_eq!(got.get("cifar-10-binary.tar.gz"), Some(&md5));
        for (bad, says) in [
            (
                format!("train.bin={md5}"),
                "its files: cifar-10-binary.tar.gz",
            ),
            (
                "cifar-10-binary.tar.gz=abc".to_string(),
                "32 lower-case hex",
            ),
            ("cifar-10-binary.tar.gz".to_string(), "expected FILE=MD5"),
        ] {
            let e = expected_md5s(cifar, &[bad]).unwrap_err().to_string();
            assert!(e.contains(says), "{e}");
        }
    }

    #[test]
    fn a_mirror_is_a_directory_with_or_without_its_slash() {
        assert_eq!(mirrored("http://h/m/", "a.gz"), "http://h/m/a.gz");
        assert_eq!(mirrored("http://h/m", "a.gz"), "http://h/m/a.gz");
    }
}
