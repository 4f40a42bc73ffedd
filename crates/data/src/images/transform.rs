//! Image transforms that define clusters over any image set: rotations by
//! quarter turns or by any angle, pixel inversion, and 2x2 average
//! downsampling.
//!
//! Images are `height x width` pixels of `channels` values each, row-major and
//! channels-last, row 0 at the top (as stored in the IDX and CIFAR files and
//! as displayed).

use serde::{Deserialize, Serialize};

use fedcluster_core::ImageShape;

use crate::error::{DataError, Result};

/// A transform of an image with values in `[0, 1]`.
///
/// Rotations turn the image counter-clockwise as displayed (row 0 at the
/// top), like `numpy.rot90(img, k)` with `k = 1, 2, 3` (and like
/// `torch.rot90(x, k, dims=(1, 2))` on a batch, as in the IFCA code):
/// `Rotate90` maps the top-right corner to the top-left one, so
/// `[[1, 2], [3, 4]]` becomes `[[2, 4], [1, 3]]`. A `rows x cols` image
/// rotated by 90 or 270 degrees is `cols x rows`.
///
/// `Rotate(degrees)` (`{ rotate = 45 }` in a config) turns by any angle,
/// counter-clockwise, about the image's centre, with the conventions of
/// torchvision's `transforms.functional.rotate(img, degrees)` defaults: each
/// output pixel takes the nearest source pixel, those from outside the image
/// are 0, and the image keeps its shape (a pixel exactly between two may
/// round the other way than torchvision's sampling grid). On square images a multiple of 90
/// degrees gives exactly the quarter turns above.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq)]
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
    /// A turn by this many degrees counter-clockwise, nearest pixel, zero
    /// outside (torchvision's `rotate`).
    Rotate(f32),
}

impl Transform {
    /// The name used in configurations (`identity`, `rotate90`, ...), and
    /// `rotate` and the angle for [`Transform::Rotate`] (`rotate45`).
    pub fn name(self) -> String {
        match self {
            Self::Identity => "identity".into(),
            Self::Rotate90 => "rotate90".into(),
            Self::Rotate180 => "rotate180".into(),
            Self::Rotate270 => "rotate270".into(),
            Self::Invert => "invert".into(),
            Self::Rotate(degrees) => format!("rotate{degrees}"),
        }
    }

    /// Whether the transform is a quarter turn (which swaps height and
    /// width, so needs square images in a partition).
    pub fn is_quarter_turn(self) -> bool {
        matches!(self, Self::Rotate90 | Self::Rotate180 | Self::Rotate270)
    }

    /// Whether the transform is well defined (a finite angle).
    pub fn is_valid(self) -> bool {
        match self {
            Self::Rotate(degrees) => degrees.is_finite(),
            _ => true,
        }
    }

    /// The shape of the transform of an image of `shape`.
    pub fn output_shape(self, shape: ImageShape) -> ImageShape {
        match self {
            Self::Rotate90 | Self::Rotate270 => ImageShape {
                height: shape.width,
                width: shape.height,
                channels: shape.channels,
            },
            Self::Identity | Self::Rotate180 | Self::Invert | Self::Rotate(_) => shape,
        }
    }

    /// Writes the transform of the image `src` of `shape` (channels-last)
    /// into `dst`, whose shape is [`Transform::output_shape`]: rotations move
    /// whole pixels (every channel with its pixel), inversion maps every value.
    /// Fails, writing nothing, if `src` does not hold the shape's values or
    /// `dst` is not as long as `src`.
    pub fn apply(self, shape: ImageShape, src: &[f32], dst: &mut [f32]) -> Result<()> {
        check_len("src", src.len(), shape)?;
        if dst.len() != src.len() {
            return Err(DataError::invalid(
                "dst",
                format!("{} values for an image of {} values", dst.len(), src.len()),
            ));
        }
        if src.is_empty() {
            return Ok(());
        }
        let (rows, cols, c) = (shape.height, shape.width, shape.channels);
        match self {
            Self::Identity => dst.copy_from_slice(src),
            Self::Invert => {
                for (d, s) in dst.iter_mut().zip(src) {
                    *d = 1.0 - s;
                }
            }
            Self::Rotate180 if c == 1 => {
                for (d, s) in dst.iter_mut().zip(src.iter().rev()) {
                    *d = *s;
                }
            }
            Self::Rotate180 => {
                for (d, s) in dst.chunks_exact_mut(c).zip(src.chunks_exact(c).rev()) {
                    d.copy_from_slice(s);
                }
            }
            // Output is cols x rows: out[i][j] = src[j][cols - 1 - i].
            Self::Rotate90 => rotate(rows, c, dst, |i, j| j * cols + cols - 1 - i, src),
            // Output is cols x rows: out[i][j] = src[rows - 1 - j][i].
            Self::Rotate270 => rotate(rows, c, dst, |i, j| (rows - 1 - j) * cols + i, src),
            Self::Rotate(degrees) => rotate_by(shape, degrees, src, dst),
        }
        Ok(())
    }
}

/// Turns `src` by `degrees` counter-clockwise about its centre into `dst`
/// (same shape): output pixel `(i, j)`, at `(x, y) = (j - cx, i - cy)` from
/// the centre with `y` pointing down, takes the source pixel nearest to
/// `(cx + x cos t - y sin t, cy + x sin t + y cos t)`, or 0 outside.
fn rotate_by(shape: ImageShape, degrees: f32, src: &[f32], dst: &mut [f32]) {
    let (rows, cols, c) = (shape.height, shape.width, shape.channels);
    let t = f64::from(degrees).to_radians();
    let (sin, cos) = t.sin_cos();
    let (cx, cy) = ((cols as f64 - 1.0) / 2.0, (rows as f64 - 1.0) / 2.0);
    for (i, out_row) in dst.chunks_exact_mut(cols * c).enumerate() {
        let y = i as f64 - cy;
        for (j, pixel) in out_row.chunks_exact_mut(c).enumerate() {
            let x = j as f64 - cx;
            let (sx, sy) = (
                (cx + x * cos - y * sin).round(),
                (cy + x * sin + y * cos).round(),
            );
            if sx >= 0.0 && sy >= 0.0 && (sx as usize) < cols && (sy as usize) < rows {
                let from = (sy as usize * cols + sx as usize) * c;
                pixel.copy_from_slice(&src[from..from + c]);
            } else {
                pixel.fill(0.0);
            }
        }
    }
}

/// Fills the `cols x rows` image `dst` (rows of `rows` pixels) of `c` channels: its pixel `(i, j)` is
/// pixel `from(i, j)` (row-major) of `src`.
fn rotate(
    rows: usize,
    c: usize,
    dst: &mut [f32],
    from: impl Fn(usize, usize) -> usize,
    src: &[f32],
) {
    for (i, out_row) in dst.chunks_exact_mut(rows * c).enumerate() {
        if c == 1 {
            for (j, d) in out_row.iter_mut().enumerate() {
                *d = src[from(i, j)];
            }
        } else {
            for (j, d) in out_row.chunks_exact_mut(c).enumerate() {
                d.copy_from_slice(&src[from(i, j) * c..][..c]);
            }
        }
    }
}

/// Writes into `dst` the 2x2 average downsampling of the image `src` of
/// `shape` (channels-last), channel by channel: pixel `(i, j)` of the
/// `rows/2 x cols/2` result is the mean of the block of rows `2i, 2i+1` and
/// columns `2j, 2j+1` (28x28 becomes 14x14). With an odd size the last row or
/// column is dropped, like PyTorch's `avg_pool2d(x, 2)`. Fails, writing
/// nothing, if `src` does not hold the shape's values or `dst` does not hold
/// those of [`downsampled`]`(shape)`.
pub fn downsample2x2(shape: ImageShape, src: &[f32], dst: &mut [f32]) -> Result<()> {
    check_len("src", src.len(), shape)?;
    let out = downsampled(shape);
    check_len("dst", dst.len(), out)?;
    let (cols, c) = (shape.width, shape.channels);
    if out.width == 0 || c == 0 {
        return Ok(());
    }
    let line = cols * c;
    for (i, out_row) in dst.chunks_exact_mut(out.width * c).enumerate() {
        let top = &src[2 * i * line..][..line];
        let bottom = &src[(2 * i + 1) * line..][..line];
        for (j, pixel) in out_row.chunks_exact_mut(c).enumerate() {
            for (ch, d) in pixel.iter_mut().enumerate() {
                let (left, right) = (2 * j * c + ch, (2 * j + 1) * c + ch);
                let sum = top[left] + top[right] + bottom[left] + bottom[right];
                *d = 0.25 * sum;
            }
        }
    }
    Ok(())
}

/// The shape [`downsample2x2`] gives an image of `shape`.
pub fn downsampled(shape: ImageShape) -> ImageShape {
    ImageShape {
        height: shape.height / 2,
        width: shape.width / 2,
        channels: shape.channels,
    }
}

fn check_len(field: &str, len: usize, shape: ImageShape) -> Result<()> {
    let want = shape
        .height
        .checked_mul(shape.width)
        .and_then(|p| p.checked_mul(shape.channels));
    if want == Some(len) {
        Ok(())
    } else {
        Err(DataError::invalid(
            field,
            format!(
                "{len} values for an image of {}x{}{}",
                shape.height,
                shape.width,
                match shape.channels {
                    1 => String::new(),
                    c => format!("x{c}"),
                }
            ),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn grey(height: usize, width: usize) -> ImageShape {
        ImageShape {
            height,
            width,
            channels: 1,
        }
    }

    fn apply(t: Transform, rows: usize, cols: usize, src: &[f32]) -> Vec<f32> {
        let mut dst = vec![f32::NAN; src.len()];
        t.apply(grey(rows, cols), src, &mut dst).unwrap();
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
        assert_eq!(Transform::Rotate90.output_shape(grey(2, 3)), grey(3, 2));
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
        downsample2x2(grey(4, 4), &src, &mut dst).unwrap();
        assert_eq!(dst, [2.5, 4.5, 10.5, 12.5]);
        // Odd sizes drop the last row and column.
        let mut one = [0.0; 1];
        downsample2x2(
            grey(3, 3),
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
            .apply(grey(2, 2), &[0.0; 3], &mut dst)
            .unwrap_err();
        assert_eq!(err.field(), "src");
        let err = Transform::Invert
            .apply(grey(2, 2), &[0.0; 4], &mut dst[..3])
            .unwrap_err();
        assert_eq!(err.field(), "dst");
        let err = downsample2x2(grey(4, 4), &[0.0; 16], &mut dst[..3]).unwrap_err();
        assert_eq!(err.field(), "dst");
        let err = downsample2x2(grey(usize::MAX, 2), &[0.0; 16], &mut dst).unwrap_err();
        assert_eq!(err.field(), "src");
    }

    #[test]
    fn colour_images_move_whole_pixels() {
        // A 2x3 image of 2 channels: pixel p holds (p, 10 + p).
        let rgb = ImageShape {
            height: 2,
            width: 3,
            channels: 2,
        };
        let src: Vec<f32> = (0..6).flat_map(|p| [p as f32, 10.0 + p as f32]).collect();
        let each_channel = |t: Transform| {
            // The colour transform, channel by channel, is the grey one.
            let mut dst = vec![f32::NAN; src.len()];
            t.apply(rgb, &src, &mut dst).unwrap();
            let out = t.output_shape(rgb);
            for ch in 0..2 {
                let plane: Vec<f32> = src.iter().skip(ch).step_by(2).copied().collect();
                let want = apply(t, 2, 3, &plane);
                let got: Vec<f32> = dst.iter().skip(ch).step_by(2).copied().collect();
                assert_eq!(got, want, "{t:?} channel {ch}");
            }
            assert_eq!(out.height * out.width * out.channels, src.len());
        };
        for t in [
            Transform::Identity,
            Transform::Rotate90,
            Transform::Rotate180,
            Transform::Rotate270,
            Transform::Invert,
        ] {
            each_channel(t);
        }
        // Downsampling averages each channel on its own.
        let big = ImageShape {
            height: 2,
            width: 2,
            channels: 3,
        };
        let src: Vec<f32> = (0..12).map(|v| v as f32).collect();
        let mut dst = [0.0; 3];
        downsample2x2(big, &src, &mut dst).unwrap();
        assert_eq!(dst, [4.5, 5.5, 6.5]);
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

    #[test]
    fn any_angle_turns_like_torchvision_rotate() {
        let (rows, cols) = (6, 6);
        let img: Vec<f32> = (0..rows * cols).map(|v| v as f32).collect();
        // Multiples of 90 degrees are the exact quarter turns.
        for (degrees, exact) in [
            (0.0, Transform::Identity),
            (90.0, Transform::Rotate90),
            (180.0, Transform::Rotate180),
            (270.0, Transform::Rotate270),
            (-90.0, Transform::Rotate270),
            (450.0, Transform::Rotate90),
        ] {
            assert_eq!(
                apply(Transform::Rotate(degrees), rows, cols, &img),
                apply(exact, rows, cols, &img),
                "{degrees} degrees"
            );
        }
        // 45 degrees on a 3x3 image, nearest pixel, worked by hand from the
        // definition: the centre stays, every other pixel takes its
        // clockwise neighbour on the ring (the image turns counter-clockwise).
        let small: Vec<f32> = (0..9).map(|v| v as f32).collect();
        assert_eq!(
            apply(Transform::Rotate(45.0), 3, 3, &small),
            [1.0, 2.0, 5.0, 0.0, 4.0, 8.0, 3.0, 6.0, 7.0]
        );
        // Pixels from outside the image are 0, and the shape is kept, also
        // for images that are not square.
        let wide: Vec<f32> = vec![1.0; 2 * 4];
        let out = apply(Transform::Rotate(90.0), 2, 4, &wide);
        assert_eq!(out.len(), 8);
        assert!(out.contains(&0.0) && out.contains(&1.0), "{out:?}");
        assert_eq!(Transform::Rotate(30.0).output_shape(grey(2, 4)), grey(2, 4));
        // Colour pixels move whole.
        let rgb = ImageShape {
            height: 3,
            width: 3,
            channels: 2,
        };
        let src: Vec<f32> = (0..9).flat_map(|p| [p as f32, 10.0 + p as f32]).collect();
        let mut dst = vec![f32::NAN; src.len()];
        Transform::Rotate(45.0).apply(rgb, &src, &mut dst).unwrap();
        let red: Vec<f32> = dst.iter().step_by(2).copied().collect();
        let green: Vec<f32> = dst.iter().skip(1).step_by(2).map(|v| v - 10.0).collect();
        assert_eq!(red, [1.0, 2.0, 5.0, 0.0, 4.0, 8.0, 3.0, 6.0, 7.0]);
        assert_eq!(red, green);
        // Read from a config as a table.
        #[derive(Deserialize)]
        struct W {
            t: Vec<Transform>,
        }
        let w: W = toml::from_str("t = ['identity', { rotate = 45 }, { rotate = 22.5 }]").unwrap();
        assert_eq!(
            w.t,
            [
                Transform::Identity,
                Transform::Rotate(45.0),
                Transform::Rotate(22.5)
            ]
        );
        assert_eq!(Transform::Rotate(22.5).name(), "rotate22.5");
        assert!(!Transform::Rotate(f32::NAN).is_valid());
    }
}
