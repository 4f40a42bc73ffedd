//! A network's input stage: what each raw image goes through before the
//! network's first layer, at training and at evaluation alike (preprocessing,
//! not augmentation): a crop to a smaller size (a uniformly drawn window in
//! training, the central one at evaluation), then TF's per-image
//! standardisation and/or a per-channel mean/std normalisation.
//!
//! It is the IFCA public code's input pipeline (`cifar/cifar10_input.py`, the
//! TF CIFAR-10 tutorial): `random_crop` to 24x24 in training and
//! `resize_image_with_crop_or_pad` (the centre) at test, each followed by
//! `per_image_standardization`; the training jitter (flip, brightness,
//! contrast) comes between the crop and the standardisation
//! ([`InputStage::train`]). torchvision's `Normalize(mean, std)` (the SR-FCA
//! code's) is [`Normalize`].
//!
//! Images are channels-last, as in [`super::augment`].

use rand::Rng as _;

use super::augment::{self, Augmentation, crop};
use crate::input::ImageShape;
use crate::rng::Rng;

/// The most channels a [`Normalize`] holds statistics for.
pub const MAX_NORMALIZE_CHANNELS: usize = 4;

/// torchvision's `Normalize(mean, std)`: channel `c` becomes
/// `(v − mean[c]) / std[c]`; the first `channels` entries are used.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Normalize {
    /// Per-channel means.
    pub mean: [f32; MAX_NORMALIZE_CHANNELS],
    /// Per-channel standard deviations (positive).
    pub std: [f32; MAX_NORMALIZE_CHANNELS],
    /// Channels used.
    pub channels: usize,
}

impl Normalize {
    /// The statistics `mean` and `std`, one per channel; `None` unless both
    /// have the same length, at most [`MAX_NORMALIZE_CHANNELS`], every mean
    /// finite and every std finite and positive.
    pub fn new(mean: &[f32], std: &[f32]) -> Option<Self> {
        let ok = mean.len() == std.len()
            && !mean.is_empty()
            && mean.len() <= MAX_NORMALIZE_CHANNELS
            && mean.iter().all(|m| m.is_finite())
            && std.iter().all(|s| s.is_finite() && *s > 0.0);
        ok.then(|| {
            let mut out = Normalize {
                mean: [0.0; MAX_NORMALIZE_CHANNELS],
                std: [1.0; MAX_NORMALIZE_CHANNELS],
                channels: mean.len(),
            };
            out.mean[..mean.len()].copy_from_slice(mean);
            out.std[..std.len()].copy_from_slice(std);
            out
        })
    }
}

/// A network's input stage over `raw` images: the `size` window (the whole
/// image when equal), then the standardisation and the normalisation when on.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct InputStage {
    /// The images as the data holds them.
    pub raw: ImageShape,
    /// The `(height, width)` the network sees (at most `raw`'s).
    pub size: (usize, usize),
    /// TF's `per_image_standardization` after the crop.
    pub standardize: bool,
    /// A per-channel normalisation after the standardisation.
    pub normalize: Option<Normalize>,
}

impl InputStage {
    /// Why this stage cannot run, as `(key, reason)`: a window larger than the
    /// image or empty, or normalisation statistics for another channel count.
    pub fn check(&self) -> Result<(), (&'static str, String)> {
        let ImageShape {
            height,
            width,
            channels,
        } = self.raw;
        let (h, w) = self.size;
        if h == 0 || w == 0 || h > height || w > width {
            return Err((
                "crop",
                format!(
                    "must be [height, width] within the {height}x{width} images, got [{h}, {w}]"
                ),
            ));
        }
        if let Some(n) = self.normalize
            && n.channels != channels
        {
            return Err((
                "normalize",
                format!(
                    "has statistics for {} channel(s), the images have {channels}",
                    n.channels
                ),
            ));
        }
        Ok(())
    }

    /// The images the network sees.
    pub fn net_shape(&self) -> ImageShape {
        ImageShape {
            height: self.size.0,
            width: self.size.1,
            channels: self.raw.channels,
        }
    }

    /// Values of one image the network sees.
    pub fn net_dim(&self) -> usize {
        self.size.0 * self.size.1 * self.raw.channels
    }

    /// Values of one raw image.
    pub fn raw_dim(&self) -> usize {
        self.raw.height * self.raw.width * self.raw.channels
    }

    /// The evaluation stage of one raw image `src` into `dst`
    /// ([`InputStage::net_dim`] values): the central window, then
    /// [`InputStage::finish`].
    pub fn eval(&self, src: &[f32], dst: &mut [f32]) {
        let at = augment::centre(self.raw, self.size);
        crop(src, self.raw, self.size, at, dst);
        self.finish(dst);
    }

    /// The evaluation stage of `n` raw images back to back into `dst`.
    pub fn eval_all(&self, src: &[f32], dst: &mut Vec<f32>) {
        let (raw, net) = (self.raw_dim(), self.net_dim());
        dst.clear();
        dst.resize(src.len() / raw.max(1) * net, 0.0);
        for (s, d) in src.chunks_exact(raw).zip(dst.chunks_exact_mut(net)) {
            self.eval(s, d);
        }
    }

    /// The training stage of one raw image `src` appended to `dst`, with
    /// draws from `rng` in this order: `augmentation`'s crop offset and flip
    /// (on the raw image, [`super::minibatch::augmentation_draw`]), the
    /// window's top-left corner (uniform over every window inside the image,
    /// drawn only when the window is smaller), then the jitter of
    /// `augmentation` (brightness, contrast, Cutout) on the window; then
    /// [`InputStage::finish`]. `raw_scratch` holds the flipped raw image.
    pub fn train(
        &self,
        src: &[f32],
        augmentation: Option<&Augmentation>,
        rng: &mut Rng,
        raw_scratch: &mut Vec<f32>,
        dst: &mut Vec<f32>,
    ) {
        let image = match augmentation {
            Some(aug) => {
                let (dy, dx, flip) = super::minibatch::augmentation_draw(aug, rng);
                raw_scratch.clear();
                raw_scratch.resize(src.len(), 0.0);
                aug.apply(src, raw_scratch, dy, dx, flip);
                &raw_scratch[..]
            }
            None => src,
        };
        let ImageShape { height, width, .. } = self.raw;
        let (h, w) = self.size;
        let corner = if (h, w) == (height, width) {
            (0, 0)
        } else {
            (
                rng.random_range(0..=height - h),
                rng.random_range(0..=width - w),
            )
        };
        let at = dst.len();
        dst.resize(at + self.net_dim(), 0.0);
        let out = &mut dst[at..];
        crop(image, self.raw, self.size, corner, out);
        if let Some(aug) = augmentation
            && aug.jitters()
        {
            let on_window = Augmentation {
                shape: self.net_shape(),
                ..*aug
            };
            let draw = on_window.jitter_draw(rng);
            on_window.jitter_in_place(out, draw);
        }
        self.finish(out);
    }

    /// The standardisation, then the normalisation, of one cropped image in
    /// place (whichever are on).
    pub fn finish(&self, img: &mut [f32]) {
        if self.standardize {
            augment::standardize(img);
        }
        if let Some(n) = self.normalize {
            augment::normalize(img, &n.mean[..n.channels], &n.std[..n.channels]);
        }
    }
}

#[cfg(test)]
mod tests;
