use super::*;
use crate::rng::{Purpose, stream};

fn shape(height: usize, width: usize, channels: usize) -> ImageShape {
    ImageShape {
        height,
        width,
        channels,
    }
}

fn augmentation(shape: ImageShape, jitter: Jitter) -> Augmentation {
    Augmentation {
        shape,
        crop_padding: 1,
        flip: true,
        jitter,
    }
}

/// A 4x4 greyscale image with values 1..=16, row by row.
fn four_by_four() -> Vec<f32> {
    (1..=16).map(|v| v as f32).collect()
}

#[test]
fn a_shift_moves_pixels_and_pads_with_zeros_and_a_flip_mirrors() {
    let aug = augmentation(shape(2, 3, 1), Jitter::default());
    let src = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0];
    let mut dst = [0.0; 6];
    aug.apply(&src, &mut dst, 0, 0, false);
    assert_eq!(dst, src);
    aug.apply(&src, &mut dst, 0, 1, false);
    assert_eq!(dst, [2.0, 3.0, 0.0, 5.0, 6.0, 0.0]);
    aug.apply(&src, &mut dst, -1, 0, false);
    assert_eq!(dst, [0.0, 0.0, 0.0, 1.0, 2.0, 3.0]);
    aug.apply(&src, &mut dst, 0, 0, true);
    assert_eq!(dst, [3.0, 2.0, 1.0, 6.0, 5.0, 4.0]);
}

#[test]
fn cutout_blacks_out_a_square_cut_at_the_edges() {
    let mut img = four_by_four();
    cutout(&mut img, shape(4, 4, 1), 2, 1, 1);
    #[rustfmt::skip]
    let want = [
        1.0, 2.0, 3.0, 4.0,
        5.0, 0.0, 0.0, 8.0,
        9.0, 0.0, 0.0, 12.0,
        13.0, 14.0, 15.0, 16.0,
    ];
    assert_eq!(img, want);
    let mut img = four_by_four();
    cutout(&mut img, shape(4, 4, 1), 3, 3, 2);
    assert_eq!(&img[..12], &four_by_four()[..12]);
    assert_eq!(&img[12..], [13.0, 14.0, 0.0, 0.0]);
    // A square larger than the image covers it, without overflow.
    let mut img = four_by_four();
    cutout(&mut img, shape(4, 4, 1), usize::MAX, 0, 0);
    assert_eq!(img, [0.0; 16]);
    // Two channels: both are cut.
    let mut img: Vec<f32> = (1..=8).map(|v| v as f32).collect();
    cutout(&mut img, shape(2, 2, 2), 1, 0, 1);
    assert_eq!(img, [1.0, 2.0, 0.0, 0.0, 5.0, 6.0, 7.0, 8.0]);
}

#[test]
fn contrast_scales_each_channel_about_its_own_mean() {
    // Channel 0: 1, 3, 5, 7 (mean 4); channel 1: 10, 10, 20, 20 (mean 15).
    let mut img = [1.0, 10.0, 3.0, 10.0, 5.0, 20.0, 7.0, 20.0];
    contrast(&mut img, 2, 0.5);
    assert_eq!(img, [2.5, 12.5, 3.5, 12.5, 4.5, 17.5, 5.5, 17.5]);
}

#[test]
fn crops_take_the_window_and_the_centre_rounds_down() {
    let s = shape(4, 4, 1);
    let mut dst = [0.0; 4];
    crop(&four_by_four(), s, (2, 2), (1, 2), &mut dst);
    assert_eq!(dst, [7.0, 8.0, 11.0, 12.0]);
    assert_eq!(centre(s, (2, 2)), (1, 1));
    assert_eq!(centre(s, (3, 3)), (0, 0), "(4 - 3) / 2 rounds down");
    // CIFAR-10 in the IFCA code: the central 24x24 of 32x32 starts at (4, 4).
    assert_eq!(centre(shape(32, 32, 3), (24, 24)), (4, 4));
    let mut dst = [0.0; 9];
    crop(&four_by_four(), s, (3, 3), centre(s, (3, 3)), &mut dst);
    assert_eq!(dst, [1.0, 2.0, 3.0, 5.0, 6.0, 7.0, 9.0, 10.0, 11.0]);
}

#[test]
fn standardisation_is_tfs_with_its_floor_on_the_deviation() {
    // 1..=16: mean 8.5, population variance (16² − 1) / 12 = 21.25.
    let mut img = four_by_four();
    standardize(&mut img);
    let sd = 21.25f64.sqrt();
    for (i, v) in img.iter().enumerate() {
        let want = ((i + 1) as f64 - 8.5) / sd;
        assert!((*v as f64 - want).abs() < 1e-6, "{i}: {v} vs {want}");
    }
    // A flat image has deviation 0 < 1/√16: it is only centred; a near-flat
    // one is divided by the floor 1/√N = 1/4, not by its deviation.
    let mut flat = [3.0f32; 16];
    standardize(&mut flat);
    assert_eq!(flat, [0.0; 16]);
    let mut near = [0.0f32; 16];
    near[0] = 0.16; // mean 0.01, deviation 0.0387 < 0.25
    standardize(&mut near);
    assert!((near[0] - 0.6).abs() < 1e-6, "{}", near[0]);
    assert!((near[1] + 0.04).abs() < 1e-6, "{}", near[1]);
}

#[test]
fn normalisation_is_per_channel() {
    let mut img = [0.5, 1.0, 0.0, 0.2];
    normalize(&mut img, &[0.5, 0.2], &[0.25, 0.4]);
    assert_eq!(img, [0.0, 2.0, -2.0, 0.0]);
}

#[test]
fn jitter_draws_nothing_when_off_and_stays_in_its_ranges() {
    let aug = augmentation(shape(4, 4, 1), Jitter::default());
    assert!(!aug.jitters());
    let mut rng = stream(3, Purpose::Client, 0, 0);
    let before = rng.clone();
    let draw = aug.jitter_draw(&mut rng);
    assert_eq!(rng, before, "no draw when every op is off");
    assert_eq!((draw.delta, draw.factor, draw.cutout_at), (0.0, 1.0, None));
    let on = augmentation(
        shape(4, 4, 1),
        Jitter {
            brightness: 0.25,
            contrast: Some((0.2, 1.8)),
            cutout: 3,
        },
    );
    assert!(on.jitters());
    for _ in 0..200 {
        let d = on.jitter_draw(&mut rng);
        assert!((-0.25..0.25).contains(&d.delta), "{d:?}");
        assert!((0.2..1.8).contains(&d.factor), "{d:?}");
        let (y, x) = d.cutout_at.expect("cutout on");
        assert!(y <= 1 && x <= 1, "the square stays inside: {d:?}");
    }
}

#[test]
fn jitter_applies_brightness_then_contrast_then_cutout() {
    let aug = augmentation(
        shape(2, 2, 1),
        Jitter {
            brightness: 1.0,
            contrast: Some((0.5, 0.5)),
            cutout: 1,
        },
    );
    let mut img = [1.0, 3.0, 5.0, 7.0];
    let draw = JitterDraw {
        delta: 1.0,
        factor: 0.5,
        cutout_at: Some((1, 0)),
    };
    aug.jitter_in_place(&mut img, draw);
    // + 1: 2, 4, 6, 8 (mean 5); contrast ½: 3.5, 4.5, 5.5, 6.5; cut (1, 0).
    assert_eq!(img, [3.5, 4.5, 0.0, 6.5]);
}

#[test]
fn the_loops_gather_each_row_with_its_crop_flip_then_jitter_draws_in_row_order() {
    use crate::model::train::minibatch::{augmentation_draw, gather_features};
    use crate::model::{Batch, Targets};
    let s = shape(4, 4, 1);
    let aug = Augmentation {
        shape: s,
        crop_padding: 1,
        flip: true,
        jitter: Jitter {
            brightness: 0.5,
            contrast: Some((0.2, 1.8)),
            cutout: 2,
        },
    };
    let x: Vec<f32> = (0..48).map(|v| v as f32 / 47.0).collect();
    let y = [0u32, 1, 2];
    let batch = Batch::new(&x, Targets::Class(&y), 16).unwrap();
    let rows = [2usize, 0, 1];
    let mut rng = stream(5, Purpose::Client, 1, 2);
    let mut gathered = Vec::new();
    gather_features(batch, &rows, Some(&aug), &mut rng, &mut gathered);
    let mut rng = stream(5, Purpose::Client, 1, 2);
    let mut want = vec![0.0; 48];
    for (i, &r) in rows.iter().enumerate() {
        let (dy, dx, flip) = augmentation_draw(&aug, &mut rng);
        let out = &mut want[i * 16..(i + 1) * 16];
        aug.apply(&x[r * 16..(r + 1) * 16], out, dy, dx, flip);
        let draw = aug.jitter_draw(&mut rng);
        aug.jitter_in_place(out, draw);
    }
    assert_eq!(gathered, want);
    // Without jitter the loops draw exactly what they drew before it existed.
    let plain = Augmentation {
        jitter: Jitter::default(),
        ..aug
    };
    let (mut a, mut b) = (
        stream(5, Purpose::Client, 1, 2),
        stream(5, Purpose::Client, 1, 2),
    );
    gather_features(batch, &rows, Some(&plain), &mut a, &mut gathered);
    for _ in rows {
        augmentation_draw(&plain, &mut b);
    }
    assert_eq!(a, b, "crop and flip draws only");
}
