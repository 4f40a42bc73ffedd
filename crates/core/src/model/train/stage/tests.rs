use super::*;
use crate::model::train::Jitter;
use crate::rng::{Purpose, stream};

fn grey(height: usize, width: usize) -> ImageShape {
    ImageShape {
        height,
        width,
        channels: 1,
    }
}

/// A 4x4 greyscale image with values 1..=16, row by row.
fn four_by_four() -> Vec<f32> {
    (1..=16).map(|v| v as f32).collect()
}

fn stage(size: (usize, usize), standardize: bool) -> InputStage {
    InputStage {
        raw: grey(4, 4),
        size,
        standardize,
        normalize: None,
    }
}

fn mean_and_std(v: &[f32]) -> (f64, f64) {
    let n = v.len() as f64;
    let mean = v.iter().map(|&x| x as f64).sum::<f64>() / n;
    let var = v.iter().map(|&x| (x as f64 - mean).powi(2)).sum::<f64>() / n;
    (mean, var.sqrt())
}

#[test]
fn evaluation_takes_the_central_window_then_standardises_it() {
    let mut out = [0.0; 4];
    stage((2, 2), false).eval(&four_by_four(), &mut out);
    assert_eq!(out, [6.0, 7.0, 10.0, 11.0]);
    stage((2, 2), true).eval(&four_by_four(), &mut out);
    // The window 6, 7, 10, 11: mean 8.5, std √4.25.
    for (got, v) in out.iter().zip([6.0f64, 7.0, 10.0, 11.0]) {
        let want = (v - 8.5) / 4.25f64.sqrt();
        assert!((*got as f64 - want).abs() < 1e-6, "{got} vs {want}");
    }
    let (mean, std) = mean_and_std(&out);
    assert!(
        mean.abs() < 1e-7 && (std - 1.0).abs() < 1e-6,
        "{mean} {std}"
    );
    // Two images back to back, the whole image kept.
    let mut all = Vec::new();
    let two: Vec<f32> = four_by_four().into_iter().chain(four_by_four()).collect();
    stage((4, 4), true).eval_all(&two, &mut all);
    assert_eq!(all.len(), 32);
    for image in all.chunks_exact(16) {
        let (mean, std) = mean_and_std(image);
        assert!(
            mean.abs() < 1e-6 && (std - 1.0).abs() < 1e-6,
            "{mean} {std}"
        );
    }
}

#[test]
fn normalisation_follows_the_standardisation_per_channel() {
    let rgb = ImageShape {
        height: 1,
        width: 2,
        channels: 2,
    };
    let norm = Normalize::new(&[1.0, 2.0], &[2.0, 4.0]).unwrap();
    let s = InputStage {
        raw: rgb,
        size: (1, 2),
        standardize: false,
        normalize: Some(norm),
    };
    let mut out = [0.0; 4];
    s.eval(&[3.0, 10.0, 5.0, 2.0], &mut out);
    assert_eq!(out, [1.0, 2.0, 2.0, 0.0]);
    for (mean, std) in [
        (&[0.0][..], &[0.0][..]),
        (&[0.0], &[-1.0]),
        (&[0.0, 1.0], &[1.0]),
        (&[f32::NAN], &[1.0]),
        (&[], &[]),
        (&[0.0; 5], &[1.0; 5]),
    ] {
        assert_eq!(Normalize::new(mean, std), None, "{mean:?} {std:?}");
    }
}

#[test]
fn training_crops_a_uniform_window_and_jitters_only_the_window() {
    let s = stage((2, 2), false);
    let src = four_by_four();
    let mut seen = std::collections::BTreeSet::new();
    let (mut raw, mut out) = (Vec::new(), Vec::new());
    for seed in 0..200 {
        let mut rng = stream(seed, Purpose::Client, 0, 0);
        out.clear();
        s.train(&src, None, &mut rng, &mut raw, &mut out);
        // The same draws by hand: the corner, uniform over 3x3 windows.
        let mut again = stream(seed, Purpose::Client, 0, 0);
        let at = (again.random_range(0..=2), again.random_range(0..=2));
        let mut want = [0.0; 4];
        crop(&src, s.raw, s.size, at, &mut want);
        assert_eq!(out, want, "seed {seed}");
        seen.insert(at);
    }
    assert_eq!(seen.len(), 9, "every window is drawn");

    // Contrast 2 (no draw: lower = upper) about the window's own mean, not
    // the whole image's (8.5): the window 1, 2, 5, 6 (mean 3.5) becomes
    // -1.5, 0.5, 6.5, 8.5 (a window's first value ends 2.5 below itself).
    let aug = Augmentation {
        shape: s.raw,
        crop_padding: 0,
        flip: false,
        jitter: Jitter {
            contrast: Some((2.0, 2.0)),
            ..Jitter::default()
        },
    };
    let mut rng = stream(7, Purpose::Client, 0, 0);
    loop {
        out.clear();
        s.train(&src, Some(&aug), &mut rng, &mut raw, &mut out);
        if out[0] == -1.5 {
            break;
        }
    }
    assert_eq!(out, [-1.5, 0.5, 6.5, 8.5]);
}

#[test]
fn bad_stages_name_their_key() {
    assert_eq!(stage((2, 2), true).check(), Ok(()));
    assert_eq!(stage((4, 4), true).check(), Ok(()));
    for size in [(0, 2), (5, 2), (2, 5)] {
        assert_eq!(stage(size, true).check().unwrap_err().0, "crop", "{size:?}");
    }
    let mut s = stage((2, 2), true);
    s.normalize = Normalize::new(&[0.5; 3], &[0.2; 3]);
    let (key, why) = s.check().unwrap_err();
    assert_eq!(key, "normalize");
    assert!(why.contains("3 channel(s)"), "{why}");
}

/// IFCA's jitter (`random_brightness(max_delta)`, `random_contrast(lower,
/// upper)`) on the window, with `brightness` and `contrast` the only jitter.
fn ifca_jitter(raw: ImageShape, brightness: f32, contrast: Option<(f32, f32)>) -> Augmentation {
    Augmentation {
        shape: raw,
        crop_padding: 0,
        flip: false,
        jitter: Jitter {
            brightness,
            contrast,
            cutout: 0,
        },
    }
}

#[test]
fn training_jitters_the_window_by_tfs_formulas_with_draws_after_the_corner() {
    let s = stage((2, 2), false);
    let src = four_by_four();
    let aug = ifca_jitter(s.raw, 0.5, Some((0.2, 1.8)));
    let (mut raw, mut out) = (Vec::new(), Vec::new());
    let mut factors = Vec::new();
    for seed in 0..50 {
        let mut rng = stream(seed, Purpose::Client, 3, 1);
        out.clear();
        s.train(&src, Some(&aug), &mut rng, &mut raw, &mut out);
        // The draws by hand, in the stage's order: the corner, then
        // δ ~ U[−0.5, 0.5) and f ~ U[0.2, 1.8).
        let mut again = stream(seed, Purpose::Client, 3, 1);
        let at = (again.random_range(0..=2), again.random_range(0..=2));
        let delta: f32 = again.random_range(-0.5..0.5);
        let factor: f32 = again.random_range(0.2..1.8);
        let mut window = [0.0; 4];
        crop(&src, s.raw, s.size, at, &mut window);
        // TF: x + δ, then (x − m)·f + m with m the shifted window's mean.
        let m = window.iter().sum::<f32>() / 4.0 + delta;
        for (got, v) in out.iter().zip(window) {
            let want = (v + delta - m) * factor + m;
            assert!((got - want).abs() < 1e-5, "seed {seed}: {got} vs {want}");
        }
        assert_ne!(out, window, "seed {seed}: the jitter changed nothing");
        factors.push(factor);
    }
    assert!(factors.iter().any(|f| *f < 1.0) && factors.iter().any(|f| *f > 1.0));
}

#[test]
fn the_standardisation_cancels_the_brightness_and_evaluation_takes_no_jitter() {
    // An RGB window whose channels differ, so the contrast (about each
    // channel's mean) survives the standardisation over the whole window.
    let raw = ImageShape {
        height: 3,
        width: 3,
        channels: 3,
    };
    let s = InputStage {
        raw,
        size: (2, 2),
        standardize: true,
        normalize: None,
    };
    let src: Vec<f32> = (0..27).map(|i| ((i * 7) % 11) as f32 / 10.0).collect();
    let run = |aug: Option<&Augmentation>, seed: u64| {
        let (mut raw_scratch, mut out) = (Vec::new(), Vec::new());
        let mut rng = stream(seed, Purpose::Client, 0, 0);
        s.train(&src, aug, &mut rng, &mut raw_scratch, &mut out);
        out
    };
    let bright = ifca_jitter(raw, 63.0 / 255.0, None);
    let both = ifca_jitter(raw, 63.0 / 255.0, Some((0.2, 1.8)));
    let mut contrast_told = false;
    for seed in 0..20 {
        // Same corner draws: the brightness is the last draw, and its shift is
        // undone by the mean subtraction (up to rounding).
        let (plain, shifted) = (run(None, seed), run(Some(&bright), seed));
        for (a, b) in plain.iter().zip(&shifted) {
            assert!((a - b).abs() < 1e-5, "seed {seed}: {a} vs {b}");
        }
        let jittered = run(Some(&both), seed);
        contrast_told |= plain
            .iter()
            .zip(&jittered)
            .any(|(a, b)| (a - b).abs() > 1e-3);
    }
    assert!(contrast_told, "the contrast never showed through");
    // Evaluation: the central window, standardised, whatever training draws.
    let mut eval = vec![0.0; s.net_dim()];
    s.eval(&src, &mut eval);
    let mut want = vec![0.0; s.net_dim()];
    crop(&src, raw, s.size, (0, 0), &mut want);
    augment::standardize(&mut want);
    assert_eq!(eval, want);
}
