//! The strided convolution ([`super::conv::conv_forward_strided`], the SR-FCA
//! code's 5x5 stride 2) against the direct sum, and its gradients against
//! the adjoint identities.

use super::conv::{Conv, conv_backward_strided, conv_forward_strided};

/// The direct sum `z[o, y, x, f] = Σ w[f, ky, kx, c] x[y s + ky − p, x s + kx − p, c]`.
fn direct(c: &Conv, stride: usize, x: &[f32], w: &[f32], out: usize) -> Vec<f32> {
    let mut z = vec![0.0f32; c.positions() * out];
    for oy in 0..c.out_h {
        for ox in 0..c.out_w {
            for f in 0..out {
                let mut s = 0.0f32;
                for ky in 0..c.k {
                    for kx in 0..c.k {
                        let iy = (oy * stride + ky) as isize - c.pad as isize;
                        let ix = (ox * stride + kx) as isize - c.pad as isize;
                        if iy < 0 || ix < 0 || iy >= c.in_h as isize || ix >= c.in_w as isize {
                            continue;
                        }
                        for ch in 0..c.in_c {
                            let xv = x[(iy as usize * c.in_w + ix as usize) * c.in_c + ch];
                            s += w[((f * c.k + ky) * c.k + kx) * c.in_c + ch] * xv;
                        }
                    }
                }
                z[(oy * c.out_w + ox) * out + f] = s;
            }
        }
    }
    z
}

/// A 5x5 stride-2 convolution with padding 2 (the SR-FCA code's) against
/// the direct sum, and its input gradient against the adjoint identity
/// `⟨z(x), d⟩ = ⟨x, dx⟩` (the convolution is linear in `x`).
#[test]
fn strided_convolution_matches_the_direct_sum_and_its_adjoint() {
    let (side, cin, out, stride) = (7, 2, 3, 2);
    let o = (side + 4 - 5) / stride + 1;
    let c = Conv {
        in_h: side,
        in_w: side,
        in_c: cin,
        k: 5,
        pad: 2,
        out_h: o,
        out_w: o,
    };
    let value = |i: usize| ((i * 37 % 23) as f32 - 11.0) / 7.0;
    let x: Vec<f32> = (0..side * side * cin).map(value).collect();
    let w: Vec<f32> = (0..out * c.patch()).map(|i| value(i + 5)).collect();
    let mut scratch = vec![0.0; c.scratch_len(1)];
    let mut z = vec![0.0; c.positions() * out];
    conv_forward_strided(&c, stride, &x, &w, 1, &mut scratch, &mut z);
    for (a, b) in z.iter().zip(direct(&c, stride, &x, &w, out)) {
        assert!((a - b).abs() < 1e-4, "{a} vs {b}");
    }
    let d: Vec<f32> = (0..z.len()).map(|i| value(i + 9)).collect();
    let (mut gw, mut dx) = (vec![0.0; w.len()], vec![0.0; x.len()]);
    conv_backward_strided(
        &c,
        stride,
        &x,
        &d,
        &w,
        1,
        1.0,
        &mut scratch,
        &mut gw,
        Some(&mut dx),
    );
    let lhs: f32 = z.iter().zip(&d).map(|(a, b)| a * b).sum();
    let rhs: f32 = x.iter().zip(&dx).map(|(a, b)| a * b).sum();
    assert!(
        (lhs - rhs).abs() < 1e-3 * lhs.abs().max(1.0),
        "{lhs} vs {rhs}"
    );
    // And linear in w: ⟨z(w), d⟩ = ⟨w, gw⟩.
    let rhs: f32 = w.iter().zip(&gw).map(|(a, b)| a * b).sum();
    assert!(
        (lhs - rhs).abs() < 1e-3 * lhs.abs().max(1.0),
        "{lhs} vs {rhs}"
    );
}
