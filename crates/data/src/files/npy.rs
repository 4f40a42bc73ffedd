//! NumPy's `.npy` array format (versions 1.0 to 3.0: the magic
//! `\x93NUMPY`, a little-endian header length, a Python dict literal
//! `{'descr': '<f4', 'fortran_order': False, 'shape': (n, d), }`, then the
//! values) and `.npz` archives of them (a zip file of `NAME.npy` entries,
//! stored by `np.savez` or deflated by `np.savez_compressed`).
//!
//! Read: little-endian (or byte-order-free) floats `f4`/`f8`, integers
//! `i1`..`i8`/`u1`..`u8` and booleans `b1`, in C order (a Fortran-order array
//! of more than one dimension is refused, not transposed). The element count
//! is checked against the caller's limit before anything of that size is
//! allocated. Written: version 1.0, C order, `<f4` or `<i8`, stored entries.

use std::io::{Read, Seek, Write};

use super::array::{Array, Values, decode};

/// The first bytes of every `.npy` file.
const MAGIC: &[u8] = b"\x93NUMPY";

/// The array of one `.npy` file's `bytes`, at most `limit` elements; the
/// error says what is wrong (the caller names the file).
pub fn parse_npy(bytes: &[u8], limit: u128) -> Result<Array, String> {
    if bytes.len() < 10 || &bytes[..6] != MAGIC {
        return Err("not a .npy array (no \\x93NUMPY magic)".into());
    }
    let (header_len, start): (usize, usize) = match bytes[6] {
        1 => (u16::from_le_bytes([bytes[8], bytes[9]]) as usize, 10),
        2 | 3 if bytes.len() >= 12 => (
            u32::from_le_bytes([bytes[8], bytes[9], bytes[10], bytes[11]]) as usize,
            12,
        ),
        v => return Err(format!(".npy version {v} is not read (1 to 3 are)")),
    };
    let header = bytes
        .get(start..start.saturating_add(header_len))
        .ok_or("the .npy header is cut short")?;
    let header = std::str::from_utf8(header).map_err(|_| "the .npy header is not text")?;
    let (kind, size) = descr(quoted(header, "descr")?)?;
    let shape = shape(header)?;
    let fortran = literal(header, "fortran_order")?.starts_with("True");
    if fortran && shape.iter().filter(|&&d| d > 1).count() > 1 {
        return Err("a Fortran-order array: save it with np.ascontiguousarray".into());
    }
    let count = shape
        .iter()
        .try_fold(1u128, |n, &d| n.checked_mul(d as u128))
        .filter(|&n| n <= limit)
        .ok_or_else(|| format!("shape {shape:?}: more than the limit of {limit} values"))?;
    let data = &bytes[start + header_len..];
    let expected = count * size as u128;
    if data.len() as u128 != expected {
        return Err(format!(
            "shape {shape:?} of {size}-byte values needs {expected} bytes, the file holds {}",
            data.len()
        ));
    }
    let values = decode(kind, size, data);
    Ok(Array { shape, values })
}

/// The type letter and byte size of a `descr` such as `<f4`.
fn descr(d: &str) -> Result<(char, usize), String> {
    let mut chars = d.chars();
    let order = chars.next().unwrap_or(' ');
    let kind = chars.next().unwrap_or(' ');
    let size: usize = chars.as_str().parse().unwrap_or(0);
    let known = matches!(
        (kind, size),
        ('f', 4 | 8) | ('i' | 'u', 1 | 2 | 4 | 8) | ('b', 1)
    );
    let little = order == '<' || order == '|' || order == '=' || (order == '>' && size == 1);
    match (known, little) {
        (true, true) => Ok((kind, size)),
        (true, false) => Err(format!(
            "dtype `{d}` is big-endian: save it as little-endian"
        )),
        (false, _) => Err(format!(
            "dtype `{d}` is not read (float32/64, integers and booleans are)"
        )),
    }
}

/// The text after `'key':` in the header dict, trimmed at its start.
fn literal<'h>(header: &'h str, key: &str) -> Result<&'h str, String> {
    let at = [format!("'{key}':"), format!("\"{key}\":")]
        .iter()
        .find_map(|k| header.find(k.as_str()).map(|i| i + k.len()))
        .ok_or_else(|| format!("the .npy header has no `{key}`"))?;
    Ok(header[at..].trim_start())
}

/// The quoted string value of `key`.
fn quoted<'h>(header: &'h str, key: &str) -> Result<&'h str, String> {
    let rest = literal(header, key)?;
    let quote = rest.chars().next().filter(|c| *c == '\'' || *c == '"');
    let bad = || format!("the .npy header's `{key}` is not a string");
    let quote = quote.ok_or_else(bad)?;
    let end = rest[1..].find(quote).ok_or_else(bad)?;
    Ok(&rest[1..1 + end])
}

/// The `shape` tuple.
fn shape(header: &str) -> Result<Vec<usize>, String> {
    let rest = literal(header, "shape")?;
    let bad = || "the .npy header's `shape` is not a tuple of sizes".to_string();
    let inner = rest.strip_prefix('(').ok_or_else(bad)?;
    let inner = &inner[..inner.find(')').ok_or_else(bad)?];
    inner
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|s| s.trim_end_matches('L').parse::<usize>().map_err(|_| bad()))
        .collect()
}

/// The `.npy` bytes (version 1.0) of `array`: `<f4` floats or `<i8` integers.
pub fn npy_bytes(array: &Array) -> Vec<u8> {
    let (descr, data): (&str, Vec<u8>) = match &array.values {
        Values::Float(v) => ("<f4", v.iter().flat_map(|x| x.to_le_bytes()).collect()),
        Values::Int(v) => ("<i8", v.iter().flat_map(|x| x.to_le_bytes()).collect()),
    };
    let dims: Vec<String> = array.shape.iter().map(|d| d.to_string()).collect();
    let tuple = match dims.len() {
        1 => format!("({},)", dims[0]),
        _ => format!("({})", dims.join(", ")),
    };
    let mut header = format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': {tuple}, }}");
    let unpadded = MAGIC.len() + 4 + header.len() + 1;
    header.extend(std::iter::repeat_n(
        ' ',
        unpadded.next_multiple_of(64) - unpadded,
    ));
    header.push('\n');
    let mut out = Vec::with_capacity(10 + header.len() + data.len());
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&[1, 0]);
    out.extend_from_slice(&(header.len() as u16).to_le_bytes());
    out.extend_from_slice(header.as_bytes());
    out.extend_from_slice(&data);
    out
}

/// The array `name.npy` of the `.npz` archive `archive`, at most `limit`
/// elements (its declared size checked before it is read).
pub fn read_npz_entry<R: Read + Seek>(
    archive: &mut zip::ZipArchive<R>,
    name: &str,
    limit: u128,
) -> Result<Array, String> {
    let entry_name = format!("{name}.npy");
    let entry = archive
        .by_name(&entry_name)
        .map_err(|_| format!("no `{entry_name}` array in this .npz archive"))?;
    let max_bytes = limit * 8 + (1 << 20);
    if entry.size() as u128 > max_bytes {
        return Err(format!(
            "`{entry_name}` declares {} bytes, more than {limit} values can take",
            entry.size()
        ));
    }
    // The declared size is the archive's word: grown into, not trusted.
    let mut bytes = Vec::with_capacity(entry.size().min(1 << 26) as usize);
    entry
        .take(max_bytes as u64 + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("`{entry_name}` cannot be read: {e}"))?;
    parse_npy(&bytes, limit).map_err(|why| format!("`{entry_name}`: {why}"))
}

/// Writes `arrays` (`(name, array)`) as an `.npz` archive to `out`, stored
/// uncompressed as `np.savez` does.
pub fn write_npz<W: Write + Seek>(out: W, arrays: &[(&str, &Array)]) -> zip::result::ZipResult<W> {
    let mut zip = zip::ZipWriter::new(out);
    for (name, array) in arrays {
        let bytes = npy_bytes(array);
        let options = zip::write::SimpleFileOptions::default()
            .compression_method(zip::CompressionMethod::Stored)
            .large_file(bytes.len() as u64 >= u32::MAX as u64);
        zip.start_file(format!("{name}.npy"), options)?;
        zip.write_all(&bytes)?;
    }
    zip.finish()
}
