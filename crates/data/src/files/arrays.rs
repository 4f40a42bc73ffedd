//! One client's file of arrays, `x` and `y`, in either of the two formats a
//! federation may use, chosen by the file's extension: safetensors
//! (`.safetensors`, tensors named `x` and `y`) or NumPy (`.npz`, entries
//! `x.npy` and `y.npy`, see [`super::npy`]). Values are read as `f32`
//! (float32, or float64 converted) or as integers (any width, signed or not,
//! and booleans); what they must mean is the manifest's to check.

use std::fs::File;
use std::io::{BufReader, BufWriter, Read as _, Write as _};
use std::path::Path;

use safetensors::tensor::{Dtype, SafeTensors, TensorView};

use super::array::decode;
use super::npy::{read_npz_entry, write_npz};

pub use super::array::{Array, Values};
use crate::error::{DataError, Result};

/// The file formats of a client's arrays.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ArrayFormat {
    /// `.safetensors`.
    Safetensors,
    /// NumPy `.npz`.
    Npz,
}

impl ArrayFormat {
    /// Every format.
    pub const ALL: [ArrayFormat; 2] = [ArrayFormat::Safetensors, ArrayFormat::Npz];

    /// The file extension, without its dot.
    pub fn extension(self) -> &'static str {
        match self {
            ArrayFormat::Safetensors => "safetensors",
            ArrayFormat::Npz => "npz",
        }
    }

    /// The format a file's name says (`None`: neither extension).
    pub fn of(path: &Path) -> Option<Self> {
        let ext = path.extension()?.to_str()?;
        Self::ALL.into_iter().find(|f| f.extension() == ext)
    }

    /// The format called `name` (its extension).
    pub fn named(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|f| f.extension() == name)
    }
}

/// The arrays `names` of the file at `path`, each of at most `limit` values;
/// errors start with the path.
pub fn read_arrays<const N: usize>(
    path: &Path,
    names: [&str; N],
    limit: u128,
) -> Result<[Array; N]> {
    let fail = |why: String| DataError::format(path, why);
    let format = ArrayFormat::of(path)
        .ok_or_else(|| fail("neither a .safetensors nor an .npz file".into()))?;
    let file = File::open(path).map_err(|e| DataError::io(path, e))?;
    let size = file.metadata().map_err(|e| DataError::io(path, e))?.len();
    let max_bytes = (N as u128) * (limit * 8 + (1 << 20));
    if size as u128 > max_bytes {
        return Err(fail(format!(
            "{size} bytes, more than {N} arrays of at most {limit} values take"
        )));
    }
    let mut out = Vec::with_capacity(N);
    match format {
        ArrayFormat::Npz => {
            let mut reader = BufReader::new(file);
            super::zip_bounds::check(&mut reader, size)
                .map_err(|e| fail(format!("not an .npz archive to read: {e}")))?;
            let mut zip = zip::ZipArchive::new(reader)
                .map_err(|e| fail(format!("not an .npz (zip) archive: {e}")))?;
            for name in names {
                out.push(read_npz_entry(&mut zip, name, limit).map_err(fail)?);
            }
        }
        ArrayFormat::Safetensors => {
            let mut bytes = Vec::with_capacity(size as usize);
            BufReader::new(file)
                .read_to_end(&mut bytes)
                .map_err(|e| DataError::io(path, e))?;
            let tensors = SafeTensors::deserialize(&bytes)
                .map_err(|e| fail(format!("not a safetensors file: {e}")))?;
            for name in names {
                let view = tensors
                    .tensor(name)
                    .map_err(|_| fail(format!("no `{name}` tensor in this file")))?;
                out.push(from_view(name, &view, limit).map_err(fail)?);
            }
        }
    }
    out.try_into().map_err(|_| fail("arrays missing".into()))
}

/// The array of a safetensors tensor view.
fn from_view(name: &str, view: &TensorView<'_>, limit: u128) -> Result<Array, String> {
    let (kind, size) = match view.dtype() {
        Dtype::F32 => ('f', 4),
        Dtype::F64 => ('f', 8),
        Dtype::I8 => ('i', 1),
        Dtype::I16 => ('i', 2),
        Dtype::I32 => ('i', 4),
        Dtype::I64 => ('i', 8),
        Dtype::U8 | Dtype::BOOL => ('u', 1),
        Dtype::U16 => ('u', 2),
        Dtype::U32 => ('u', 4),
        Dtype::U64 => ('u', 8),
        d => {
            return Err(format!(
                "tensor `{name}` is {d:?}: float32/64, integers and booleans are read"
            ));
        }
    };
    let shape = view.shape().to_vec();
    let count = shape
        .iter()
        .try_fold(1u128, |n, &d| n.checked_mul(d as u128))
        .filter(|&n| n <= limit)
        .ok_or_else(|| format!("tensor `{name}` {shape:?}: more than {limit} values"))?;
    if view.data().len() as u128 != count * size as u128 {
        return Err(format!(
            "tensor `{name}` {shape:?}: its bytes do not fit its shape"
        ));
    }
    Ok(Array {
        shape,
        values: decode(kind, size, view.data()),
    })
}

/// Writes `arrays` (`(name, array)`) to `path` in the format its extension
/// names (floats as float32, integers as int64).
pub fn write_arrays(path: &Path, arrays: &[(&str, &Array)]) -> Result<()> {
    let format = ArrayFormat::of(path)
        .ok_or_else(|| DataError::format(path, "neither a .safetensors nor an .npz name"))?;
    let file = File::create(path).map_err(|e| DataError::io(path, e))?;
    let mut out = BufWriter::new(file);
    match format {
        ArrayFormat::Npz => {
            out = write_npz(out, arrays).map_err(|e| DataError::format(path, e.to_string()))?;
        }
        ArrayFormat::Safetensors => {
            let bytes = safetensors_bytes(arrays)
                .map_err(|e| DataError::format(path, format!("cannot encode: {e}")))?;
            out.write_all(&bytes).map_err(|e| DataError::io(path, e))?;
        }
    }
    out.flush().map_err(|e| DataError::io(path, e))
}

/// The safetensors bytes of `arrays`.
fn safetensors_bytes(
    arrays: &[(&str, &Array)],
) -> std::result::Result<Vec<u8>, safetensors::SafeTensorError> {
    let raw: Vec<(Dtype, Vec<u8>)> = arrays
        .iter()
        .map(|(_, a)| match &a.values {
            Values::Float(v) => (Dtype::F32, v.iter().flat_map(|x| x.to_le_bytes()).collect()),
            Values::Int(v) => (Dtype::I64, v.iter().flat_map(|x| x.to_le_bytes()).collect()),
        })
        .collect();
    let mut views = Vec::with_capacity(arrays.len());
    for ((name, array), (dtype, bytes)) in arrays.iter().zip(&raw) {
        views.push((*name, TensorView::new(*dtype, array.shape.clone(), bytes)?));
    }
    safetensors::serialize(views, None)
}
