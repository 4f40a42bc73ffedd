//! An array as the two array formats give it ([`super::npy`], safetensors
//! in [`super::arrays`]): its shape and its values, floats as `f32` and
//! integers as `i64`, decoded from little-endian bytes in one place.

/// An array as read: its shape and its values, row-major.
#[derive(Clone, Debug, PartialEq)]
pub struct Array {
    /// Sizes of its dimensions.
    pub shape: Vec<usize>,
    /// The values.
    pub values: Values,
}

/// An array's values.
#[derive(Clone, Debug, PartialEq)]
pub enum Values {
    /// Floating-point values, as `f32`.
    Float(Vec<f32>),
    /// Integers and booleans (an unsigned value above `i64::MAX` reads as
    /// `i64::MAX`).
    Int(Vec<i64>),
}

/// The values of `data`, `size` bytes each (1, 2, 4 or 8, as the callers'
/// dtype tables give) of type `kind` (`f`loat, `i`nt, else unsigned).
pub fn decode(kind: char, size: usize, data: &[u8]) -> Values {
    let words = data.chunks_exact(size);
    let int = |w: &[u8]| -> i64 {
        let mut b = [0u8; 8];
        b[..size].copy_from_slice(w);
        match kind {
            'i' => {
                let shift = 64 - 8 * size as u32;
                (i64::from_le_bytes(b) << shift) >> shift
            }
            _ => i64::try_from(u64::from_le_bytes(b)).unwrap_or(i64::MAX),
        }
    };
    match (kind, size) {
        ('f', 4) => Values::Float(
            words
                .map(|w| f32::from_le_bytes([w[0], w[1], w[2], w[3]]))
                .collect(),
        ),
        ('f', _) => Values::Float(
            words
                .map(|w| f64::from_le_bytes(w.try_into().unwrap_or([0; 8])) as f32)
                .collect(),
        ),
        _ => Values::Int(words.map(int).collect()),
    }
}
