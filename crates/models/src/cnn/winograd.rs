//! 3x3 convolutions (stride 1, padding 1) by Winograd's F(2x2, 3x3) (Lavin
//! and Gray 2016), for [`crate::resnet9::ResNet9`]: the same inputs, filters
//! and outputs as [`super::conv`]'s `im2col` path, channels-last, with 2.25x
//! fewer multiplications.
//!
//! The output is cut into 2x2 tiles (those past an odd edge padded with
//! zeros, their outside outputs dropped); each reads a 4x4 input tile. Per
//! chunk of tiles (of any images, [`chunk_tiles`]: about 2 MiB of
//! transformed values, at least 256 tiles):
//! every input tile is transformed (`Bᵀ d B`, 16 values per channel), then 16
//! independent GEMMs, one per transform coordinate `ξ`, multiply the
//! `[tiles x in]` matrix `V[ξ]` by the transformed filters `U[ξ] = G g Gᵀ`
//! (`[out x in]`, made once per pass), and `Aᵀ m A` turns each tile's 16
//! products back into its 2x2 outputs.
//!
//! The backward pass runs the same way: the input gradient is the
//! convolution of the output gradient by the filters rotated by 180° with
//! in and out swapped, whose transform is `U` with the coordinates 0 and 3
//! of each axis swapped ([`rotated`]) and transposed, so `U` serves both
//! passes; the filters' gradient is `Gᵀ [Σ_tiles (A dY Aᵀ) ⊙ V] G`, one
//! `[out x tiles] x [tiles x in]` product per coordinate and chunk, summed
//! in chunk order.
//!
//! Chunks depend on the shapes only, and every product runs single-threaded
//! ([`fedcluster_core::linalg`]), so the bits never depend on the thread
//! count. They differ from the `im2col` path's in the last places (Winograd's
//! transforms round differently): a model switching path changes its
//! numbers once. Where each path wins is measured by
//! `cargo bench -p fedcluster-models --bench conv_paths` ([`wins`]).

use fedcluster_core::linalg::{MatMut, MatRef, matmul};

use super::conv::Conv;
use super::winograd_transforms as transform;

/// Transform coordinates of a 4x4 tile.
const XI: usize = 16;

/// Values of one chunk's transformed tiles (2 MiB): about a core's L2
/// cache.
const CHUNK_VALUES: usize = 1 << 19;

/// Fewest tiles per chunk: with fewer, each of the 16 products is too short
/// to pay for packing its filters, and the filters' gradient's products
/// (as deep as the chunk has tiles) too shallow (256 took 19-21% less time
/// than 64 at ResNet9's 8x8 and 4x4 shapes, the same within the noise at the
/// others, docs/performance.md).
const MIN_CHUNK: usize = 256;

/// Fewest input channels for which Winograd is chosen: with fewer, its 16
/// products are too shallow (ResNet9's first convolution, 3 channels, is
/// faster by `im2col`, whose product is 27 deep; its next, 64 channels, by
/// Winograd). No width between 3 and 64 was measured: for Page's network any
/// threshold in between picks the same paths.
pub(crate) const MIN_CHANNELS: usize = 16;

/// Whether a convolution can run here: 3x3 kernels, padding 1.
pub(crate) fn applies(c: &Conv) -> bool {
    c.k == 3 && c.pad == 1 && c.in_h > 0 && c.in_w > 0
}

/// The rule by which ResNet9 picks this path over `im2col` for a
/// convolution to `cout` channels: wherever it applies and the input has at
/// least [`MIN_CHANNELS`] channels (measured faster at every such shape of
/// ResNet9, docs/performance.md).
pub(crate) fn wins(c: &Conv, cout: usize) -> bool {
    applies(c) && c.in_c >= MIN_CHANNELS && cout > 0
}

/// The coordinate of the transform of a filter rotated by 180° that holds
/// coordinate `xi` of the filter's: `G J = P G` with `J` the reversal and `P`
/// the swap of rows 0 and 3.
fn rotated(xi: usize) -> usize {
    const P: [usize; 4] = [3, 1, 2, 0];
    4 * P[xi / 4] + P[xi % 4]
}

/// The grid of 2x2 tiles over `h x w` images.
struct Grid {
    h: usize,
    w: usize,
    /// Tiles across.
    across: usize,
    /// Tiles per image.
    per_image: usize,
}

impl Grid {
    fn new(c: &Conv) -> Self {
        let across = c.in_w.div_ceil(2);
        Grid {
            h: c.in_h,
            w: c.in_w,
            across,
            per_image: across * c.in_h.div_ceil(2),
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
    /// tile's top-left corner moved by `-shift`, in images `x`: `zeros`
    /// outside the image.
    fn square<'a, const N: usize>(
        &self,
        x: &'a [f32],
        ch: usize,
        tile: usize,
        side: usize,
        shift: usize,
        zeros: &'a [f32],
    ) -> [&'a [f32]; N] {
        let (img, y0, x0) = self.at(tile);
        let base = img * self.h * self.w;
        std::array::from_fn(|i| {
            let (y, xx) = (
                (y0 + i / side).wrapping_sub(shift),
                (x0 + i % side).wrapping_sub(shift),
            );
            if y < self.h && xx < self.w {
                &x[(base + y * self.w + xx) * ch..][..ch]
            } else {
                &zeros[..ch]
            }
        })
    }

    /// Writes the tile's 2x2 output rows `y` (`ch` values each) into images
    /// `out`, dropping those past the edge.
    fn scatter(&self, y: &[f32], ch: usize, tile: usize, out: &mut [f32]) {
        let (img, y0, x0) = self.at(tile);
        for (i, row) in y.chunks_exact(ch).enumerate() {
            let (oy, ox) = (y0 + i / 2, x0 + i % 2);
            if oy < self.h && ox < self.w {
                let at = (img * self.h * self.w + oy * self.w + ox) * ch;
                out[at..at + ch].copy_from_slice(row);
            }
        }
    }
}

/// Row `j` (`ch` values) of each of the 16 matrices `[count x ch]` in `buf`.
fn rows(buf: &[f32], count: usize, ch: usize, j: usize) -> [&[f32]; XI] {
    let mut it = buf.chunks_exact(count * ch);
    std::array::from_fn(|_| &it.next().expect("16 matrices")[j * ch..][..ch])
}

/// The mutable version of [`rows`].
fn rows_mut(buf: &mut [f32], count: usize, ch: usize, j: usize) -> [&mut [f32]; XI] {
    let mut it = buf.chunks_exact_mut(count * ch);
    std::array::from_fn(|_| &mut it.next().expect("16 matrices")[j * ch..][..ch])
}

/// Matrix `xi` of 16 `[rows x cols]` ones in `buf`.
fn mat(buf: &[f32], xi: usize, rows: usize, cols: usize) -> MatRef<'_> {
    MatRef::row_major(&buf[xi * rows * cols..][..rows * cols], rows, cols)
}

/// The mutable version of [`mat`].
fn mat_mut(buf: &mut [f32], xi: usize, rows: usize, cols: usize) -> MatMut<'_> {
    MatMut::row_major(&mut buf[xi * rows * cols..][..rows * cols], rows, cols)
}

/// Tiles per chunk for `total` tiles from `cin` to `cout` channels.
fn chunk_tiles(cin: usize, cout: usize, total: usize) -> usize {
    (CHUNK_VALUES / (XI * (cin + 2 * cout)).max(1))
        .max(MIN_CHUNK)
        .min(total)
        .max(1)
}

/// Splits `s` into consecutive slices of `lens` values.
fn carve<const N: usize>(s: &mut [f32], lens: [usize; N]) -> [&mut [f32]; N] {
    let mut rest = s;
    lens.map(|len| {
        let (head, tail) = std::mem::take(&mut rest).split_at_mut(len);
        rest = tail;
        head
    })
}

/// The scratch lengths of a pass of `n` images from `c.in_c` to `cout`
/// channels: transformed filters (twice, for the filters' gradient), zero
/// and output rows, and one chunk's transformed tiles.
fn layout(c: &Conv, cout: usize, n: usize) -> [usize; 7] {
    let (cin, widest) = (c.in_c, c.in_c.max(cout));
    let chunk = chunk_tiles(cin, cout, n * Grid::new(c).per_image);
    let filters = XI * cin * cout;
    let tiles = |ch: usize| XI * chunk * ch;
    [
        filters,
        filters,
        widest,
        4 * widest,
        tiles(cin),
        tiles(cout),
        tiles(cout),
    ]
}

/// Scratch values [`forward`] and [`backward`] need for `n` images.
pub(crate) fn scratch_len(c: &Conv, cout: usize, n: usize) -> usize {
    layout(c, cout, n).iter().sum()
}

/// `u` (16 `[cout x cin]` matrices) `= G g Gᵀ` of every filter of `w`
/// (`[cout, 3, 3, cin]`).
fn transform_filters(w: &[f32], cin: usize, cout: usize, u: &mut [f32]) {
    for (o, g) in w.chunks_exact(9 * cin).enumerate().take(cout) {
        let mut taps = g.chunks_exact(cin);
        let g = std::array::from_fn(|_| taps.next().expect("9 taps"));
        transform::filter(g, rows_mut(u, cout, cin, o));
    }
}

/// `z` (`n · positions x cout`) = the convolution of the `n` images `x` by
/// the filters `w` (`[cout, 3, 3, in_c]`), as [`super::conv::conv_forward`].
pub(crate) fn forward(
    c: &Conv,
    x: &[f32],
    w: &[f32],
    n: usize,
    scratch: &mut [f32],
    z: &mut [f32],
) {
    let (cin, cout) = (c.in_c, w.len() / c.patch().max(1));
    let grid = Grid::new(c);
    let total = n * grid.per_image;
    let chunk = chunk_tiles(cin, cout, total);
    let [u, _, zeros, y, v, m, _] = carve(scratch, layout(c, cout, n));
    zeros.fill(0.0);
    transform_filters(w, cin, cout, u);
    let mut first = 0;
    while first < total {
        let count = chunk.min(total - first);
        let (v, m) = (&mut v[..XI * count * cin], &mut m[..XI * count * cout]);
        for j in 0..count {
            let d = grid.square(x, cin, first + j, 4, 1, zeros);
            transform::input(d, rows_mut(v, count, cin, j));
        }
        for xi in 0..XI {
            let (vx, ux) = (mat(v, xi, count, cin), mat(u, xi, cout, cin).t());
            matmul(mat_mut(m, xi, count, cout), vx, ux, false, 1.0);
        }
        for j in 0..count {
            let mut out = y.chunks_exact_mut(cout);
            transform::output(
                rows(m, count, cout, j),
                std::array::from_fn(|_| out.next().expect("4 rows")),
            );
            grid.scatter(&y[..4 * cout], cout, first + j, z);
        }
        first += count;
    }
}

/// The backward pass of [`forward`] with `d` the gradient at `z`, as
/// [`super::conv::conv_backward`]: the filters' gradient `gw` (overwritten,
/// times `scale`) and, when given, the input gradient `dx` (overwritten).
#[allow(clippy::too_many_arguments)]
pub(crate) fn backward(
    c: &Conv,
    x: &[f32],
    d: &[f32],
    w: &[f32],
    n: usize,
    scale: f32,
    scratch: &mut [f32],
    gw: &mut [f32],
    mut dx: Option<&mut [f32]>,
) {
    let (cin, cout) = (c.in_c, w.len() / c.patch().max(1));
    let grid = Grid::new(c);
    let total = n * grid.per_image;
    let chunk = chunk_tiles(cin, cout, total);
    let [u, du, zeros, y, v, dm, vd] = carve(scratch, layout(c, cout, n));
    zeros.fill(0.0);
    du.fill(0.0);
    if dx.is_some() {
        transform_filters(w, cin, cout, u);
    }
    let mut first = 0;
    while first < total {
        let count = chunk.min(total - first);
        let (v, dm) = (&mut v[..XI * count * cin], &mut dm[..XI * count * cout]);
        for j in 0..count {
            let tile = first + j;
            transform::input(
                grid.square(x, cin, tile, 4, 1, zeros),
                rows_mut(v, count, cin, j),
            );
            transform::output_adjoint(
                grid.square(d, cout, tile, 2, 0, zeros),
                rows_mut(dm, count, cout, j),
            );
        }
        for xi in 0..XI {
            let (dmx, vx) = (mat(dm, xi, count, cout).t(), mat(v, xi, count, cin));
            matmul(mat_mut(du, xi, cout, cin), dmx, vx, true, 1.0);
        }
        if let Some(dx) = dx.as_deref_mut() {
            let vd = &mut vd[..XI * count * cout];
            for j in 0..count {
                let dt = grid.square(d, cout, first + j, 4, 1, zeros);
                transform::input(dt, rows_mut(vd, count, cout, j));
            }
            // The input gradient's products, into `v` (no longer needed).
            for xi in 0..XI {
                let (vdx, ux) = (mat(vd, xi, count, cout), mat(u, rotated(xi), cout, cin));
                matmul(mat_mut(v, xi, count, cin), vdx, ux, false, 1.0);
            }
            for j in 0..count {
                let mut out = y.chunks_exact_mut(cin);
                transform::output(
                    rows(v, count, cin, j),
                    std::array::from_fn(|_| out.next().expect("4 rows")),
                );
                grid.scatter(&y[..4 * cin], cin, first + j, dx);
            }
        }
        first += count;
    }
    for (o, g) in gw.chunks_exact_mut(9 * cin).enumerate().take(cout) {
        let mut taps = g.chunks_exact_mut(cin);
        let g = std::array::from_fn(|_| taps.next().expect("9 taps"));
        transform::filter_adjoint(rows(du, cout, cin, o), g, scale);
    }
}
