//! Image transforms that define the clusters of the MNIST experiments:
//! rotations by quarter turns, pixel inversion, and 2x2 average downsampling.
//!
//! Images are `rows x cols` pixel values, row-major, row 0 at the top (as
//! stored in the IDX files and as displayed).

use serde::{Deserialize, Serialize};

use crate::error::{DataError, Result};

/// A transform of a grey image with pixels in `[0, 1]`.
///
/// Rotations turn the image counter-clockwise as displayed (row 0 at the
/// top), like `numpy.rot90(img, k)` with `k = 1, 2, 3` (and like
/// `torch.rot90(x, k, dims=(1, 2))` on a batch, as in the IFCA code):
/// `Rotate90` maps the top-right corner to the top-left one, so
/// `[[1, 2], [3, 4]]` becomes `[[2, 4], [1, 3]]`. A `rows x cols` image
/// rotated by 90 or 270 degrees is `cols x rows`.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[serde(rename_all = "kebab-case")]
pub enum Transform {
    /// The image as it is.
    Identity,
    /// A quarter turn counter-clockwise (`numpy.rot90(img, 1)`).
    Rotate90,
    /// A half turn (`numpy.rot90(img, 2)`).
    Rotate180,
    /// Three quarter turns counter-clockwise, i.e. a quarter turn clockwise
    /// (`numpy.rot90(img, 3)`).
    Rotate270,
    /// Every pixel `x` becomes `1 - x`.
    Invert,
}

impl Transform {
    /// The name used in configurations (`identity`, `rotate90`, ...).
    pub fn name(self) -> &'static str {
        match self {
            Self::Identity => "identity",
            Self::Rotate90 => "rotate90",
            Self::Rotate180 => "rotate180",
            Self::Rotate270 => "rotate270",
            Self::Invert => "invert",
        }
    }

    /// Whether the transform is a rotation.
    pub fn is_rotation(self) -> bool {
        matches!(self, Self::Rotate90 | Self::Rotate180 | Self::Rotate270)
    }

    /// Shape `(rows, cols)` of the transform of a `rows x cols` image.
    pub fn output_shape(self, rows: usize, cols: usize) -> (usize, usize) {
        match self {
            Self::Rotate90 | Self::Rotate270 => (cols, rows),
            Self::Identity | Self::Rotate180 | Self::Invert => (rows, cols),
        }
    }

    /// Writes the transform of the `rows x cols` image `src` into `dst`, whose
    /// shape is [`Transform::output_shape`]. Fails, writing nothing, if `src`
    /// does not hold `rows * cols` values or `dst` is not as long as `src`.
    pub fn apply(self, rows: usize, cols: usize, src: &[f32], dst: &mut [f32]) -> Result<()> {
        check_len("src", src.len(), rows.checked_mul(cols), rows, cols)?;
        if dst.len() != src.len() {
            return Err(DataError::invalid(
                "dst",
                format!("{} values for an image of {} values", dst.len(), src.len()),
            ));
        }
        if src.is_empty() {
            return Ok(());
        }
        match self {
            Self::Identity => dst.copy_from_slice(src),
            Self::Invert => {
                for (d, s) in dst.iter_mut().zip(src) {
                    *d = 1.0 - s;
                }
            }
            Self::Rotate180 => {
                for (d, s) in dst.iter_mut().zip(src.iter().rev()) {
                    *d = *s;
                }
            }
            // Output is cols x rows: out[i][j] = src[j][cols - 1 - i].
            Self::Rotate90 => {
                for (i, out_row) in dst.chunks_exact_mut(rows).enumerate() {
                    let c = cols - 1 - i;
                    for (j, d) in out_row.iter_mut().enumerate() {
                        *d = src[j * cols + c];
                    }
                }
            }
            // Output is cols x rows: out[i][j] = src[rows - 1 - j][i].
            Self::Rotate270 => {
                for (i, out_row) in dst.chunks_exact_mut(rows).enumerate() {
                    for (j, d) in out_row.iter_mut().enumerate() {
                        *d = src[(rows - 1 - j) * cols + i];
                    }
                }
            }
        }
        Ok(())
    }
}

/// Writes into `dst` the 2x2 average downsampling of the `rows x cols` image
/// `src`: pixel `(i, j)` of the `rows/2 x cols/2` result is the mean of the
/// block of rows `2i, 2i+1` and columns `2j, 2j+1` (28x28 becomes 14x14). With
/// an odd size the last row or column is dropped, like PyTorch's
/// `avg_pool2d(x, 2)`. Fails, writing nothing, if `src` does not hold
/// `rows * cols` values or `dst` does not hold `(rows/2) * (cols/2)`.
pub fn downsample2x2(rows: usize, cols: usize, src: &[f32], dst: &mut [f32]) -> Result<()> {
    check_len("src", src.len(), rows.checked_mul(cols), rows, cols)?;
    let (out_rows, out_cols) = (rows / 2, cols / 2);
    check_len(
        "dst",
        dst.len(),
        Some(out_rows * out_cols),
        out_rows,
        out_cols,
    )?;
    if out_cols == 0 {
        return Ok(());
    }
    for (i, out_row) in dst.chunks_exact_mut(out_cols).enumerate() {
        let top = &src[2 * i * cols..][..cols];
        let bottom = &src[(2 * i + 1) * cols..][..cols];
        for (j, d) in out_row.iter_mut().enumerate() {
            let sum = top[2 * j] + top[2 * j + 1] + bottom[2 * j] + bottom[2 * j + 1];
            *d = 0.25 * sum;
        }
    }
    Ok(())
}

fn check_len(field: &str, len: usize, want: Option<usize>, rows: usize, cols: usize) -> Result<()> {
    if want == Some(len) {
        Ok(())
    } else {
        Err(DataError::invalid(
            field,
            format!("{len} values for an image of {rows}x{cols}"),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn apply(t: Transform, rows: usize, cols: usize, src: &[f32]) -> Vec<f32> {
        let mut dst = vec![f32::NAN; src.len()];
        t.apply(rows, cols, src, &mut dst).unwrap();
        dst
    }

    #[test]
    fn rotations_turn_counter_clockwise_like_numpy_rot90() {
        // numpy.rot90([[1, 2], [3, 4]], k) for k = 1, 2, 3.
        let a = [1.0, 2.0, 3.0, 4.0];
        assert_eq!(apply(Transform::Rotate90, 2, 2, &a), [2.0, 4.0, 1.0, 3.0]);
        assert_eq!(apply(Transform::Rotate180, 2, 2, &a), [4.0, 3.0, 2.0, 1.0]);
        assert_eq!(apply(Transform::Rotate270, 2, 2, &a), [3.0, 1.0, 4.0, 2.0]);
        // numpy.rot90(np.arange(9).reshape(3, 3)) == [[2, 5, 8], [1, 4, 7], [0, 3, 6]].
        let b: Vec<f32> = (0..9).map(|v| v as f32).collect();
        let want = [2.0, 5.0, 8.0, 1.0, 4.0, 7.0, 0.0, 3.0, 6.0];
        assert_eq!(apply(Transform::Rotate90, 3, 3, &b), want);
        // A 2x3 image becomes 3x2: numpy.rot90([[0, 1, 2], [3, 4, 5]]) ==
        // [[2, 5], [1, 4], [0, 3]]; with k = 3: [[3, 0], [4, 1], [5, 2]].
        let c: Vec<f32> = (0..6).map(|v| v as f32).collect();
        assert_eq!(Transform::Rotate90.output_shape(2, 3), (3, 2));
        assert_eq!(
            apply(Transform::Rotate90, 2, 3, &c),
            [2.0, 5.0, 1.0, 4.0, 0.0, 3.0]
        );
        assert_eq!(
            apply(Transform::Rotate270, 2, 3, &c),
            [3.0, 0.0, 4.0, 1.0, 5.0, 2.0]
        );
    }

    #[test]
    fn rotations_compose() {
        let (rows, cols) = (5, 5);
        let img: Vec<f32> = (0..rows * cols).map(|v| v as f32 * 0.5).collect();
        let r90 = |x: &[f32]| apply(Transform::Rotate90, rows, cols, x);
        assert_eq!(r90(&r90(&r90(&r90(&img)))), img);
        assert_eq!(
            r90(&r90(&img)),
            apply(Transform::Rotate180, rows, cols, &img)
        );
        assert_eq!(
            r90(&r90(&r90(&img))),
            apply(Transform::Rotate270, rows, cols, &img)
        );
        assert_eq!(apply(Transform::Identity, rows, cols, &img), img);
    }

    #[test]
    fn invert_maps_x_to_one_minus_x() {
        let out = apply(Transform::Invert, 1, 3, &[0.0, 1.0, 0.25]);
        assert_eq!(out, [1.0, 0.0, 0.75]);
    }

    #[test]
    fn downsampling_averages_2x2_blocks() {
        #[rustfmt::skip]
        let src = [
            0.0, 1.0, 2.0, 3.0,
            4.0, 5.0, 6.0, 7.0,
            8.0, 9.0, 10.0, 11.0,
            12.0, 13.0, 14.0, 15.0,
        ];
        let mut dst = [0.0; 4];
        downsample2x2(4, 4, &src, &mut dst).unwrap();
        assert_eq!(dst, [2.5, 4.5, 10.5, 12.5]);
        // Odd sizes drop the last row and column.
        let mut one = [0.0; 1];
        downsample2x2(
            3,
            3,
            &[1.0, 3.0, 9.0, 5.0, 7.0, 9.0, 9.0, 9.0, 9.0],
            &mut one,
        )
        .unwrap();
        assert_eq!(one, [4.0]);
    }

    #[test]
    fn wrong_lengths_are_errors() {
        let mut dst = [0.0; 4];
        let err = Transform::Rotate90
            .apply(2, 2, &[0.0; 3], &mut dst)
            .unwrap_err();
        assert_eq!(err.field(), "src");
        let err = Transform::Invert
            .apply(2, 2, &[0.0; 4], &mut dst[..3])
            .unwrap_err();
        assert_eq!(err.field(), "dst");
        let err = downsample2x2(4, 4, &[0.0; 16], &mut dst[..3]).unwrap_err();
        assert_eq!(err.field(), "dst");
        let err = downsample2x2(usize::MAX, 2, &[0.0; 16], &mut dst).unwrap_err();
        assert_eq!(err.field(), "src");
    }

    #[test]
    fn names_match_serde() {
        for t in [
            Transform::Identity,
            Transform::Rotate90,
            Transform::Rotate180,
            Transform::Rotate270,
            Transform::Invert,
        ] {
            #[derive(Serialize)]
            struct W {
                t: Transform,
            }
            let s = toml::to_string(&W { t }).unwrap();
            assert_eq!(s.trim(), format!("t = \"{}\"", t.name()));
        }
    }
}
