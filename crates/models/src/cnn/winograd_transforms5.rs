//! The per-tile transforms of Winograd's F(2x2, 5x5), as
//! [`super::winograd_transforms`]' of F(2x2, 3x3): each applied to every
//! channel at once, lane by lane along equal-length channel rows.
//!
//! With the interpolation points 0, 1, −1, 2, −2 and ∞ (Lavin and Gray's
//! construction; checked against the direct convolution by
//! `cnn/winograd_tests.rs`):
//!
//! ```text
//! Bᵀ = [4  0 -5  0  1  0]   G = [ 1/4    0     0     0     0  ]   Aᵀ = [1 1  1 1  1 0]
//!      [0 -4 -4  1  1  0]       [-1/6  -1/6  -1/6  -1/6  -1/6 ]        [0 1 -1 2 -2 1]
//!      [0  4 -4 -1  1  0]       [-1/6   1/6  -1/6   1/6  -1/6 ]
//!      [0 -2 -1  2  1  0]       [ 1/24  1/12  1/6   1/3   2/3 ]
//!      [0  2 -1 -2  1  0]       [ 1/24 -1/12  1/6  -1/3   2/3 ]
//!      [0  4  0 -5  0  1]       [ 0     0     0     0     1   ]
//! ```
//!
//! a 2x2 output tile of a 5x5 filter `g` over a 6x6 input tile `d` is
//! `Aᵀ [(G g Gᵀ) ⊙ (Bᵀ d B)] A`: 36 multiplications per channel pair
//! against the direct product's 100. Each 2-D transform applies its 1-D
//! one to the columns, then to the rows. Values of a tile are row-major.

use std::ops::{Add, Mul, Sub};

use super::winograd_transforms::{dispatched, lanes};

/// What the 1-D transforms compute on: one value (`f32`), or [`V`] lanes of
/// them at once. The same operations in the same order on both, so a
/// channel gives the same bits in a block or in the tail.
trait Lane: Copy + Add<Output = Self> + Sub<Output = Self> + Mul<f32, Output = Self> {
    const ZERO: Self;
}

impl Lane for f32 {
    const ZERO: f32 = 0.0;
}

/// Lanes per block: one AVX2 register of `f32`.
const W: usize = 8;

/// [`W`] channels' values, operated on lane by lane (one vector
/// instruction each once compiled for AVX2).
#[derive(Clone, Copy)]
struct V([f32; W]);

impl Add for V {
    type Output = V;
    #[inline(always)]
    fn add(self, o: V) -> V {
        V(std::array::from_fn(|l| self.0[l] + o.0[l]))
    }
}

impl Sub for V {
    type Output = V;
    #[inline(always)]
    fn sub(self, o: V) -> V {
        V(std::array::from_fn(|l| self.0[l] - o.0[l]))
    }
}

impl Mul<f32> for V {
    type Output = V;
    #[inline(always)]
    fn mul(self, k: f32) -> V {
        V(std::array::from_fn(|l| self.0[l] * k))
    }
}

impl Lane for V {
    const ZERO: V = V([0.0; W]);
}

/// `Bᵀ d` of 6 values.
#[inline(always)]
fn bt<T: Lane>(d: [T; 6]) -> [T; 6] {
    let (d12, d31, d42) = (d[1] + d[2], d[3] - d[1], d[4] - d[2]);
    [
        d[0] * 4.0 - d[2] * 5.0 + d[4],
        (d[3] + d[4]) - d12 * 4.0,
        (d[4] - d[3]) + (d[1] - d[2]) * 4.0,
        d42 + d31 * 2.0,
        d42 - d31 * 2.0,
        d[1] * 4.0 - d[3] * 5.0 + d[5],
    ]
}

/// `G g` of 5 taps.
#[inline(always)]
fn g_taps<T: Lane>(g: [T; 5]) -> [T; 6] {
    let (even, odd) = (g[0] + g[2] + g[4], g[1] + g[3]);
    let (even2, odd2) = (g[0] + g[2] * 4.0 + g[4] * 16.0, g[1] * 2.0 + g[3] * 8.0);
    [
        g[0] * 0.25,
        (even + odd) * (-1.0 / 6.0),
        (even - odd) * (-1.0 / 6.0),
        (even2 + odd2) * (1.0 / 24.0),
        (even2 - odd2) * (1.0 / 24.0),
        g[4],
    ]
}

/// `Aᵀ m` of 6 values.
#[inline(always)]
fn at<T: Lane>(m: [T; 6]) -> [T; 2] {
    [
        m[0] + (m[1] + m[2]) + (m[3] + m[4]),
        (m[1] - m[2]) + (m[3] - m[4]) * 2.0 + m[5],
    ]
}

/// `A dy` of 2 values (the adjoint of [`at`]).
#[inline(always)]
fn a<T: Lane>(dy: [T; 2]) -> [T; 6] {
    let twice = dy[1] * 2.0;
    [
        dy[0],
        dy[0] + dy[1],
        dy[0] - dy[1],
        dy[0] + twice,
        dy[0] - twice,
        dy[1],
    ]
}

/// `Gᵀ du` of 6 values (the adjoint of [`g_taps`]).
#[inline(always)]
fn gt<T: Lane>(du: [T; 6]) -> [T; 5] {
    let (p, q) = (du[1] + du[2], du[2] - du[1]);
    let (r, s) = (du[3] + du[4], du[3] - du[4]);
    [
        du[0] * 0.25 - p * (1.0 / 6.0) + r * (1.0 / 24.0),
        q * (1.0 / 6.0) + s * (1.0 / 12.0),
        (r - p) * (1.0 / 6.0),
        q * (1.0 / 6.0) + s * (1.0 / 3.0),
        du[5] + r * (2.0 / 3.0) - p * (1.0 / 6.0),
    ]
}

/// `$f` applied to each of the `$c` columns of the row-major `$r x $c`
/// matrix `$x` of `$t` (giving `$or` values each), then `$h` to each of the
/// `$or` rows of the result (`$oc` values each): an `[$t; $or · $oc]`,
/// row-major. A macro of plain loops (no closures), so that everything
/// inlines and stays in registers or L1.
macro_rules! separable {
    ($t:ty, $x:expr, $r:literal x $c:literal => $or:literal x $oc:literal, $f:ident, $h:ident) => {{
        let x = $x;
        let mut t = [[<$t as Lane>::ZERO; $c]; $or];
        for j in 0..$c {
            let mut col = [<$t as Lane>::ZERO; $r];
            for i in 0..$r {
                col[i] = x[$c * i + j];
            }
            let col = $f(col);
            for i in 0..$or {
                t[i][j] = col[i];
            }
        }
        let mut out = [<$t as Lane>::ZERO; $or * $oc];
        for i in 0..$or {
            let row = $h(t[i]);
            out[$oc * i..$oc * i + $oc].copy_from_slice(&row);
        }
        out
    }};
}

/// A 2-D transform of a tile, on single values or on blocks of lanes.
trait Tile<const I: usize, const O: usize> {
    fn apply<T: Lane>(x: [T; I]) -> [T; O];
}

/// `Bᵀ d B` of a 6x6 tile.
struct Input;

impl Tile<36, 36> for Input {
    #[inline(always)]
    fn apply<T: Lane>(d: [T; 36]) -> [T; 36] {
        separable!(T, d, 6 x 6 => 6 x 6, bt, bt)
    }
}

/// `Aᵀ m A` of a 6x6 product tile.
struct Output;

impl Tile<36, 4> for Output {
    #[inline(always)]
    fn apply<T: Lane>(m: [T; 36]) -> [T; 4] {
        separable!(T, m, 6 x 6 => 2 x 2, at, at)
    }
}

/// `A dy Aᵀ` of a 2x2 gradient tile (the adjoint of [`Output`]).
struct OutputAdjoint;

impl Tile<4, 36> for OutputAdjoint {
    #[inline(always)]
    fn apply<T: Lane>(dy: [T; 4]) -> [T; 36] {
        separable!(T, dy, 2 x 2 => 6 x 6, a, a)
    }
}

/// `outs[o][k] = F(ins[.][k])[o]` for every lane `k` (`outs[0].len()` of
/// them; every row at least that long): [`W`] lanes at a time as [`V`]
/// blocks, the rest one by one.
#[inline(always)]
fn blocks<F: Tile<I, O>, const I: usize, const O: usize>(
    ins: [&[f32]; I],
    mut outs: [&mut [f32]; O],
) {
    let n = outs[0].len();
    let whole = n - n % W;
    for k in (0..whole).step_by(W) {
        let mut x = [V::ZERO; I];
        for (x, row) in x.iter_mut().zip(&ins) {
            x.0.copy_from_slice(&row[k..k + W]);
        }
        for (out, y) in outs.iter_mut().zip(F::apply(x)) {
            out[k..k + W].copy_from_slice(&y.0);
        }
    }
    for k in whole..n {
        let mut x = [0.0; I];
        for (x, row) in x.iter_mut().zip(&ins) {
            *x = row[k];
        }
        for (out, y) in outs.iter_mut().zip(F::apply(x)) {
            out[k] = y;
        }
    }
}

dispatched! {
    /// The 36 rows of `Bᵀ d B` of the input tile `d` (36 rows, row-major).
    fn input(d: [&[f32]; 36], v: [&mut [f32]; 36]) {
        blocks::<Input, 36, 36>(d, v);
    }
}

dispatched! {
    /// The 2x2 output rows `Aᵀ m A` of the 36 product rows `m`.
    fn output(m: [&[f32]; 36], y: [&mut [f32]; 4]) {
        blocks::<Output, 36, 4>(m, y);
    }
}

dispatched! {
    /// The 36 rows of `A dy Aᵀ` of the 2x2 gradient rows `dy`.
    fn output_adjoint(dy: [&[f32]; 4], m: [&mut [f32]; 36]) {
        blocks::<OutputAdjoint, 4, 36>(dy, m);
    }
}

/// `G g Gᵀ` of a 5x5 filter (once per pass: lane by lane is enough).
#[inline(always)]
fn g_g_gt(g: [f32; 25]) -> [f32; 36] {
    separable!(f32, g, 5 x 5 => 6 x 6, g_taps, g_taps)
}

dispatched! {
    /// The 36 rows of `G g Gᵀ` of the filter `g` (25 rows, `(ky, kx)` order).
    fn filter(g: [&[f32]; 25], u: [&mut [f32]; 36]) {
        lanes(g, u, g_g_gt);
    }
}

/// `scale · Gᵀ du G` of a 6x6 gradient tile (the adjoint of [`g_g_gt`];
/// once per pass).
#[inline(always)]
fn gt_du_g(du: [f32; 36], scale: f32) -> [f32; 25] {
    let g: [f32; 25] = separable!(f32, du, 6 x 6 => 5 x 5, gt, gt);
    g.map(|v| scale * v)
}

dispatched! {
    /// The 25 filter rows `scale · Gᵀ du G` of the 36 gradient rows `du`.
    fn filter_adjoint(du: [&[f32]; 36], g: [&mut [f32]; 25], scale: f32) {
        lanes(du, g, |du| gt_du_g(du, scale));
    }
}
