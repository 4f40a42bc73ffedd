//! The per-tile transforms of Winograd's F(2x2, 3x3) (Lavin and Gray, "Fast
//! Algorithms for Convolutional Neural Networks", 2016), each applied to
//! every channel at once: a transform takes equal-length channel rows (one
//! per input value of the tile) and writes equal-length rows (one per output
//! value), lane by lane, so that the compiler vectorises along the channels.
//!
//! With `Bᵀ`, `G` and `Aᵀ` of F(2, 3):
//!
//! ```text
//! Bᵀ = [1  0 -1  0]    G = [1    0    0 ]    Aᵀ = [1 1  1  0]
//!      [0  1  1  0]        [1/2  1/2  1/2]         [0 1 -1 -1]
//!      [0 -1  1  0]        [1/2 -1/2  1/2]
//!      [0  1  0 -1]        [0    0    1 ]
//! ```
//!
//! a 2x2 output tile of a 3x3 filter `g` over a 4x4 input tile `d` is
//! `Aᵀ [(G g Gᵀ) ⊙ (Bᵀ d B)] A`. The four transforms here are that
//! formula's pieces ([`input`], [`filter`], [`output`]) and the adjoints the
//! filters' gradient needs ([`output_adjoint`]: `A dY Aᵀ`, and
//! [`filter_adjoint`]: `Gᵀ dU G`). Values of a tile are row-major.

/// Lanes per block of [`lanes`]: one AVX2 register of `f32`.
const W: usize = 8;

/// `outs[o][k] = f(ins[.][k])[o]` for every lane `k` (`outs[0].len()` of
/// them; every row at least that long), [`W`] lanes at a time through
/// fixed-size blocks, so that the compiler turns each of `f`'s operations
/// into one vector operation.
#[inline(always)]
pub(super) fn lanes<const I: usize, const O: usize>(
    ins: [&[f32]; I],
    mut outs: [&mut [f32]; O],
    f: impl Fn([f32; I]) -> [f32; O],
) {
    let n = outs[0].len();
    let whole = n - n % W;
    for k in (0..whole).step_by(W) {
        let a: [[f32; W]; I] =
            std::array::from_fn(|i| ins[i][k..k + W].try_into().expect("a block of lanes"));
        let mut b = [[0.0f32; W]; O];
        for l in 0..W {
            let v = f(std::array::from_fn(|i| a[i][l]));
            for (b, v) in b.iter_mut().zip(v) {
                b[l] = v;
            }
        }
        for (out, b) in outs.iter_mut().zip(&b) {
            out[k..k + W].copy_from_slice(b);
        }
    }
    for k in whole..n {
        let v = f(std::array::from_fn(|i| ins[i][k]));
        for (o, v) in outs.iter_mut().zip(v) {
            o[k] = v;
        }
    }
}

/// `pub(crate) fn $name(args) { $body }`, the body compiled for AVX2 too and
/// that version run where the CPU has it. The transforms only add and
/// multiply (no fused multiply-add), so both versions give the same bits.
macro_rules! dispatched {
    ($(#[$attr:meta])* fn $name:ident($($arg:ident: $ty:ty),*) $body:block) => {
        $(#[$attr])*
        pub(crate) fn $name($($arg: $ty),*) {
            #[cfg(target_arch = "x86_64")]
            {
                #[target_feature(enable = "avx2")]
                fn avx2($($arg: $ty),*) $body
                if std::is_x86_feature_detected!("avx2") {
                    // SAFETY: the CPU has the feature `avx2` is compiled for.
                    return unsafe { avx2($($arg),*) };
                }
            }
            $body
        }
    };
}
pub(super) use dispatched;

/// `Bᵀ d B` of a 4x4 tile.
#[inline(always)]
fn bt_d_b(d: [f32; 16]) -> [f32; 16] {
    let mut t = [0.0; 16];
    for j in 0..4 {
        t[j] = d[j] - d[8 + j];
        t[4 + j] = d[4 + j] + d[8 + j];
        t[8 + j] = d[8 + j] - d[4 + j];
        t[12 + j] = d[4 + j] - d[12 + j];
    }
    let mut v = [0.0; 16];
    for i in 0..4 {
        let r = &t[4 * i..4 * i + 4];
        v[4 * i] = r[0] - r[2];
        v[4 * i + 1] = r[1] + r[2];
        v[4 * i + 2] = r[2] - r[1];
        v[4 * i + 3] = r[1] - r[3];
    }
    v
}

dispatched! {
    /// The 16 rows of `Bᵀ d B` of the input tile `d` (16 rows, row-major).
    fn input(d: [&[f32]; 16], v: [&mut [f32]; 16]) {
        lanes(d, v, bt_d_b);
    }
}

/// `G g Gᵀ` of a 3x3 filter.
#[inline(always)]
fn g_g_gt(g: [f32; 9]) -> [f32; 16] {
    let mut t = [0.0; 12];
    for j in 0..3 {
        t[j] = g[j];
        t[3 + j] = 0.5 * (g[j] + g[3 + j] + g[6 + j]);
        t[6 + j] = 0.5 * (g[j] - g[3 + j] + g[6 + j]);
        t[9 + j] = g[6 + j];
    }
    let mut u = [0.0; 16];
    for i in 0..4 {
        let r = &t[3 * i..3 * i + 3];
        u[4 * i] = r[0];
        u[4 * i + 1] = 0.5 * (r[0] + r[1] + r[2]);
        u[4 * i + 2] = 0.5 * (r[0] - r[1] + r[2]);
        u[4 * i + 3] = r[2];
    }
    u
}

dispatched! {
    /// The 16 rows of `G g Gᵀ` of the filter `g` (9 rows, `(ky, kx)` order).
    fn filter(g: [&[f32]; 9], u: [&mut [f32]; 16]) {
        lanes(g, u, g_g_gt);
    }
}

/// `Aᵀ m A` of a 4x4 product tile.
#[inline(always)]
fn at_m_a(m: [f32; 16]) -> [f32; 4] {
    let mut s = [0.0; 8];
    for j in 0..4 {
        s[j] = m[j] + m[4 + j] + m[8 + j];
        s[4 + j] = m[4 + j] - m[8 + j] - m[12 + j];
    }
    [
        s[0] + s[1] + s[2],
        s[1] - s[2] - s[3],
        s[4] + s[5] + s[6],
        s[5] - s[6] - s[7],
    ]
}

dispatched! {
    /// The 2x2 output rows `Aᵀ m A` of the 16 product rows `m`.
    fn output(m: [&[f32]; 16], y: [&mut [f32]; 4]) {
        lanes(m, y, at_m_a);
    }
}

/// `A dy Aᵀ` of a 2x2 gradient tile: the gradient at the products of a
/// tile whose output's gradient is `dy` (the adjoint of [`at_m_a`]).
#[inline(always)]
fn a_dy_at(dy: [f32; 4]) -> [f32; 16] {
    // Rows of A dy: dy0, dy0 + dy1, dy0 - dy1, -dy1 (each a pair).
    let r = [
        [dy[0], dy[1]],
        [dy[0] + dy[2], dy[1] + dy[3]],
        [dy[0] - dy[2], dy[1] - dy[3]],
        [-dy[2], -dy[3]],
    ];
    let mut m = [0.0; 16];
    for (i, [a, b]) in r.into_iter().enumerate() {
        m[4 * i] = a;
        m[4 * i + 1] = a + b;
        m[4 * i + 2] = a - b;
        m[4 * i + 3] = -b;
    }
    m
}

dispatched! {
    /// The 16 rows of `A dy Aᵀ` of the 2x2 gradient rows `dy`.
    fn output_adjoint(dy: [&[f32]; 4], m: [&mut [f32]; 16]) {
        lanes(dy, m, a_dy_at);
    }
}

/// `scale · Gᵀ du G` of a 4x4 gradient tile: the filter's gradient from the
/// gradient at its transform (the adjoint of [`g_g_gt`]).
#[inline(always)]
fn gt_du_g(du: [f32; 16], scale: f32) -> [f32; 9] {
    let mut t = [0.0; 12];
    for j in 0..4 {
        let (a, b, c, d) = (du[j], du[4 + j], du[8 + j], du[12 + j]);
        t[j] = a + 0.5 * (b + c);
        t[4 + j] = 0.5 * (b - c);
        t[8 + j] = 0.5 * (b + c) + d;
    }
    let mut g = [0.0; 9];
    for i in 0..3 {
        let (a, b, c, d) = (t[4 * i], t[4 * i + 1], t[4 * i + 2], t[4 * i + 3]);
        g[3 * i] = scale * (a + 0.5 * (b + c));
        g[3 * i + 1] = scale * (0.5 * (b - c));
        g[3 * i + 2] = scale * (0.5 * (b + c) + d);
    }
    g
}

dispatched! {
    /// The 9 filter rows `scale · Gᵀ du G` of the 16 gradient rows `du`.
    fn filter_adjoint(du: [&[f32]; 16], g: [&mut [f32]; 9], scale: f32) {
        lanes(du, g, |du| gt_du_g(du, scale));
    }
}
