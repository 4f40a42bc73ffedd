//! A [`FederatedData`] written as a federation directory: `federation.json`,
//! `train/<i>.<ext>` and `test/<i>.<ext>` (arrays `x` `[n, features]` or
//! `[n, height, width, channels]` float32, `y` `[n]` int64 classes or float32
//! targets), `truth.<ext>` (array `params`) when the truth has parameters,
//! and last `checksums.sha256`, the SHA-256 of every other file, which
//! [`super::read_federation`] checks.
//!
//! One writer per output, whole or not at all: the files go into the sibling
//! `OUT.partial`, created new (an existing one means another writer, or one
//! that was interrupted), renamed to `OUT` once complete; an existing `OUT`
//! that is not an empty directory is replaced only when asked (`force`), and
//! on failure nothing is left but what was there before.

use std::path::{Path, PathBuf};

use crate::dataset::{ClientData, FederatedData, TargetsOwned};
use crate::error::{DataError, Result};

use super::arrays::{Array, ArrayFormat, Values, write_arrays};
use super::manifest::{ClientEntry, FORMAT, ImageEntry, MANIFEST, Manifest, TaskName};

/// Writes `data` (which must pass [`FederatedData::validate`]) as the
/// federation directory `out`, its arrays in `format`; an existing `out` that
/// is not an empty directory is an error unless `force`.
pub fn write_federation(
    data: &FederatedData,
    out: &Path,
    format: ArrayFormat,
    force: bool,
) -> Result<()> {
    data.validate()?;
    // `fed/` and `fed` are one directory, its siblings `fed.partial`, ...
    let out = out.components().as_path();
    let occupied = match std::fs::read_dir(out) {
        Ok(mut entries) => entries.next().is_some(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => false,
        Err(_) => true,
    };
    if occupied && !force {
        return Err(DataError::format(
            out,
            "exists and is not an empty directory: choose another, or pass --force to replace it",
        ));
    }
    let partial = sibling(out, "partial");
    std::fs::create_dir(&partial).map_err(|e| match e.kind() {
        std::io::ErrorKind::AlreadyExists => DataError::format(
            &partial,
            "exists: another export is writing here (or one was interrupted: remove it)",
        ),
        _ => DataError::io(&partial, e),
    })?;
    let written = write_into(data, &partial, format).and_then(|()| replace(&partial, out));
    if written.is_err() {
        let _ = std::fs::remove_dir_all(&partial);
    }
    written
}

/// `out` with `.suffix` added to its name.
fn sibling(out: &Path, suffix: &str) -> PathBuf {
    let mut name = out.as_os_str().to_owned();
    name.push(".");
    name.push(suffix);
    PathBuf::from(name)
}

/// Moves the complete `partial` to `out`, the old `out` (if any) aside first
/// and removed after.
fn replace(partial: &Path, out: &Path) -> Result<()> {
    let old = sibling(out, "replaced");
    let had = out.exists();
    if had {
        if old.exists() {
            std::fs::remove_dir_all(&old).map_err(|e| DataError::io(&old, e))?;
        }
        std::fs::rename(out, &old).map_err(|e| DataError::io(out, e))?;
    }
    if let Err(e) = std::fs::rename(partial, out) {
        if had {
            let _ = std::fs::rename(&old, out);
        }
        return Err(DataError::io(out, e));
    }
    if had {
        let _ = match old.is_dir() {
            true => std::fs::remove_dir_all(&old),
            false => std::fs::remove_file(&old),
        };
    }
    Ok(())
}

/// Every file of the federation, into the directory `dir`.
fn write_into(data: &FederatedData, dir: &Path, format: ArrayFormat) -> Result<()> {
    let ext = format.extension();
    let truth = &data.truth;
    let mut manifest = Manifest {
        format: FORMAT,
        name: Some(data.name.clone()),
        task: TaskName::Regression,
        classes: None,
        features: data.image.is_none().then_some(data.dim),
        image: data.image.map(|i| ImageEntry {
            height: i.height,
            width: i.width,
            channels: i.channels,
        }),
        clusters: truth.is_known().then_some(truth.clusters),
        truth_params: None,
        train: Vec::new(),
        test: Vec::new(),
        leaf: None,
    };
    if let fedcluster_core::Task::Classification { classes } = data.task {
        (manifest.task, manifest.classes) = (TaskName::Classification, Some(classes));
    }
    for (split, clients, labels) in [
        ("train", &data.train, &truth.train_labels),
        ("test", &data.test, &truth.test_labels),
    ] {
        let sub = dir.join(split);
        std::fs::create_dir(&sub).map_err(|e| DataError::io(&sub, e))?;
        for (i, client) in clients.iter().enumerate() {
            let file = format!("{split}/{i}.{ext}");
            let (x, y) = arrays(data, client);
            write_arrays(&dir.join(&file), &[("x", &x), ("y", &y)])?;
            let entry = ClientEntry {
                file,
                samples: Some(client.len()),
                cluster: labels.get(i).copied(),
            };
            match split {
                "train" => manifest.train.push(entry),
                _ => manifest.test.push(entry),
            }
        }
    }
    if let Some(params) = &truth.params {
        let file = format!("truth.{ext}");
        let array = Array {
            shape: vec![params.len(), params[0].len()],
            values: Values::Float(params.concat()),
        };
        write_arrays(&dir.join(&file), &[("params", &array)])?;
        manifest.truth_params = Some(file);
    }
    let path = dir.join(MANIFEST);
    let mut text = serde_json::to_string_pretty(&manifest)
        .map_err(|e| DataError::format(&path, e.to_string()))?;
    text.push('\n');
    std::fs::write(&path, text).map_err(|e| DataError::io(&path, e))?;
    crate::regular::write_listed(dir, "fedcluster data set v1; federation")
}

/// A client's `x` (in the data's input shape) and `y` arrays.
fn arrays(data: &FederatedData, client: &ClientData) -> (Array, Array) {
    let n = client.len();
    let shape = match data.image {
        Some(i) => vec![n, i.height, i.width, i.channels],
        None => vec![n, data.dim],
    };
    let x = Array {
        shape,
        values: Values::Float(client.x.clone()),
    };
    let values = match &client.y {
        TargetsOwned::Real(y) => Values::Float(y.clone()),
        TargetsOwned::Class(y) => Values::Int(y.iter().map(|&c| c as i64).collect()),
    };
    let y = Array {
        shape: vec![n],
        values,
    };
    (x, y)
}
