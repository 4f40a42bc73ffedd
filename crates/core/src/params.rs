//! Flat parameter vectors and their math.
//!
//! Every model in fedcluster keeps its parameters in one flat `&[f32]`; aggregation,
//! distances and updates are plain functions over such slices. Reductions that
//! combine several vectors take them in the order given, so callers that pass
//! clients in id order get results that do not depend on thread scheduling.

use crate::error::{CoreError, Result};

fn check_len(what: &'static str, expected: usize, got: usize) -> Result<()> {
    if expected == got {
        Ok(())
    } else {
        Err(CoreError::Shape {
            what,
            expected,
            got,
        })
    }
}

/// `y <- y + a * x` (a product then a sum per entry; AVX2 where the CPU has
/// it, the same bits either way: [`crate::kernels::axpy`]).
pub fn axpy(a: f32, x: &[f32], y: &mut [f32]) {
    debug_assert_eq!(x.len(), y.len());
    crate::kernels::axpy(a, x, y);
}

/// `sums <- sums + w * x` in `f64` (a product then a sum per entry; AVX-512 or
/// AVX2 where the CPU has it, the same bits: [`crate::kernels::add_scaled_f64`]).
pub fn add_scaled_f64(w: f64, x: &[f32], sums: &mut [f64]) {
    crate::kernels::add_scaled_f64(w, x, sums);
}

/// `x <- a * x`.
pub fn scale(a: f32, x: &mut [f32]) {
    for xi in x {
        *xi *= a;
    }
}

/// Inner product, accumulated in `f64`.
pub fn dot(x: &[f32], y: &[f32]) -> f64 {
    debug_assert_eq!(x.len(), y.len());
    x.iter()
        .zip(y)
        .map(|(a, b)| f64::from(*a) * f64::from(*b))
        .sum()
}

/// Euclidean norm, accumulated in `f64`.
pub fn norm(x: &[f32]) -> f64 {
    dot(x, x).sqrt()
}

/// Squared Euclidean distance, accumulated in `f64`.
pub fn sq_dist(x: &[f32], y: &[f32]) -> f64 {
    debug_assert_eq!(x.len(), y.len());
    x.iter()
        .zip(y)
        .map(|(a, b)| {
            let d = f64::from(*a) - f64::from(*b);
            d * d
        })
        .sum()
}

/// Euclidean distance.
pub fn dist(x: &[f32], y: &[f32]) -> f64 {
    sq_dist(x, y).sqrt()
}

/// Whether every entry is finite; it runs over every reply of every round, so
/// it is branch-free and vectorised ([`crate::kernels::all_finite`]).
pub fn all_finite(x: &[f32]) -> bool {
    crate::kernels::all_finite(x)
}

/// Arithmetic mean of `vectors`, written into `out`.
pub fn mean_into(vectors: &[&[f32]], out: &mut [f32]) -> Result<()> {
    let weights = vec![1.0; vectors.len()];
    weighted_mean_into(vectors, &weights, out)
}

/// Weighted mean `Σ w_i v_i / Σ w_i`, accumulated in `f64` in the order given.
pub fn weighted_mean_into(vectors: &[&[f32]], weights: &[f64], out: &mut [f32]) -> Result<()> {
    if vectors.is_empty() {
        return Err(CoreError::Empty {
            what: "weighted mean",
        });
    }
    check_len("weighted mean weights", vectors.len(), weights.len())?;
    let total: f64 = weights.iter().sum();
    if total.is_nan() || total <= 0.0 || weights.iter().any(|w| *w < 0.0 || !w.is_finite()) {
        return Err(CoreError::Invalid {
            what: "weighted mean",
            why: "weights must be non-negative, finite and not all zero".into(),
        });
    }
    for v in vectors {
        check_len("weighted mean input", out.len(), v.len())?;
    }
    for (j, o) in out.iter_mut().enumerate() {
        let mut acc = 0.0f64;
        for (v, w) in vectors.iter().zip(weights) {
            acc += w * f64::from(v[j]);
        }
        *o = (acc / total) as f32;
    }
    Ok(())
}

/// Coordinate-wise trimmed mean: in each coordinate the `⌊β·n⌋` smallest and the
/// `⌊β·n⌋` largest values are dropped and the rest averaged (Yin et al. 2018,
/// the `TrMean_β` of SR-FCA, Definition 3.2). `β` must lie in `[0, 0.5)`.
pub fn trimmed_mean_into(vectors: &[&[f32]], beta: f64, out: &mut [f32]) -> Result<()> {
    if !(0.0..0.5).contains(&beta) {
        return Err(CoreError::Invalid {
            what: "trimmed mean",
            why: format!("beta must lie in [0, 0.5), got {beta}"),
        });
    }
    let n = vectors.len();
    if n == 0 {
        return Err(CoreError::Empty {
            what: "trimmed mean",
        });
    }
    for v in vectors {
        check_len("trimmed mean input", out.len(), v.len())?;
    }
    let cut = (beta * n as f64).floor() as usize;
    let mut column = vec![0.0f32; n];
    for (j, o) in out.iter_mut().enumerate() {
        for (c, v) in column.iter_mut().zip(vectors) {
            *c = v[j];
        }
        column.sort_unstable_by(f32::total_cmp);
        let kept = &column[cut..n - cut];
        let sum: f64 = kept.iter().map(|x| f64::from(*x)).sum();
        *o = (sum / kept.len() as f64) as f32;
    }
    Ok(())
}

/// Coordinate-wise median (the mean of the two middle values for an even count).
pub fn median_into(vectors: &[&[f32]], out: &mut [f32]) -> Result<()> {
    let n = vectors.len();
    if n == 0 {
        return Err(CoreError::Empty { what: "median" });
    }
    for v in vectors {
        check_len("median input", out.len(), v.len())?;
    }
    let mut column = vec![0.0f32; n];
    for (j, o) in out.iter_mut().enumerate() {
        for (c, v) in column.iter_mut().zip(vectors) {
            *c = v[j];
        }
        column.sort_unstable_by(f32::total_cmp);
        *o = if n % 2 == 1 {
            column[n / 2]
        } else {
            ((f64::from(column[n / 2 - 1]) + f64::from(column[n / 2])) / 2.0) as f32
        };
    }
    Ok(())
}

/// Index of the smallest value; ties go to the lowest index, NaN never wins.
pub fn argmin(values: &[f32]) -> Option<usize> {
    let mut best: Option<(usize, f32)> = None;
    for (i, v) in values.iter().enumerate() {
        if v.is_nan() {
            continue;
        }
        if best.is_none_or(|(_, b)| *v < b) {
            best = Some((i, *v));
        }
    }
    best.map(|(i, _)| i)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn all_finite_finds_any_non_finite_value_anywhere() {
        let finite = [
            0.0,
            -0.0,
            1.0,
            -1.0,
            f32::MAX,
            f32::MIN,
            f32::MIN_POSITIVE,
            1e-45,
        ];
        let bad = [f32::INFINITY, f32::NEG_INFINITY, f32::NAN, -f32::NAN];
        for len in [1, 63, 256, 257, 700] {
            let clean: Vec<f32> = (0..len).map(|i| finite[i % finite.len()]).collect();
            assert!(all_finite(&clean), "len {len}");
            for at in [0, len / 2, len - 1] {
                for b in bad {
                    let mut x = clean.clone();
                    x[at] = b;
                    assert!(!all_finite(&x), "len {len}, {b} at {at}");
                }
            }
        }
        assert!(all_finite(&[]));
    }

    #[test]
    fn weighted_mean_matches_hand_computation() {
        let a = [1.0, 2.0];
        let b = [3.0, 6.0];
        let mut out = [0.0; 2];
        weighted_mean_into(&[&a, &b], &[1.0, 3.0], &mut out).unwrap();
        assert_eq!(out, [2.5, 5.0]);
        mean_into(&[&a, &b], &mut out).unwrap();
        assert_eq!(out, [2.0, 4.0]);
    }

    #[test]
    fn trimmed_mean_drops_outliers() {
        let rows: Vec<[f32; 1]> = vec![[1.0], [2.0], [3.0], [4.0], [1000.0]];
        let refs: Vec<&[f32]> = rows.iter().map(|r| r.as_slice()).collect();
        let mut out = [0.0];
        trimmed_mean_into(&refs, 0.2, &mut out).unwrap();
        assert_eq!(out, [3.0]);
        trimmed_mean_into(&refs, 0.0, &mut out).unwrap();
        assert_eq!(out, [202.0]);
        assert!(trimmed_mean_into(&refs, 0.5, &mut out).is_err());
    }

    #[test]
    fn median_odd_and_even() {
        let rows: Vec<[f32; 2]> = vec![[5.0, 1.0], [1.0, 2.0], [3.0, 10.0], [4.0, 0.0]];
        let refs: Vec<&[f32]> = rows.iter().map(|r| r.as_slice()).collect();
        let mut out = [0.0; 2];
        median_into(&refs, &mut out).unwrap();
        assert_eq!(out, [3.5, 1.5]);
        median_into(&refs[..3], &mut out).unwrap();
        assert_eq!(out, [3.0, 2.0]);
    }

    #[test]
    fn distances_and_argmin() {
        assert_eq!(dist(&[0.0, 3.0], &[4.0, 0.0]), 5.0);
        assert_eq!(norm(&[3.0, 4.0]), 5.0);
        assert_eq!(argmin(&[2.0, f32::NAN, 1.0, 1.0]), Some(2));
        assert_eq!(argmin(&[]), None);
        let mut y = [1.0, 1.0];
        axpy(2.0, &[1.0, -1.0], &mut y);
        assert_eq!(y, [3.0, -1.0]);
    }

    #[test]
    fn aggregations_reject_bad_input() {
        let mut out = [0.0; 2];
        assert!(mean_into(&[], &mut out).is_err());
        assert!(mean_into(&[&[1.0]], &mut out).is_err());
        assert!(weighted_mean_into(&[&[1.0, 1.0]], &[0.0], &mut out).is_err());
    }
}
