//! Convolutions of stride 1 by Winograd's F(2x2, 3x3) and F(2x2, 5x5)
//! (Lavin and Gray 2016), for [`crate::resnet9::ResNet9`] and the CNNs: the
//! same inputs, filters and outputs as [`super::conv`]'s `im2col` path,
//! channels-last, with 2.25x (3x3) and 2.78x (5x5) fewer multiplications.
//!
//! The output is cut into 2x2 tiles (those past an odd edge padded with
//! zeros, their outside outputs dropped); each reads an `(k + 1)²` input
//! tile. Per chunk of tiles (of any images, [`chunk_tiles`]: about 2 MiB of
//! transformed values, at least 256 tiles):
//! every input tile is transformed (`Bᵀ d B`, `XI = (k + 1)²` values per
//! channel), then `XI` independent GEMMs, one per transform coordinate `ξ`,
//! multiply the `[tiles x in]` matrix `V[ξ]` by the transformed filters
//! `U[ξ] = G g Gᵀ` (`[out x in]`, made once per pass), and `Aᵀ m A` turns
//! each tile's `XI` products back into its 2x2 outputs.
//!
//! The backward pass runs the same way: the input gradient is the
//! convolution of the output gradient (padded by `k − 1 − pad`) by the
//! filters rotated by 180° with in and out swapped, whose transform, for
//! 3x3, is `U` with the coordinates 0 and 3 of each axis swapped
//! ([`Tiling::rotated`]) and transposed, and for 5x5 is made from the
//! rotated filters; the filters' gradient is `Gᵀ [Σ_tiles (A dY Aᵀ) ⊙ V] G`,
//! one `[out x tiles] x [tiles x in]` product per coordinate and chunk,
//! summed in chunk order.
//!
//! Chunks depend on the shapes only, and every product runs single-threaded
//! ([`fedcluster_core::linalg`]), so the bits never depend on the thread
//! count. They differ from the `im2col` path's in the last places (Winograd's
//! transforms round differently): a model switching path changes its
//! numbers once. Where each path wins is measured by
//! `cargo bench -p fedcluster-models --bench conv_paths` ([`wins`]).

use fedcluster_core::linalg::matmul;

use super::conv::Conv;
use super::winograd_grid::{Grid, Plane, carve, mat, mat_mut, rows, rows_mut, span};
use super::winograd_tiling::{F3, F5, Tiling};

/// Values of one chunk's transformed tiles (2 MiB): about a core's L2
/// cache.
const CHUNK_VALUES: usize = 1 << 19;

/// Fewest tiles per chunk: with fewer, each of the products is too short
/// to pay for packing its filters, and the filters' gradient's products
/// (as deep as the chunk has tiles) too shallow (256 took 19-21% less time
/// than 64 at ResNet9's 8x8 and 4x4 shapes, the same within the noise at the
/// others, docs/performance.md).
const MIN_CHUNK: usize = 256;

/// Fewest input channels for which Winograd is chosen: with fewer, its
/// products are too shallow (ResNet9's first convolution, 3 channels, and
/// the CNNs' first, 1 or 3, are faster by `im2col`, whose product is 27 or
/// more deep; ResNet9's next, 64 channels, and the CNNs' second, 32, by
/// Winograd). No width between 3 and 32 was measured.
pub(crate) const MIN_CHANNELS: usize = 16;

/// Whether a convolution can run here: 3x3 kernels with padding 1, or 5x5
/// kernels with any padding below 5.
pub(crate) fn applies(c: &Conv) -> bool {
    let kernel = (c.k == 3 && c.pad == 1) || (c.k == 5 && c.pad < 5);
    kernel && c.in_h > 0 && c.in_w > 0 && c.out_h > 0 && c.out_w > 0
}

/// The rule by which the networks pick this path over `im2col` for a
/// convolution to `cout` channels: wherever it applies and the input has at
/// least [`MIN_CHANNELS`] channels (measured faster at every such shape of
/// ResNet9 and the CNNs, docs/performance.md).
pub(crate) fn wins(c: &Conv, cout: usize) -> bool {
    applies(c) && c.in_c >= MIN_CHANNELS && cout > 0
}

/// The transform coordinates of `c`'s kernel.
fn coordinates(c: &Conv) -> usize {
    (c.k + 1) * (c.k + 1)
}

/// The input and output planes of `c`.
fn planes(c: &Conv) -> (Plane, Plane) {
    (
        Plane {
            h: c.in_h,
            w: c.in_w,
        },
        Plane {
            h: c.out_h,
            w: c.out_w,
        },
    )
}

/// Tiles per chunk for `total` tiles of `xi` coordinates from `cin` to
/// `cout` channels.
fn chunk_tiles(xi: usize, cin: usize, cout: usize, total: usize) -> usize {
    (CHUNK_VALUES / (xi * (cin + 2 * cout)).max(1))
        .max(MIN_CHUNK)
        .min(total)
        .max(1)
}

/// The most tiles a pass of `n` images walks at once: the output's (the
/// forward pass, the filters' gradient) or the input's (the input gradient).
fn tiles(c: &Conv, n: usize) -> usize {
    let (input, output) = planes(c);
    n * Grid::new(input).per_image.max(Grid::new(output).per_image)
}

/// The scratch lengths of a pass of `n` images from `c.in_c` to `cout`
/// channels: transformed filters (twice, for the filters' gradient), the
/// rotated filters and their transform (5x5 only), zero and output rows,
/// and one chunk's transformed tiles.
fn layout(c: &Conv, cout: usize, n: usize) -> [usize; 9] {
    let (cin, widest, xi) = (c.in_c, c.in_c.max(cout), coordinates(c));
    let chunk = chunk_tiles(xi, cin, cout, tiles(c, n));
    let filters = span(xi, cin, cout);
    // F(2x2, 3x3) permutes `U` for the rotated filters (`F3::rotated`).
    let rotated = if c.k == 3 { 0 } else { 1 };
    let tiles = |ch: usize| span(xi, chunk, ch);
    [
        filters,
        filters,
        rotated * filters,
        rotated * c.k * c.k * cin * cout,
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

/// `u` (`XI` `[cout x cin]` matrices) `= G g Gᵀ` of every filter of `w`
/// (`[cout, k, k, cin]`).
fn transform_filters<T: Tiling<XI, TAPS>, const XI: usize, const TAPS: usize>(
    w: &[f32],
    cin: usize,
    cout: usize,
    u: &mut [f32],
) {
    for (o, g) in w.chunks_exact(TAPS * cin).enumerate().take(cout) {
        let mut taps = g.chunks_exact(cin);
        let g = std::array::from_fn(|_| taps.next().expect("k² taps"));
        T::filter(g, rows_mut(u, cout, cin, o));
    }
}

/// `wr` (`[cin, k, k, cout]`) = the filters `w` (`[cout, k, k, cin]`)
/// rotated by 180° with in and out swapped.
fn rotate_filters(w: &[f32], k: usize, cin: usize, cout: usize, wr: &mut [f32]) {
    let taps = k * k;
    for o in 0..cout {
        for t in 0..taps {
            let from = &w[(o * taps + t) * cin..][..cin];
            let r = taps - 1 - t;
            for (i, &v) in from.iter().enumerate() {
                wr[(i * taps + r) * cout + o] = v;
            }
        }
    }
}

/// Each of the chunk's `count` tiles (from tile `first`) back from its `XI`
/// product rows in `m` (`ch` values each) to its 2x2 outputs (`Aᵀ m A`,
/// through the 4 rows of `y`), written into the grid's images `out`.
fn untransform<T: Tiling<XI, TAPS>, const XI: usize, const TAPS: usize>(
    grid: &Grid,
    m: &[f32],
    count: usize,
    ch: usize,
    first: usize,
    y: &mut [f32],
    out: &mut [f32],
) {
    for j in 0..count {
        let mut rows4 = y.chunks_exact_mut(ch);
        T::output(
            rows(m, count, ch, j),
            std::array::from_fn(|_| rows4.next().expect("4 rows")),
        );
        grid.scatter(&y[..4 * ch], ch, first + j, out);
    }
}

/// `z` (`n · positions x cout`) = the convolution of the `n` images `x` by
/// the filters `w` (`[cout, k, k, in_c]`), as [`super::conv::conv_forward`].
pub(crate) fn forward(
    c: &Conv,
    x: &[f32],
    w: &[f32],
    n: usize,
    scratch: &mut [f32],
    z: &mut [f32],
) {
    match c.k {
        3 => forward_by::<F3, 16, 9>(c, x, w, n, scratch, z),
        5 => forward_by::<F5, 36, 25>(c, x, w, n, scratch, z),
        k => unreachable!("no Winograd tiling for {k}x{k} kernels (`applies` is false)"),
    }
}

fn forward_by<T: Tiling<XI, TAPS>, const XI: usize, const TAPS: usize>(
    c: &Conv,
    x: &[f32],
    w: &[f32],
    n: usize,
    scratch: &mut [f32],
    z: &mut [f32],
) {
    let (cin, cout) = (c.in_c, w.len() / c.patch().max(1));
    let (input, output) = planes(c);
    let grid = Grid::new(output);
    let total = n * grid.per_image;
    let chunk = chunk_tiles(XI, cin, cout, tiles(c, n));
    let [u, _, _, _, zeros, y, v, m, _] = carve(scratch, layout(c, cout, n));
    zeros.fill(0.0);
    transform_filters::<T, XI, TAPS>(w, cin, cout, u);
    let side = T::K + 1;
    let mut first = 0;
    while first < total {
        let count = chunk.min(total - first);
        for j in 0..count {
            let d = grid.square(input, x, cin, first + j, side, c.pad, zeros);
            T::input(d, rows_mut(v, count, cin, j));
        }
        for xi in 0..XI {
            let (vx, ux) = (mat(v, xi, count, cin), mat(u, xi, cout, cin).t());
            matmul(mat_mut(m, xi, count, cout), vx, ux, false, 1.0);
        }
        untransform::<T, XI, TAPS>(&grid, m, count, cout, first, y, z);
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
    dx: Option<&mut [f32]>,
) {
    match c.k {
        3 => backward_by::<F3, 16, 9>(c, x, d, w, n, scale, scratch, gw, dx),
        5 => backward_by::<F5, 36, 25>(c, x, d, w, n, scale, scratch, gw, dx),
        k => unreachable!("no Winograd tiling for {k}x{k} kernels (`applies` is false)"),
    }
}

#[allow(clippy::too_many_arguments)]
fn backward_by<T: Tiling<XI, TAPS>, const XI: usize, const TAPS: usize>(
    c: &Conv,
    x: &[f32],
    d: &[f32],
    w: &[f32],
    n: usize,
    scale: f32,
    scratch: &mut [f32],
    gw: &mut [f32],
    dx: Option<&mut [f32]>,
) {
    let (cin, cout) = (c.in_c, w.len() / c.patch().max(1));
    let (input, output) = planes(c);
    let chunk = chunk_tiles(XI, cin, cout, tiles(c, n));
    let [u, du, ur, wr, zeros, y, v, dm, vd] = carve(scratch, layout(c, cout, n));
    zeros.fill(0.0);
    du.fill(0.0);
    let side = T::K + 1;
    // The filters' gradient, over the output's tiles.
    let grid = Grid::new(output);
    let total = n * grid.per_image;
    let mut first = 0;
    while first < total {
        let count = chunk.min(total - first);
        for j in 0..count {
            let tile = first + j;
            T::input(
                grid.square(input, x, cin, tile, side, c.pad, zeros),
                rows_mut(v, count, cin, j),
            );
            T::output_adjoint(
                grid.square(output, d, cout, tile, 2, 0, zeros),
                rows_mut(dm, count, cout, j),
            );
        }
        for xi in 0..XI {
            let (dmx, vx) = (mat(dm, xi, count, cout).t(), mat(v, xi, count, cin));
            matmul(mat_mut(du, xi, cout, cin), dmx, vx, true, 1.0);
        }
        first += count;
    }
    for (o, g) in gw.chunks_exact_mut(TAPS * cin).enumerate().take(cout) {
        let mut taps = g.chunks_exact_mut(cin);
        let g = std::array::from_fn(|_| taps.next().expect("k² taps"));
        T::filter_adjoint(rows(du, cout, cin, o), g, scale);
    }
    let Some(dx) = dx else { return };
    // The input gradient: the output gradient, padded by `k − 1 − pad`, by
    // the rotated filters, over the input's tiles. `ur[ξ]` is `[cin x
    // cout]` when made from the rotated filters, else `u[rotated(ξ)]` is
    // its transpose.
    let permuted = T::rotated(0).is_some();
    if permuted {
        transform_filters::<T, XI, TAPS>(w, cin, cout, u);
    } else {
        rotate_filters(w, T::K, cin, cout, wr);
        transform_filters::<T, XI, TAPS>(wr, cout, cin, ur);
    }
    let grid = Grid::new(input);
    let total = n * grid.per_image;
    let shift = T::K - 1 - c.pad;
    let mut first = 0;
    while first < total {
        let count = chunk.min(total - first);
        for j in 0..count {
            let dt = grid.square(output, d, cout, first + j, side, shift, zeros);
            T::input(dt, rows_mut(vd, count, cout, j));
        }
        for xi in 0..XI {
            let vdx = mat(vd, xi, count, cout);
            let filters = match T::rotated(xi) {
                Some(r) => mat(u, r, cout, cin),
                None => mat(ur, xi, cin, cout).t(),
            };
            matmul(mat_mut(v, xi, count, cin), vdx, filters, false, 1.0);
        }
        untransform::<T, XI, TAPS>(&grid, v, count, cin, first, y, dx);
        first += count;
    }
}
