//! Where [`super::winograd`]'s tiles sit and how its buffers are cut: the
//! grid of 2x2 output tiles over a plane of images, the square of values a
//! tile reads, and the `XI` matrices (one per transform coordinate) that a
//! chunk's transformed tiles and products are stored as.

use fedcluster_core::linalg::{MatMut, MatRef};

/// `n` channels-last images of `h x w` positions.
#[derive(Clone, Copy, Debug)]
pub(super) struct Plane {
    pub h: usize,
    pub w: usize,
}

/// The grid of 2x2 output tiles over a [`Plane`] (those past an odd edge
/// padded, their outside outputs dropped).
pub(super) struct Grid {
    plane: Plane,
    /// Tiles across.
    across: usize,
    /// Tiles per image.
    pub per_image: usize,
}

impl Grid {
    pub fn new(plane: Plane) -> Self {
        let across = plane.w.div_ceil(2);
        Grid {
            plane,
            across,
            per_image: across * plane.h.div_ceil(2),
        }
    }

    /// Image, top row and left column of the tile's outputs.
    fn at(&self, tile: usize) -> (usize, usize, usize) {
        let r = tile % self.per_image;
        (
            tile / self.per_image,
            2 * (r / self.across),
            2 * (r % self.across),
        )
    }

    /// The channel rows (`ch` values) of the `side x side` square at the
    /// tile's top-left corner moved by `-shift`, in images `x` of `source`:
    /// `zeros` outside the image.
    #[allow(clippy::too_many_arguments)]
    pub fn square<'a, const N: usize>(
        &self,
        source: Plane,
        x: &'a [f32],
        ch: usize,
        tile: usize,
        side: usize,
        shift: usize,
        zeros: &'a [f32],
    ) -> [&'a [f32]; N] {
        let (img, y0, x0) = self.at(tile);
        let base = img * source.h * source.w;
        std::array::from_fn(|i| {
            let (y, xx) = (
                (y0 + i / side).wrapping_sub(shift),
                (x0 + i % side).wrapping_sub(shift),
            );
            if y < source.h && xx < source.w {
                &x[(base + y * source.w + xx) * ch..][..ch]
            } else {
                &zeros[..ch]
            }
        })
    }

    /// Writes the tile's 2x2 output rows `y` (`ch` values each) into the
    /// grid's images `out`, dropping those past the edge.
    pub fn scatter(&self, y: &[f32], ch: usize, tile: usize, out: &mut [f32]) {
        let (img, y0, x0) = self.at(tile);
        let Plane { h, w } = self.plane;
        for (i, row) in y.chunks_exact(ch).enumerate() {
            let (oy, ox) = (y0 + i / 2, x0 + i % 2);
            if oy < h && ox < w {
                let at = (img * h * w + oy * w + ox) * ch;
                out[at..at + ch].copy_from_slice(row);
            }
        }
    }
}

/// Values between the starts of consecutive `[rows x cols]` matrices of a
/// buffer: the matrix and one cache line more, so that the same row of the
/// `N` matrices (read or written together by every transform) falls in
/// different cache sets (spaced by a power of two, as 256 tiles of 32
/// channels are, they evicted one another from L1).
fn spacing(rows: usize, cols: usize) -> usize {
    rows * cols + 16
}

/// Values `n` matrices of `[rows x cols]` take in a buffer.
pub(super) fn span(n: usize, rows: usize, cols: usize) -> usize {
    n * spacing(rows, cols)
}

/// Row `j` (`ch` values) of each of the `N` matrices `[count x ch]` in `buf`.
pub(super) fn rows<const N: usize>(buf: &[f32], count: usize, ch: usize, j: usize) -> [&[f32]; N] {
    let step = spacing(count, ch);
    std::array::from_fn(|xi| &buf[xi * step + j * ch..][..ch])
}

/// The mutable version of [`rows`].
pub(super) fn rows_mut<const N: usize>(
    buf: &mut [f32],
    count: usize,
    ch: usize,
    j: usize,
) -> [&mut [f32]; N] {
    let step = spacing(count, ch);
    let mut rest = buf;
    std::array::from_fn(|_| {
        let all = std::mem::take(&mut rest);
        let (head, tail) = all.split_at_mut(step.min(all.len()));
        rest = tail;
        &mut head[j * ch..][..ch]
    })
}

/// Matrix `xi` of `[rows x cols]` ones in `buf`.
pub(super) fn mat(buf: &[f32], xi: usize, rows: usize, cols: usize) -> MatRef<'_> {
    let at = xi * spacing(rows, cols);
    MatRef::row_major(&buf[at..][..rows * cols], rows, cols)
}

/// The mutable version of [`mat`].
pub(super) fn mat_mut(buf: &mut [f32], xi: usize, rows: usize, cols: usize) -> MatMut<'_> {
    let at = xi * spacing(rows, cols);
    MatMut::row_major(&mut buf[at..][..rows * cols], rows, cols)
}

/// Splits `s` into consecutive slices of `lens` values.
pub(super) fn carve<const N: usize>(s: &mut [f32], lens: [usize; N]) -> [&mut [f32]; N] {
    let mut rest = s;
    lens.map(|len| {
        let (head, tail) = std::mem::take(&mut rest).split_at_mut(len);
        rest = tail;
        head
    })
}
