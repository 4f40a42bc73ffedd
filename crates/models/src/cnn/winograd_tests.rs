//! Winograd's F(2x2, 3x3) and F(2x2, 5x5) against the `im2col` path: the
//! convolution, the filters' gradient and the input gradient agree to float
//! rounding on odd sizes, every padding, unequal channel counts, several
//! images and several chunks.

use rand::Rng as _;

use fedcluster_core::{Purpose, stream};

use super::conv::{Conv, conv_backward, conv_forward};
use super::winograd::{self, backward, forward, scratch_len, wins};

fn values(len: usize, seed: u64) -> Vec<f32> {
    let mut rng = stream(seed, Purpose::ClientData, 0, 0);
    (0..len).map(|_| rng.random_range(-1.0f32..1.0)).collect()
}

/// `got` equals `want` to `tol` of the largest value of `want` (Winograd's
/// transforms round to about `1e-6` of it at these sizes for 3x3, a few
/// times more for 5x5; a wrong tap, sign or edge errs by far more).
fn assert_close(got: &[f32], want: &[f32], tol: f32, what: &str) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    let scale = want.iter().fold(1.0f32, |m, v| m.max(v.abs()));
    for (i, (a, b)) in got.iter().zip(want).enumerate() {
        assert!(
            (a - b).abs() <= tol * scale,
            "{what}[{i}]: {a} vs {b} (scale {scale})"
        );
    }
}

/// `(height, width, in, out, images, kernel, padding)`: odd and even sides,
/// a 1x1 image, more in than out and the reverse, enough tiles for several
/// chunks, and 5x5 kernels with every padding from 0 ("valid") to 4.
const SHAPES: [(usize, usize, usize, usize, usize, usize, usize); 12] = [
    (5, 7, 3, 4, 2, 3, 1),
    (4, 4, 8, 16, 3, 3, 1),
    (1, 1, 2, 3, 2, 3, 1),
    (6, 3, 5, 2, 1, 3, 1),
    (9, 9, 16, 8, 4, 3, 1),
    (16, 15, 32, 24, 3, 3, 1),
    (7, 9, 3, 4, 2, 5, 2),
    (14, 14, 32, 16, 3, 5, 2),
    (9, 8, 4, 5, 2, 5, 0),
    (14, 13, 16, 24, 3, 5, 0),
    (3, 2, 3, 2, 2, 5, 4),
    (6, 7, 5, 3, 2, 5, 1),
];

#[test]
fn winograd_equals_im2col_forward_and_backward() {
    for (seed, (h, w, cin, cout, n, k, pad)) in SHAPES.into_iter().enumerate() {
        let seed = seed as u64 * 10;
        let c = Conv::new(h, w, cin, k, pad);
        let tol = if k == 3 { 1e-5 } else { 1e-4 };
        let rows = n * c.positions();
        let x = values(n * h * w * cin, seed + 1);
        let f = values(cout * c.patch(), seed + 2);
        let d = values(rows * cout, seed + 3);
        let mut cols = vec![0.0; c.scratch_len(n)];
        let (mut z, mut gw, mut dx) = (
            vec![0.0; rows * cout],
            vec![0.0; f.len()],
            vec![0.0; x.len()],
        );
        conv_forward(&c, &x, &f, n, &mut cols, &mut z);
        conv_backward(&c, &x, &d, &f, n, 0.5, &mut cols, &mut gw, Some(&mut dx));

        let mut scratch = vec![f32::NAN; scratch_len(&c, cout, n)];
        let shape = format!("{h}x{w}x{cin} -> {cout}, {k}x{k} pad {pad}, {n} images");
        let mut got = vec![f32::NAN; z.len()];
        forward(&c, &x, &f, n, &mut scratch, &mut got);
        assert_close(&got, &z, tol, &format!("forward, {shape}"));
        let (mut got_gw, mut got_dx) = (vec![f32::NAN; gw.len()], vec![f32::NAN; dx.len()]);
        backward(
            &c,
            &x,
            &d,
            &f,
            n,
            0.5,
            &mut scratch,
            &mut got_gw,
            Some(&mut got_dx),
        );
        assert_close(&got_gw, &gw, tol, &format!("filters' gradient, {shape}"));
        assert_close(&got_dx, &dx, tol, &format!("input gradient, {shape}"));
        // Without the input gradient, the filters' gradient has the same bits.
        let mut alone = vec![f32::NAN; gw.len()];
        backward(&c, &x, &d, &f, n, 0.5, &mut scratch, &mut alone, None);
        assert!(
            alone
                .iter()
                .zip(&got_gw)
                .all(|(a, b)| a.to_bits() == b.to_bits()),
            "{shape}"
        );
    }
}

/// The same inputs give the same bits on every call, whatever the scratch
/// held before (nothing carries over between passes), for both tilings.
#[test]
fn winograd_passes_are_repeatable() {
    for k in [3, 5] {
        repeatable(Conv::new(7, 6, 16, k, k / 2));
    }
}

fn repeatable(c: Conv) {
    let (cout, n) = (8, 3);
    let x = values(n * 7 * 6 * 16, 7);
    let f = values(cout * c.patch(), 8);
    let d = values(n * c.positions() * cout, 9);
    let run = |fill: f32| {
        let mut scratch = vec![fill; scratch_len(&c, cout, n)];
        let mut z = vec![0.0; n * c.positions() * cout];
        forward(&c, &x, &f, n, &mut scratch, &mut z);
        let (mut gw, mut dx) = (vec![0.0; f.len()], vec![0.0; x.len()]);
        backward(&c, &x, &d, &f, n, 1.0, &mut scratch, &mut gw, Some(&mut dx));
        [z, gw, dx].map(|v| v.iter().map(|a| a.to_bits()).collect::<Vec<_>>())
    };
    assert_eq!(run(0.0), run(f32::NAN));
}

/// The rule: 3x3 with padding 1 and 5x5 with any padding, only from
/// [`winograd::MIN_CHANNELS`] input channels (ResNet9's first convolution
/// and the CNNs' first stay on `im2col`).
#[test]
fn winograd_is_chosen_for_wide_3x3_padding_1_and_5x5_convolutions_only() {
    let wide = winograd::MIN_CHANNELS;
    assert!(wins(&Conv::new(32, 32, 64, 3, 1), 128));
    assert!(wins(&Conv::new(4, 4, wide, 3, 1), 8));
    assert!(!wins(&Conv::new(32, 32, 3, 3, 1), 64));
    assert!(wins(&Conv::new(14, 14, 32, 5, 2), 64));
    assert!(wins(&Conv::new(14, 14, 32, 5, 0), 64));
    assert!(!wins(&Conv::new(28, 28, 1, 5, 2), 32));
    assert!(!wins(&Conv::new(32, 32, 64, 3, 0), 64));
    assert!(!wins(&Conv::new(32, 32, 64, 7, 3), 64));
}
