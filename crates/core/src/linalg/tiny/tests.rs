//! Every shortcut against `gemm` itself, bit for bit.

use super::horizontal::{dot_portable, dots};
use super::*;

fn values(len: usize, seed: u32) -> Vec<f32> {
    (0..len)
        .map(|i| ((i as u32).wrapping_mul(2_654_435_761) ^ seed) as f32 / u32::MAX as f32 - 0.5)
        .collect()
}

#[test]
fn every_shortcut_gives_gemms_bits() {
    let mut checked = 0;
    // Row pairs of every width an AVX-512 block takes (1 to 12 columns).
    let pairs = (1..=13).map(|n| (2, n));
    for (m, n) in [(1, 1), (10, 2), (3, 7), (16, 16), (2, 40), (17, 16)]
        .into_iter()
        .chain(pairs)
    {
        for k in [1, 2, 3, 7, 8, 9, 196, 1024, 1030] {
            for scale in [1.0, 0.5, 1.0 / 3.0] {
                for (a_t, b_t, c_t) in [
                    (false, true, false),
                    (false, false, false),
                    (true, false, false),
                    (false, true, true),
                    (true, true, true),
                ] {
                    let (av, bv) = (values(m * k, 1), values(k * n, 2));
                    let a = if a_t {
                        MatRef::row_major(&av, k, m).t()
                    } else {
                        MatRef::row_major(&av, m, k)
                    };
                    let b = if b_t {
                        MatRef::row_major(&bv, n, k).t()
                    } else {
                        MatRef::row_major(&bv, k, n)
                    };
                    let mut want = vec![f32::NAN; m * n];
                    let view = if c_t {
                        MatMut::row_major(&mut want, n, m).t()
                    } else {
                        MatMut::row_major(&mut want, m, n)
                    };
                    super::super::by_gemm(view, a, b, false, scale);
                    let mut got = vec![f32::NAN; m * n];
                    let mut view = if c_t {
                        MatMut::row_major(&mut got, n, m).t()
                    } else {
                        MatMut::row_major(&mut got, m, n)
                    };
                    if matmul(&mut view, &a, &b, scale) {
                        checked += 1;
                        let same = got
                            .iter()
                            .zip(&want)
                            .all(|(x, y)| x.to_bits() == y.to_bits());
                        assert!(
                            same,
                            "m={m} n={n} k={k} scale={scale} a_t={a_t} b_t={b_t} c_t={c_t}"
                        );
                    }
                }
            }
        }
    }
    assert!(checked > 100, "only {checked} products took a shortcut");
}

/// `v` as an `m x n` matrix, row-major or (`transposed`) column-major.
fn view(v: &mut [f32], m: usize, n: usize, transposed: bool) -> MatMut<'_> {
    if transposed {
        MatMut::row_major(v, n, m).t()
    } else {
        MatMut::row_major(v, m, n)
    }
}

/// The values' bit patterns, for comparisons that tell -0.0 from 0.0.
fn bits(v: &[f32]) -> Vec<u32> {
    v.iter().map(|f| f.to_bits()).collect()
}

#[test]
fn add_product_gives_the_bits_of_matmul_then_axpy() {
    let mut fused_shapes = 0;
    for (m, n) in [(1, 1), (10, 196), (3, 7), (16, 16), (2, 40)] {
        for k in [1, 2, 3] {
            for c_t in [false, true] {
                let (av, bv) = (values(m * k, 5), values(k * n, 6));
                // The logistic model's backward product: `a` is `Δᵀ`.
                let a = MatRef::row_major(&av, k, m).t();
                let b = MatRef::row_major(&bv, k, n);
                let start = values(m * n, 7);
                let (alpha, scale) = (-0.3, 0.5);
                let mut product = vec![f32::NAN; m * n];
                let mut want = start.clone();
                let mut got = start.clone();
                if add_product(&mut view(&mut got, m, n, c_t), alpha, &a, &b, scale) {
                    fused_shapes += 1;
                    super::super::matmul(view(&mut product, m, n, c_t), a, b, false, scale);
                    // `product`, `want` and `got` share one storage order.
                    crate::kernels::axpy(alpha, &product, &mut want);
                    assert_eq!(bits(&got), bits(&want), "m={m} n={n} k={k} c_t={c_t}");
                } else {
                    assert_eq!(got, start, "declined, so untouched");
                }
            }
        }
    }
    assert!(fused_shapes >= 8, "only {fused_shapes} shapes fused");
}

#[test]
fn the_portable_dot_is_the_fma_dot() {
    for k in [1, 5, 8, 13, 196] {
        let (x, y) = (values(k, 3), values(k, 4));
        assert_eq!(
            dots([&x], [&y])[0][0].to_bits(),
            dot_portable(&x, &y).to_bits(),
            "k={k}"
        );
    }
}

#[test]
fn a_step_then_forward_gives_the_bits_of_add_product_then_matmul() {
    let mut fused = 0;
    for rows in [1, 3, 10, 16] {
        for dim in [1, 2, 7, 8, 9, 196, 200] {
            for n in [1, 2, 3] {
                let x = values(n * dim, 8);
                let start = values(rows * dim, 9);
                // Residuals of either sign, some exactly zero.
                let delta: Vec<f32> = values(n * rows, 10)
                    .iter()
                    .enumerate()
                    .map(|(i, v)| if i % 5 == 3 { 0.0 } else { *v })
                    .collect();
                let (alpha, scale) = (-0.1, 1.0 / n as f32);
                let (mut w, mut z) = (start.clone(), delta.clone());
                if !step_then_forward(&mut w, dim, alpha, &x, scale, &mut z) {
                    assert_eq!((&w, &z), (&start, &delta), "declined, so untouched");
                    continue;
                }
                fused += 1;
                let mut want_w = start.clone();
                let dt = MatRef::row_major(&delta, n, rows).t();
                let xs = MatRef::row_major(&x, n, dim);
                let view = MatMut::row_major(&mut want_w, rows, dim);
                assert!(super::super::add_product(view, alpha, dt, xs, scale));
                let mut want_z = vec![f32::NAN; n * rows];
                let wt = MatRef::row_major(&want_w, rows, dim).t();
                super::super::matmul(MatMut::row_major(&mut want_z, n, rows), xs, wt, false, 1.0);
                let shape = format!("rows={rows} dim={dim} n={n}");
                assert_eq!(bits(&w), bits(&want_w), "weights, {shape}");
                assert_eq!(bits(&z), bits(&want_z), "products, {shape}");
            }
        }
    }
    // Every shape with one or two samples and `dim >= 2`, where the CPU has FMA.
    if has_fma() {
        assert_eq!(fused, 4 * 6 * 2);
    }
}

#[test]
fn a_fused_update_gives_the_bits_of_matmul_then_axpy() {
    let mut stepped = 0;
    for rows in [1, 3, 10, 16] {
        for dim in [1, 2, 7, 8, 9, 196, 200] {
            for n in [1, 2, 3] {
                let x = values(n * dim, 11);
                let start = values(rows * dim, 12);
                let delta: Vec<f32> = values(n * rows, 13)
                    .iter()
                    .enumerate()
                    .map(|(i, v)| if i % 4 == 1 { 0.0 } else { *v })
                    .collect();
                let (alpha, scale) = (-0.1, 1.0 / n as f32);
                let dt = MatRef::row_major(&delta, n, rows).t();
                let xs = MatRef::row_major(&x, n, dim);
                let mut w = start.clone();
                if !fused_update(
                    &mut MatMut::row_major(&mut w, rows, dim),
                    alpha,
                    &dt,
                    &xs,
                    scale,
                ) {
                    assert_eq!(w, start, "declined, so untouched");
                    continue;
                }
                stepped += 1;
                let mut product = vec![f32::NAN; rows * dim];
                super::super::matmul(
                    MatMut::row_major(&mut product, rows, dim),
                    dt,
                    xs,
                    false,
                    scale,
                );
                let mut want = start.clone();
                crate::kernels::axpy(alpha, &product, &mut want);
                assert_eq!(bits(&w), bits(&want), "rows={rows} dim={dim} n={n}");
            }
        }
    }
    // Every shape with one or two samples and `dim >= 2`, where the CPU has FMA.
    if has_fma() {
        assert_eq!(stepped, 4 * 6 * 2);
    }
}
