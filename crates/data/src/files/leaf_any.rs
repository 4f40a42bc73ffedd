//! A LEAF directory of any task as a federation's clients: LEAF's reader
//! ([`crate::leaf::read_leaf_dir`]: `train/` and `test/` JSON files, the same
//! users in both), one training and one test client per user in id order,
//! `x` flat float vectors and `y` integer classes below the manifest's
//! `classes`. The input shape is the manifest's, else the files' vector
//! length. LEAF knows no clusters.

use std::path::Path;

use fedcluster_core::limits::{MAX_CLIENT_VALUES, MAX_STORED_VALUES};
use fedcluster_core::{Input, Task};

use crate::dataset::{ClientData, TargetsOwned};
use crate::error::{DataError, Result};
use crate::leaf::json::LeafSamples;
use crate::leaf::read_leaf_dir;

/// The users of the LEAF directory `dir` as (input, training clients, test
/// clients); `input` is the manifest's shape, `None` to take the files'.
pub fn leaf_clients(
    dir: &Path,
    task: Task,
    input: Option<Input>,
) -> Result<(Input, Vec<ClientData>, Vec<ClientData>)> {
    let Task::Classification { classes } = task else {
        return Err(DataError::format(
            dir,
            "LEAF's y are class labels: the manifest's task must be classification",
        ));
    };
    let users = read_leaf_dir(dir)?;
    let mut input = input;
    let (mut train, mut test, mut stored) = (Vec::new(), Vec::new(), 0u128);
    for (i, user) in users.into_iter().enumerate() {
        let fail = |split: &str, why: String| {
            DataError::format(
                dir,
                format!("user `{}` ({split} client {i}): {why}", user.id),
            )
        };
        for (split, samples, out) in [
            ("train", user.train, &mut train),
            ("test", user.test, &mut test),
        ] {
            let (dim, x, y) = match samples {
                LeafSamples::Features { dim, x, y } if !y.is_empty() => (dim, x, y),
                LeafSamples::Features { .. } => return Err(fail(split, "no samples".into())),
                LeafSamples::Text(_) => {
                    return Err(fail(
                        split,
                        "text samples: `kind = \"shakespeare\"` reads LEAF's text".into(),
                    ));
                }
            };
            let input = *input.get_or_insert(Input {
                dim,
                image: None,
                task,
            });
            if dim != input.dim {
                return Err(fail(
                    split,
                    format!("x has {dim} values, the input {}", input.dim),
                ));
            }
            DataError::at_most("x", "values", x.len() as u128, MAX_CLIENT_VALUES)
                .map_err(|e| fail(split, e.to_string()))?;
            stored += x.len() as u128;
            if stored > MAX_STORED_VALUES {
                return Err(fail(
                    split,
                    format!("more than {MAX_STORED_VALUES} values in all"),
                ));
            }
            if let Some(j) = x.iter().position(|v| !v.is_finite()) {
                let why = format!("x has {} at sample {}", x[j], j / dim.max(1));
                return Err(fail(split, why));
            }
            if let Some(j) = y.iter().position(|&c| c as usize >= classes) {
                let why = format!("y[{j}] = {} is not a class below {classes}", y[j]);
                return Err(fail(split, why));
            }
            out.push(ClientData {
                x,
                y: TargetsOwned::Class(y),
            });
        }
    }
    let input = input.ok_or_else(|| DataError::format(dir, "no users"))?;
    Ok((input, train, test))
}
