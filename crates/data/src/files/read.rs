//! A federation's clients read from their files of arrays and checked
//! against the manifest: `x` of float32 (`[n, features]`, or `[n, height,
//! width, channels]` for images, `[n, height, width]` with one channel or
//! `[n, dim]` flat), `y` of `n` class labels (integers below `classes`) or
//! float32 targets; at least one sample; every value finite. Each error is one
//! line naming the file and the client.

use std::path::Path;

use fedcluster_core::limits::{MAX_CLIENT_VALUES, MAX_STORED_VALUES};
use fedcluster_core::{Input, Task};

use super::arrays::{Array, Values, read_arrays};
use super::manifest::ClientEntry;
use crate::dataset::{ClientData, TargetsOwned};
use crate::error::{DataError, Result};

/// The clients `entries` of `split` (`train`, `test`), their files relative
/// to `dir`; `stored` counts the values read so far, against
/// [`MAX_STORED_VALUES`].
pub fn read_clients(
    dir: &Path,
    split: &str,
    entries: &[ClientEntry],
    input: &Input,
    stored: &mut u128,
) -> Result<Vec<ClientData>> {
    let mut clients = Vec::with_capacity(entries.len());
    for (i, entry) in entries.iter().enumerate() {
        let path = dir.join(&entry.file);
        let [x, y] = read_arrays(&path, ["x", "y"], MAX_CLIENT_VALUES).map_err(|e| match e {
            DataError::Format { path, why } => {
                DataError::format(path, format!("{split} client {i}: {why}"))
            }
            e => e,
        })?;
        let client = client(x, y, entry.samples, input)
            .map_err(|why| DataError::format(&path, format!("{split} client {i}: {why}")))?;
        *stored += client.x.len() as u128;
        if *stored > MAX_STORED_VALUES {
            return Err(DataError::format(
                &path,
                format!(
                    "{split} client {i}: the federation holds more than {MAX_STORED_VALUES} values"
                ),
            ));
        }
        clients.push(client);
    }
    Ok(clients)
}

/// One client's data from its arrays, checked against `input` and the
/// manifest's sample count.
pub fn client(
    x: Array,
    y: Array,
    samples: Option<usize>,
    input: &Input,
) -> Result<ClientData, String> {
    let n = x.shape.first().copied().unwrap_or(0);
    check_x_shape(&x.shape, input)?;
    let y_ok = y.shape.len() == 1 || (y.shape.len() == 2 && y.shape[1] == 1);
    if !y_ok || y.shape[0] != n {
        return Err(format!(
            "x has {n} samples, y has shape {:?}: y must be [{n}]",
            y.shape
        ));
    }
    if let Some(said) = samples
        && said != n
    {
        return Err(format!(
            "the manifest says {said} samples, x and y hold {n}"
        ));
    }
    if n == 0 {
        return Err("no samples".into());
    }
    let Values::Float(x) = x.values else {
        return Err("x holds integers: features must be float32".into());
    };
    if let Some(j) = x.iter().position(|v| !v.is_finite()) {
        let (sample, at) = (j / input.dim, j % input.dim);
        return Err(format!("x has {} at sample {sample}, value {at}", x[j]));
    }
    let y = match (input.task, y.values) {
        (Task::Classification { classes }, Values::Int(y)) => {
            if let Some(j) = y
                .iter()
                .position(|&c| c < 0 || c as u128 >= classes as u128)
            {
                return Err(format!(
                    "y[{j}] = {} is not a class (the manifest says {classes} classes: 0..{classes})",
                    y[j]
                ));
            }
            TargetsOwned::Class(y.into_iter().map(|c| c as u32).collect())
        }
        (Task::Classification { .. }, Values::Float(_)) => {
            return Err("y holds floats: classification needs integer class labels".into());
        }
        (Task::Regression, values) => {
            let y = match values {
                Values::Float(y) => y,
                Values::Int(y) => y.into_iter().map(|v| v as f32).collect(),
            };
            if let Some(j) = y.iter().position(|v| !v.is_finite()) {
                return Err(format!("y[{j}] is {}", y[j]));
            }
            TargetsOwned::Real(y)
        }
    };
    Ok(ClientData { x, y })
}

/// Fails unless `shape` is `n` samples of the input's shape.
fn check_x_shape(shape: &[usize], input: &Input) -> Result<(), String> {
    let rest = shape.get(1..).unwrap_or(&[]);
    let fits = match (rest, input.image) {
        ([], _) => input.dim == 1 && !shape.is_empty(),
        ([d], _) => *d == input.dim,
        ([h, w], Some(i)) => i.channels == 1 && [*h, *w] == [i.height, i.width],
        ([h, w, c], Some(i)) => [*h, *w, *c] == [i.height, i.width, i.channels],
        _ => false,
    };
    if fits {
        return Ok(());
    }
    let expected = match input.image {
        Some(i) => format!("[n, {}, {}, {}]", i.height, i.width, i.channels),
        None => format!("[n, {}]", input.dim),
    };
    Err(format!(
        "x has shape {shape:?}, the manifest's input shape makes it {expected}"
    ))
}
