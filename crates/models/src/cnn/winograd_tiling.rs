//! The two tilings [`super::winograd`] runs: F(2x2, 3x3) and F(2x2, 5x5),
//! each its kernel side, whether the rotated filters' transform is a
//! permutation of the filters', and its five per-tile transforms
//! ([`super::winograd_transforms`], [`super::winograd_transforms5`]).

use super::winograd_transforms as f3;
use super::winograd_transforms5 as f5;

/// One of Winograd's F(2x2, k x k): `XI = (k + 1)²` transform coordinates,
/// `TAPS = k²` filter taps, and the per-tile transforms over channel rows.
pub(super) trait Tiling<const XI: usize, const TAPS: usize> {
    /// The kernel's side `k`.
    const K: usize;
    /// The coordinate of the transform of a filter rotated by 180° that
    /// holds coordinate `xi` of the filter's, where that is a permutation.
    fn rotated(xi: usize) -> Option<usize>;
    fn input(d: [&[f32]; XI], v: [&mut [f32]; XI]);
    fn filter(g: [&[f32]; TAPS], u: [&mut [f32]; XI]);
    fn output(m: [&[f32]; XI], y: [&mut [f32]; 4]);
    fn output_adjoint(dy: [&[f32]; 4], m: [&mut [f32]; XI]);
    fn filter_adjoint(du: [&[f32]; XI], g: [&mut [f32]; TAPS], scale: f32);
}

/// The five transforms of a [`Tiling`] with `XI` coordinates and `TAPS`
/// taps, as the functions of the same names in module `$m`.
macro_rules! transforms_of {
    ($m:ident, $xi:literal, $taps:literal) => {
        fn input(d: [&[f32]; $xi], v: [&mut [f32]; $xi]) {
            $m::input(d, v)
        }
        fn filter(g: [&[f32]; $taps], u: [&mut [f32]; $xi]) {
            $m::filter(g, u)
        }
        fn output(m: [&[f32]; $xi], y: [&mut [f32]; 4]) {
            $m::output(m, y)
        }
        fn output_adjoint(dy: [&[f32]; 4], m: [&mut [f32]; $xi]) {
            $m::output_adjoint(dy, m)
        }
        fn filter_adjoint(du: [&[f32]; $xi], g: [&mut [f32]; $taps], scale: f32) {
            $m::filter_adjoint(du, g, scale)
        }
    };
}

/// F(2x2, 3x3) ([`super::winograd_transforms`]).
pub(super) struct F3;

impl Tiling<16, 9> for F3 {
    const K: usize = 3;
    /// `G J = P G` with `J` the reversal and `P` the swap of rows 0 and 3.
    fn rotated(xi: usize) -> Option<usize> {
        const P: [usize; 4] = [3, 1, 2, 0];
        Some(4 * P[xi / 4] + P[xi % 4])
    }
    transforms_of!(f3, 16, 9);
}

/// F(2x2, 5x5) ([`super::winograd_transforms5`]).
pub(super) struct F5;

impl Tiling<36, 25> for F5 {
    const K: usize = 5;
    /// The points ±2 map to ±1/2 under the reversal: no permutation.
    fn rotated(_: usize) -> Option<usize> {
        None
    }
    transforms_of!(f5, 36, 25);
}
