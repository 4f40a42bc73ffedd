//! `models.safetensors`: a run's final cluster models, one tensor per layer and
//! cluster (`cluster{j}.{layer}`, the names and shapes of
//! [`fedcluster_core::Model::tensors`], `F32`), with the model's name and the
//! cluster count in the header's metadata. Python reads it with
//! `safetensors.numpy.load_file`; `fedcluster run --init-from FILE` starts a
//! run from it.

use std::collections::HashMap;
use std::path::Path;

use anyhow::{Result, bail};
use safetensors::tensor::{Dtype, SafeTensors, TensorView};

use fedcluster_core::limits::{MAX_CLUSTERS, MAX_MODEL_VALUES};
use fedcluster_core::{Model, TensorSpec};

/// The file's name in a run directory.
pub const MODELS_FILE: &str = "models.safetensors";

/// The safetensors bytes of `models`, each the flat vector of a model named
/// `model` whose tensors are `tensors`.
pub fn encode(model: &str, tensors: &[TensorSpec], models: &[Vec<f32>]) -> Result<Vec<u8>> {
    let num_params: usize = tensors
        .iter()
        .map(|t| t.shape.iter().product::<usize>())
        .sum();
    let bytes: Vec<Vec<u8>> = models
        .iter()
        .map(|m| m.iter().flat_map(|v| v.to_le_bytes()).collect())
        .collect();
    let mut views = Vec::with_capacity(models.len() * tensors.len());
    for (j, model_bytes) in bytes.iter().enumerate() {
        if model_bytes.len() != 4 * num_params {
            bail!(
                "model {j} has {} values, the {model} model {num_params}",
                model_bytes.len() / 4,
            );
        }
        let mut at = 0;
        for t in tensors {
            let len = 4 * t.shape.iter().product::<usize>();
            let view = TensorView::new(Dtype::F32, t.shape.clone(), &model_bytes[at..at + len])?;
            views.push((format!("cluster{j}.{}", t.name), view));
            at += len;
        }
    }
    let metadata = HashMap::from([
        ("model".to_string(), model.to_string()),
        ("clusters".to_string(), models.len().to_string()),
        ("format".to_string(), "fedcluster".to_string()),
    ]);
    canonical(&safetensors::serialize(views, Some(metadata))?)
}

/// `file` with its JSON header's keys sorted: the `safetensors` crate writes
/// them in `HashMap` order, which differs from run to run, and the same run
/// must give the same bytes. The header stays padded to 8 bytes with spaces,
/// as the format asks; tensor offsets are relative to the data, unchanged.
fn canonical(file: &[u8]) -> Result<Vec<u8>> {
    let len = u64::from_le_bytes(file[..8].try_into()?) as usize;
    let header: serde_json::Value = serde_json::from_slice(&file[8..8 + len])?;
    let mut text = serde_json::to_string(&header)?;
    while !text.len().is_multiple_of(8) {
        text.push(' ');
    }
    let mut out = Vec::with_capacity(8 + text.len() + file.len() - 8 - len);
    out.extend_from_slice(&(text.len() as u64).to_le_bytes());
    out.extend_from_slice(text.as_bytes());
    out.extend_from_slice(&file[8 + len..]);
    Ok(out)
}

/// The cluster models in the safetensors file at `path`, checked against
/// `model`: every `cluster{j}.{layer}` tensor present with the layer's shape,
/// `F32`, for clusters `0..n`.
pub fn load(path: &Path, model: &dyn Model) -> Result<Vec<Vec<f32>>> {
    let bytes = read_bounded(path, model)?;
    let file = SafeTensors::deserialize(&bytes)
        .map_err(|e| anyhow::anyhow!("{}: not a safetensors file: {e}", path.display()))?;
    let tensors = model.tensors();
    let clusters = (0..)
        .take_while(|j| {
            let first = format!("cluster{j}.{}", tensors[0].name);
            file.tensor(&first).is_ok()
        })
        .count();
    if clusters == 0 {
        bail!(
            "{}: no tensor `cluster0.{}`: not the models of a {} model",
            path.display(),
            tensors[0].name,
            model.name()
        );
    }
    check_names(path, &file, &tensors, clusters, model)?;
    let mut models = Vec::with_capacity(clusters);
    for j in 0..clusters {
        let mut values = Vec::with_capacity(model.num_params());
        for t in &tensors {
            let name = format!("cluster{j}.{}", t.name);
            let view = file
                .tensor(&name)
                .map_err(|_| anyhow::anyhow!("{}: tensor `{name}` is missing", path.display()))?;
            if view.dtype() != Dtype::F32 || view.shape() != t.shape.as_slice() {
                bail!(
                    "{}: tensor `{name}` is {:?} {:?}, the {} model needs F32 {:?}",
                    path.display(),
                    view.dtype(),
                    view.shape(),
                    model.name(),
                    t.shape
                );
            }
            values.extend(
                view.data()
                    .chunks_exact(4)
                    .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])),
            );
        }
        if let Some(i) = values.iter().position(|v| !v.is_finite()) {
            bail!(
                "{}: model {j} holds a non-finite value at coordinate {i}",
                path.display()
            );
        }
        models.push(values);
    }
    Ok(models)
}

/// The file's bytes: a regular file (a FIFO or a device is refused, never
/// read), refused before reading when larger than `model`'s largest set of
/// cluster models could be.
fn read_bounded(path: &Path, model: &dyn Model) -> Result<Vec<u8>> {
    let values = (model.num_params() as u128 * MAX_CLUSTERS as u128).min(MAX_MODEL_VALUES);
    let limit = 4 * values as u64 + (1 << 20);
    Ok(fedcluster_state::read_bounded(
        path,
        "--init-from file",
        limit,
    )?)
}

/// Fails on a tensor that is none of the `clusters` models' `tensors`: a
/// file written for another model is not read in part.
fn check_names(
    path: &Path,
    file: &SafeTensors<'_>,
    tensors: &[TensorSpec],
    clusters: usize,
    model: &dyn Model,
) -> Result<()> {
    for name in file.names() {
        let known = name.split_once('.').is_some_and(|(cluster, layer)| {
            cluster
                .strip_prefix("cluster")
                .and_then(|j| j.parse::<usize>().ok())
                .is_some_and(|j| j < clusters && format!("cluster{j}") == cluster)
                && tensors.iter().any(|t| t.name == layer)
        });
        if !known {
            bail!(
                "{}: tensor `{name}` is not a layer of the {} model's {clusters} cluster models \
                 (`cluster0.{}`, ...): the file was written for another model",
                path.display(),
                model.name(),
                tensors[0].name
            );
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_models_give_the_same_bytes_and_read_back() {
        let model = fedcluster_models::LogisticRegression::new(3, 2).unwrap();
        let models = vec![vec![0.5; 8], vec![-1.5; 8]];
        let first = encode("logistic", &model.tensors(), &models).unwrap();
        // The crate's header order is a fresh `HashMap`'s each time.
        for _ in 0..20 {
            assert_eq!(
                encode("logistic", &model.tensors(), &models).unwrap(),
                first
            );
        }
        let len = u64::from_le_bytes(first[..8].try_into().unwrap()) as usize;
        assert_eq!(len % 8, 0);
        let file = SafeTensors::deserialize(&first).unwrap();
        assert_eq!(
            file.tensor("cluster1.bias").unwrap().data(),
            [0u8, 0, 192, 191, 0, 0, 192, 191]
        );
    }
}
