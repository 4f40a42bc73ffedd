//! Image augmentation of local training ([`Augmentation`]: a random crop of
//! the zero-padded image, a horizontal flip, and the [`Jitter`] of the CIFAR-10
//! recipes: brightness, contrast, Cutout), and the deterministic image ops of
//! those recipes (a crop to a smaller size, TF's per-image standardisation, a
//! per-channel normalisation).
//!
//! Images are channels-last (`(y * width + x) * channels + c`). Every op works
//! in place or into a buffer the caller owns, so the training loops augment
//! each gathered minibatch row without allocating. The random draws are the
//! loops' (see [`super::minibatch::gather_features`]): from the client's
//! stream, per image, in row order.
//!
//! What the public code of the papers does, and what each op matches:
//! - SR-FCA (`cifar_code/cifar_run.py`, ffcv): `RandomHorizontalFlip()`,
//!   `RandomTranslate(padding=2)` (= `crop_padding = 2`), `Cutout(8, (0, 0, 0))`
//!   (its fill `tuple(map(int, CIFAR_MEAN))` is black).
//! - IFCA (`cifar/cifar10_input.py`, the TF CIFAR-10 tutorial): a random
//!   24x24 crop ([`crop`]), `random_flip_left_right`,
//!   `random_brightness(max_delta=63)` (`63/255` on images in `[0, 1]`),
//!   `random_contrast(0.2, 1.8)`, then `per_image_standardization`
//!   ([`standardize`]); at test the central 24x24 crop and the standardisation.

use rand::Rng as _;

use crate::input::ImageShape;
use crate::rng::Rng;

/// Training-time augmentation of images (the CIFAR protocols' "standard data
/// augmentation"): each minibatch image is shifted by a random offset in
/// `[−crop_padding, crop_padding]²` (a random crop of the zero-padded image),
/// flipped left-right with probability ½, then jittered ([`Jitter`]), all
/// drawn from the client's stream.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Augmentation {
    /// The images' shape.
    pub shape: ImageShape,
    /// Padding of the random crop (4 for CIFAR); 0 turns cropping off.
    pub crop_padding: usize,
    /// Random horizontal flips.
    pub flip: bool,
    /// Brightness, contrast and Cutout after the crop and flip (none by default).
    pub jitter: Jitter,
}

/// The photometric and occluding part of an augmentation, applied after the
/// crop and flip in this order; each is off at its default, and an op that is
/// off draws nothing (so adding the struct changed no earlier draw).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Jitter {
    /// TF's `random_brightness(max_delta)`: every value plus one `δ ~ U[−b, b)`
    /// per image (0: off).
    pub brightness: f32,
    /// TF's `random_contrast(lower, upper)`: per channel,
    /// `(x − mean) · f + mean` with `f ~ U[lower, upper)` per image.
    pub contrast: Option<(f32, f32)>,
    /// ffcv's `Cutout(size)`: a `size x size` square, wholly inside the image
    /// at a uniform position, set to 0 (0: off; a square larger than the image
    /// covers it).
    pub cutout: usize,
}

/// One image's jitter draw: the brightness shift, the contrast factor and the
/// Cutout square's top-left corner.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct JitterDraw {
    /// Added to every value.
    pub delta: f32,
    /// The contrast factor (1: unchanged).
    pub factor: f32,
    /// Top-left `(y, x)` of the Cutout square, when there is one.
    pub cutout_at: Option<(usize, usize)>,
}

impl Augmentation {
    /// Augments one channels-last image `src` into `dst` with the crop offset
    /// `(dy, dx)` and `flip` (the jitter is [`Augmentation::jitter_in_place`]'s).
    pub fn apply(&self, src: &[f32], dst: &mut [f32], dy: isize, dx: isize, flip: bool) {
        let ImageShape {
            height,
            width,
            channels: c,
        } = self.shape;
        for y in 0..height {
            let sy = y as isize + dy;
            for x in 0..width {
                let ox = if flip { width - 1 - x } else { x };
                let sx = ox as isize + dx;
                let out = &mut dst[(y * width + x) * c..(y * width + x + 1) * c];
                if sy < 0 || sx < 0 || sy >= height as isize || sx >= width as isize {
                    out.fill(0.0);
                } else {
                    let at = (sy as usize * width + sx as usize) * c;
                    out.copy_from_slice(&src[at..at + c]);
                }
            }
        }
    }

    /// Whether there is any jitter to draw and apply.
    pub fn jitters(&self) -> bool {
        self.jitter != Jitter::default()
    }

    /// One image's jitter draw from `rng`: brightness, contrast, then the
    /// Cutout corner, each only when it is on.
    pub fn jitter_draw(&self, rng: &mut Rng) -> JitterDraw {
        let Jitter {
            brightness,
            contrast,
            cutout,
        } = self.jitter;
        let delta = if brightness > 0.0 {
            rng.random_range(-brightness..brightness)
        } else {
            0.0
        };
        let factor = match contrast {
            Some((lo, hi)) if lo < hi => rng.random_range(lo..hi),
            Some((lo, _)) => lo,
            None => 1.0,
        };
        let cutout_at = (cutout > 0).then(|| {
            let ImageShape { height, width, .. } = self.shape;
            (
                rng.random_range(0..=height.saturating_sub(cutout)),
                rng.random_range(0..=width.saturating_sub(cutout)),
            )
        });
        JitterDraw {
            delta,
            factor,
            cutout_at,
        }
    }

    /// Applies `draw` to the image `img` in place: brightness, contrast,
    /// Cutout.
    pub fn jitter_in_place(&self, img: &mut [f32], draw: JitterDraw) {
        if draw.delta != 0.0 {
            img.iter_mut().for_each(|v| *v += draw.delta);
        }
        if self.jitter.contrast.is_some() {
            contrast(img, self.shape.channels, draw.factor);
        }
        if let Some((y, x)) = draw.cutout_at {
            cutout(img, self.shape, self.jitter.cutout, y, x);
        }
    }
}

/// TF's `adjust_contrast`: each channel's values become `(v − m) · factor + m`,
/// `m` the channel's mean over the image.
pub fn contrast(img: &mut [f32], channels: usize, factor: f32) {
    let pixels = img.len() / channels.max(1);
    for c in 0..channels {
        let sum: f64 = img
            .iter()
            .skip(c)
            .step_by(channels)
            .map(|&v| v as f64)
            .sum();
        let m = (sum / pixels.max(1) as f64) as f32;
        for v in img.iter_mut().skip(c).step_by(channels) {
            *v = (*v - m) * factor + m;
        }
    }
}

/// ffcv's Cutout: the `size x size` square at top-left `(y, x)` (cut at the
/// image's edges) set to 0 in every channel.
pub fn cutout(img: &mut [f32], shape: ImageShape, size: usize, y: usize, x: usize) {
    let ImageShape {
        height,
        width,
        channels: c,
    } = shape;
    let (from, to) = (x.min(width), x.saturating_add(size).min(width));
    for row in y..y.saturating_add(size).min(height) {
        img[(row * width + from) * c..(row * width + to) * c].fill(0.0);
    }
}

/// The `out_h x out_w` window of `src` whose top-left corner is `(y, x)`,
/// into `dst` (TF's `random_crop` with a drawn corner; [`centre`] gives
/// `resize_image_with_crop_or_pad`'s). The window must lie inside the image.
pub fn crop(
    src: &[f32],
    shape: ImageShape,
    out: (usize, usize),
    at: (usize, usize),
    dst: &mut [f32],
) {
    let (c, w) = (shape.channels, shape.width);
    let ((out_h, out_w), (y, x)) = (out, at);
    for row in 0..out_h {
        let from = ((y + row) * w + x) * c;
        dst[row * out_w * c..(row + 1) * out_w * c].copy_from_slice(&src[from..from + out_w * c]);
    }
}

/// The top-left corner of the central `out_h x out_w` window of `shape`
/// (TF's `resize_image_with_crop_or_pad` when cropping: `(H − h) / 2`, rounded
/// down).
pub fn centre(shape: ImageShape, out: (usize, usize)) -> (usize, usize) {
    (
        shape.height.saturating_sub(out.0) / 2,
        shape.width.saturating_sub(out.1) / 2,
    )
}

/// TF's `per_image_standardization`: `(v − mean) / max(std, 1/√N)` over all
/// `N` values of the image, in place.
pub fn standardize(img: &mut [f32]) {
    let n = img.len().max(1) as f64;
    let mean = img.iter().map(|&v| v as f64).sum::<f64>() / n;
    let var = img.iter().map(|&v| (v as f64 - mean).powi(2)).sum::<f64>() / n;
    let scale = var.sqrt().max(1.0 / n.sqrt());
    for v in img.iter_mut() {
        *v = ((*v as f64 - mean) / scale) as f32;
    }
}

/// torchvision's `Normalize(mean, std)`: channel `c`'s values become
/// `(v − mean[c]) / std[c]`, in place (`mean` and `std` one per channel).
pub fn normalize(img: &mut [f32], mean: &[f32], std: &[f32]) {
    let c = mean.len().max(1);
    for (i, v) in img.iter_mut().enumerate() {
        *v = (*v - mean[i % c]) / std[i % c];
    }
}

#[cfg(test)]
mod tests;
