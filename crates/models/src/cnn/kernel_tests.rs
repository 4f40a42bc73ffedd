//! The shared convolution kernels against their plain versions: chunked
//! convolutions, pooling and the fused unpool-ReLU backward pass.

use rand::Rng as _;

use fedcluster_core::{Purpose, stream};

use super::conv::{Conv, col2im, conv_backward, conv_forward, im2col};
use super::layers::{dense, input_grad, relu_backward, weight_grad};
use super::pool::{pool_backward, pool_forward, pool_relu_backward};

fn values(len: usize, seed: u64) -> Vec<f32> {
    let mut rng = stream(seed, Purpose::ClientData, 0, 0);
    (0..len).map(|_| rng.random_range(-1.0f32..1.0)).collect()
}

fn close(got: &[f32], want: &[f32]) -> bool {
    got.iter()
        .zip(want)
        .all(|(a, b)| (a - b).abs() <= 1e-5 * (1.0 + b.abs()))
}

/// Chunked through any scratch size, a convolution equals `im2col` and one
/// product over every image, and so do the filters' gradient and the input
/// gradient; the input gradient even has the same bits (each chunk's rows
/// are the same product, and `col2im` sums them in the same order).
#[test]
fn chunked_convolutions_equal_one_product_over_every_image() {
    for (conv, out, n) in [
        (Conv::new(9, 7, 3, 3, 1), 5, 7),
        (Conv::new(6, 6, 4, 5, 2), 8, 5),
        (Conv::new(8, 8, 2, 3, 0), 17, 3),
    ] {
        let rows = n * conv.positions();
        let img = conv.in_h * conv.in_w * conv.in_c;
        let x = values(n * img, 5);
        let d = values(rows * out, 1);
        let w = values(out * conv.patch(), 2);
        let mut cols = vec![0.0; rows * conv.patch()];
        im2col(&conv, 1, &x, n, &mut cols);
        let mut z = vec![0.0; rows * out];
        dense(&mut z, &cols, &w, conv.patch(), 1.0);
        let mut gw = vec![0.0; w.len()];
        weight_grad(&mut gw, &d, &cols, rows, 0.5);
        input_grad(&mut cols, &d, &w, rows, 1.0);
        let mut dx = vec![0.0; n * img];
        col2im(&conv, 1, &cols, n, &mut dx);
        let per_image = conv.positions() * conv.patch();
        assert!(conv.scratch_len(n) >= per_image);
        for images in [1, 2, n] {
            let mut scratch = vec![0.0; images * per_image];
            let mut got_z = vec![f32::NAN; z.len()];
            conv_forward(&conv, &x, &w, n, &mut scratch, &mut got_z);
            assert!(close(&got_z, &z), "forward, chunks of {images}");
            let (mut got_gw, mut got_dx) = (vec![f32::NAN; gw.len()], vec![f32::NAN; dx.len()]);
            conv_backward(
                &conv,
                &x,
                &d,
                &w,
                n,
                0.5,
                &mut scratch,
                &mut got_gw,
                Some(&mut got_dx),
            );
            assert!(close(&got_gw, &gw), "filters' gradient, chunks of {images}");
            let same = got_dx
                .iter()
                .zip(&dx)
                .all(|(a, b)| a.to_bits() == b.to_bits());
            assert!(
                same,
                "chunks of {images} of {n} images: {got_dx:?} vs {dx:?}"
            );
        }
    }
}

/// Pooling picks the first of equal maxima and records where it is; the
/// fused backward pass has the bits of unpooling then ReLU's backward pass.
#[test]
fn pooling_matches_a_direct_loop_and_the_fused_backward_pass_the_two_passes() {
    let (h, w, c, n) = (5, 6, 3, 2);
    // Values on a coarse grid, half of them zero (ReLU outputs), many ties.
    let a: Vec<f32> = values(n * h * w * c, 3)
        .iter()
        .map(|v| (v * 2.0).round().max(0.0))
        .collect();
    let pooled_len = n * (h / 2) * (w / 2) * c;
    let (mut out, mut idx) = (vec![0.0; pooled_len], vec![0.0; pooled_len]);
    pool_forward(h, w, c, n, &a, &mut out, &mut idx);
    let mut o = 0;
    for i in 0..n {
        for py in 0..h / 2 {
            for px in 0..w / 2 {
                for ch in 0..c {
                    let at = |dy: usize, dx: usize| {
                        i * h * w * c + ((2 * py + dy) * w + 2 * px + dx) * c + ch
                    };
                    let window = [at(0, 0), at(0, 1), at(1, 0), at(1, 1)];
                    let best = window.iter().map(|&j| a[j]).fold(f32::MIN, f32::max);
                    let first = *window.iter().find(|&&j| a[j] == best).unwrap();
                    assert_eq!((out[o], idx[o] as usize), (best, first), "window {o}");
                    o += 1;
                }
            }
        }
    }
    let dout = values(pooled_len, 4);
    let mut want = vec![0.0; a.len()];
    pool_backward(&dout, &idx, &mut want);
    relu_backward(&mut want, &a);
    let mut got = vec![f32::NAN; a.len()];
    pool_relu_backward(&dout, &idx, &out, &mut got);
    let same = got
        .iter()
        .zip(&want)
        .all(|(x, y)| x.to_bits() == y.to_bits());
    assert!(same, "{got:?} vs {want:?}");
    assert!(got.iter().any(|&g| g != 0.0) && got.contains(&0.0));
}
