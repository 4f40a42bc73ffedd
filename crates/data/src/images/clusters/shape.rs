//! The images' shapes before and after the optional downsampling, and a
//! client's samples written from the image set: each image downsampled (if
//! asked), transformed and relabelled (under concept shift).

use fedcluster_core::ImageShape;

use crate::dataset::{ClientData, TargetsOwned};
use crate::error::{DataError, Result};
use crate::images::{ImageSet, Transform, downsample2x2, downsampled};

/// Image shapes before and after the optional downsampling.
pub(crate) struct Shape {
    input: ImageShape,
    downsample: bool,
}

/// How one cluster presents an image: its transform and, under concept
/// shift, its labelling (`labels[c]` is class `c`'s new label).
#[derive(Clone, Copy)]
pub(crate) struct Look<'a> {
    pub(crate) transform: Transform,
    pub(crate) labels: Option<&'a [u32]>,
}

impl Look<'_> {
    /// `transform` with the true labels.
    pub(crate) fn plain(transform: Transform) -> Self {
        Self {
            transform,
            labels: None,
        }
    }
}

impl Shape {
    pub(crate) fn new(set: &ImageSet, downsample: bool, transforms: &[Transform]) -> Result<Self> {
        let shape = Self {
            input: set.shape,
            downsample,
        };
        let out = shape.image();
        let (rows, cols) = (out.height, out.width);
        if rows * cols * out.channels == 0 {
            let field = if downsample { "downsample" } else { "images" };
            return Err(DataError::invalid(
                field,
                format!(
                    "images of {}x{} are too small",
                    set.shape.height, set.shape.width
                ),
            ));
        }
        if rows != cols
            && let Some(j) = transforms.iter().position(|t| t.is_quarter_turn())
        {
            return Err(DataError::invalid(
                format!("transforms[{j}]"),
                format!("quarter turns need square images, these are {rows}x{cols}"),
            ));
        }
        Ok(shape)
    }

    /// The shape of the images that are transformed (and, quarter turns being
    /// of square images only, of every client's samples).
    pub(crate) fn image(&self) -> ImageShape {
        if self.downsample {
            downsampled(self.input)
        } else {
            self.input
        }
    }

    /// Features per sample.
    pub(crate) fn dim(&self) -> usize {
        let out = self.image();
        out.height * out.width * out.channels
    }

    pub(crate) fn scratch_len(&self) -> usize {
        if self.downsample { self.dim() } else { 0 }
    }

    /// A client holding the images at `indices`, downsampled if asked, then
    /// presented as `look`, written straight into its feature vector.
    pub(crate) fn client(
        &self,
        images: (&[f32], &[u32]),
        indices: impl ExactSizeIterator<Item = usize>,
        look: Look<'_>,
        scratch: &mut [f32],
    ) -> Result<ClientData> {
        let mut x = vec![0.0; indices.len() * self.dim()];
        let mut y = vec![0; indices.len()];
        self.fill(images, indices, look, scratch, &mut x, &mut y)?;
        Ok(ClientData {
            x,
            y: TargetsOwned::Class(y),
        })
    }

    /// [`Shape::client`] into caller-owned `x` (`indices.len() * dim`) and
    /// `y` (`indices.len()`).
    pub(crate) fn fill(
        &self,
        (images, labels): (&[f32], &[u32]),
        indices: impl ExactSizeIterator<Item = usize>,
        look: Look<'_>,
        scratch: &mut [f32],
        x: &mut [f32],
        y: &mut [u32],
    ) -> Result<()> {
        let input = self.input;
        let (len, dim, out) = (
            input.height * input.width * input.channels,
            self.dim(),
            self.image(),
        );
        let t = look.transform;
        for ((slot, label), i) in x.chunks_exact_mut(dim).zip(y.iter_mut()).zip(indices) {
            let src = &images[i * len..(i + 1) * len];
            if self.downsample {
                downsample2x2(input, src, scratch)?;
                t.apply(out, scratch, slot)?;
            } else {
                t.apply(out, src, slot)?;
            }
            *label = match look.labels {
                Some(map) => map[labels[i] as usize],
                None => labels[i],
            };
        }
        Ok(())
    }
}
