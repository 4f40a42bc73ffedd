//! The clients' side of federated moment descent: residuals `ε = −∇ℓ` of single
//! points, the pair moments `(1/P) Σ a_j b_jᵀ` of the subspace step, and the
//! anchor's moment-descent step (Phase 1, steps 9-15).

use std::ops::Range;

use fedcluster_core::{Batch, Model, Workspace};

use super::subspace::leading_direction;

/// The points an anchor uses at `iteration`: all of them when data are reused,
/// otherwise its `iteration`-th share of `⌊n / T⌋` fresh points (`None` when
/// it holds fewer than `2T` points).
pub fn anchor_points(
    n: usize,
    iteration: usize,
    fresh_over: Option<usize>,
) -> Option<Range<usize>> {
    match fresh_over {
        None => Some(0..n),
        Some(iterations) => {
            let per = n / iterations;
            (per >= 2).then(|| per * iteration..per * (iteration + 1))
        }
    }
}

/// `ε_j = −∇ℓ(θ; x_j, y_j)` for the points `points` of `batch`, written row by
/// row (`d` values each) into `out`.
pub fn residuals(
    model: &dyn Model,
    theta: &[f32],
    batch: Batch<'_>,
    points: Range<usize>,
    out: &mut [f32],
    ws: &mut Workspace,
) {
    let d = theta.len();
    for (j, row) in points.zip(out.chunks_exact_mut(d)) {
        model.loss_grad(theta, batch.rows(j, j + 1), row, ws);
        row.iter_mut().for_each(|v| *v = -*v);
    }
}

/// `1 / (n (n − 1))`, the weight of one ordered pair of distinct points, and
/// `Σ_j ε_j` (in `f64`); `None` for fewer than two points.
fn pair_weight_and_sum(eps: &[f32], d: usize) -> Option<(f64, Vec<f64>)> {
    let n = eps.len() / d;
    if n < 2 {
        return None;
    }
    let mut sum = vec![0.0f64; d];
    for row in eps.chunks_exact(d) {
        sum.iter_mut()
            .zip(row)
            .for_each(|(s, v)| *s += f64::from(*v));
    }
    Some((1.0 / (n * (n - 1)) as f64, sum))
}

/// Adds the pair moment `M = (1/(n(n−1))) Σ_{j≠j'} ε_j ε_{j'}ᵀ` (`d x d`,
/// row-major) of the rows of `eps` to `out`: `(S Sᵀ − Σ_j ε_j ε_jᵀ)/(n(n−1))`
/// with `S = Σ_j ε_j`. Every ordered pair of distinct points is an independent
/// pair `(ε, ε̃)` of the paper's `Y` and `A`, so `M` is unbiased for
/// `E[ε] E[ε]ᵀ` and uses each point `n − 1` times (the box pairs points up
/// once; averaging over all pairs of the same points only lowers the variance).
pub fn add_moment(eps: &[f32], d: usize, out: &mut [f32]) {
    let Some((w, sum)) = pair_weight_and_sum(eps, d) else {
        return;
    };
    // Row by row of `M`, each entry `S_r S_c − Σ_j ε_jr ε_jc` in that order
    // (one row buffer, not a `d x d` matrix).
    let mut m = vec![0.0f64; d];
    for (r, orow) in out.chunks_exact_mut(d).enumerate() {
        m.iter_mut().zip(&sum).for_each(|(v, s)| *v = sum[r] * s);
        for row in eps.chunks_exact(d) {
            let a = f64::from(row[r]);
            m.iter_mut()
                .zip(row)
                .for_each(|(v, &b)| *v -= a * f64::from(b));
        }
        orow.iter_mut()
            .zip(&m)
            .for_each(|(o, v)| *o += (w * v) as f32);
    }
}

/// Adds `M Q` to `out` (`d x k`, row-major like `q`) for the pair moment `M`
/// of [`add_moment`], without forming `M`: `(S (SᵀQ) − Σ_j ε_j (ε_jᵀ Q))/(n(n−1))`.
/// `M` is symmetric, so this is also Algorithm 3's `Mᵀ Q`.
pub fn add_moment_product(eps: &[f32], d: usize, q: &[f32], k: usize, out: &mut [f32]) {
    let Some((w, sum)) = pair_weight_and_sum(eps, d) else {
        return;
    };
    let project = |v: &mut dyn Iterator<Item = f64>| -> Vec<f64> {
        let mut p = vec![0.0f64; k];
        for (x, qrow) in v.zip(q.chunks_exact(k)) {
            p.iter_mut()
                .zip(qrow)
                .for_each(|(p, &qv)| *p += x * f64::from(qv));
        }
        p
    };
    let sq = project(&mut sum.iter().copied());
    let mut acc: Vec<f64> = Vec::with_capacity(d * k);
    for s in &sum {
        acc.extend(sq.iter().map(|p| s * p));
    }
    for row in eps.chunks_exact(d) {
        let rq = project(&mut row.iter().map(|v| f64::from(*v)));
        for (arow, &a) in acc.chunks_exact_mut(k).zip(row) {
            let a = f64::from(a);
            arow.iter_mut().zip(&rq).for_each(|(v, p)| *v -= a * p);
        }
    }
    out.iter_mut()
        .zip(&acc)
        .for_each(|(o, v)| *o += (w * v) as f32);
}

/// The constants of an anchor's step.
#[derive(Debug, Clone, Copy, serde::Serialize, serde::Deserialize)]
pub struct StepRule {
    /// Power-iteration steps `T₂`.
    pub power_steps: usize,
    /// `α / (2β²)`: the step is `η = scale · σ̂`.
    pub scale: f64,
    /// Stop when `σ̂ <=` this (`ε α Δ / √2`).
    pub stop_below: f64,
}

/// What an anchor's step did.
#[derive(Debug, Clone, PartialEq)]
pub struct AnchorMove {
    /// `σ̂_{i,t}`.
    pub sigma: f64,
    /// Whether the anchor stopped instead of moving.
    pub stopped: bool,
}

/// Phase 1, steps 11-15 at one anchor: projects its residuals `eps` onto the
/// basis `u` (`d x k`), forms the `k x k` pair moment `A` of the projections
/// (eq. 2, over all pairs of distinct points as in [`add_moment`]), finds `β̂`
/// and `σ̂² = β̂ᵀAβ̂` by power iteration on `A Aᵀ`, and moves `theta` by `η r`
/// with `r = U β̂`, `η = α σ̂ / (2β²)`, unless `σ̂` is below the stopping level.
///
/// The paper leaves the sign of the eigenvector `β̂` open while its proof
/// (Claim 1) needs `r` to point towards the truth; `β̂` is oriented to agree with
/// the mean projected residual `Uᵀ ε̄`, whose expectation is `Uᵀ ∇²L (θ* − θ)`.
pub fn anchor_step(
    theta: &mut [f32],
    u: &[f32],
    k: usize,
    eps: &[f32],
    rule: StepRule,
) -> AnchorMove {
    let d = theta.len();
    let projected: Vec<f32> = eps
        .chunks_exact(d)
        .flat_map(|row| {
            let mut p = vec![0.0f64; k];
            for (&x, urow) in row.iter().zip(u.chunks_exact(k)) {
                p.iter_mut()
                    .zip(urow)
                    .for_each(|(p, &uv)| *p += f64::from(x) * f64::from(uv));
            }
            p.into_iter().map(|v| v as f32)
        })
        .collect();
    let mut a32 = vec![0.0f32; k * k];
    add_moment(&projected, k, &mut a32);
    let a: Vec<f64> = a32.iter().map(|v| f64::from(*v)).collect();
    let mut mean = vec![0.0f64; k];
    for row in projected.chunks_exact(k) {
        mean.iter_mut()
            .zip(row)
            .for_each(|(m, v)| *m += f64::from(*v));
    }
    let (mut beta, sigma2) = leading_direction(&a, k, rule.power_steps);
    let sigma = sigma2.max(0.0).sqrt();
    if beta.iter().zip(&mean).map(|(b, m)| b * m).sum::<f64>() < 0.0 {
        beta.iter_mut().for_each(|b| *b = -*b);
    }
    if sigma <= rule.stop_below {
        return AnchorMove {
            sigma,
            stopped: true,
        };
    }
    let eta = rule.scale * sigma;
    for (t, urow) in theta.iter_mut().zip(u.chunks_exact(k)) {
        let r: f64 = urow
            .iter()
            .zip(&beta)
            .map(|(uv, b)| f64::from(*uv) * b)
            .sum();
        *t += (eta * r) as f32;
    }
    AnchorMove {
        sigma,
        stopped: false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fresh_points_are_disjoint_shares() {
        assert_eq!(anchor_points(50, 3, None), Some(0..50));
        assert_eq!(anchor_points(50, 0, Some(5)), Some(0..10));
        assert_eq!(anchor_points(50, 4, Some(5)), Some(40..50));
        assert_eq!(anchor_points(9, 0, Some(5)), None);
    }

    #[test]
    fn the_moment_averages_all_pairs_of_distinct_points() {
        // Three points in d = 2; M = (1/6) Σ_{j≠j'} ε_j ε_j'ᵀ, summed by hand.
        let eps = [1.0, 2.0, 0.0, -1.0, 3.0, 1.0];
        let rows: Vec<&[f32]> = eps.chunks_exact(2).collect();
        let mut want = [0.0f32; 4];
        for (j, a) in rows.iter().enumerate() {
            for (l, b) in rows.iter().enumerate() {
                if j != l {
                    for r in 0..2 {
                        for c in 0..2 {
                            want[r * 2 + c] += a[r] * b[c] / 6.0;
                        }
                    }
                }
            }
        }
        let mut got = [0.0f32; 4];
        add_moment(&eps, 2, &mut got);
        for (g, w) in got.iter().zip(want) {
            assert!((g - w).abs() < 1e-6, "{got:?} vs {want:?}");
        }
        // M Q without forming M.
        let q = [1.0, 0.5, -2.0, 1.0];
        let mut mq = [0.0f32; 4];
        add_moment_product(&eps, 2, &q, 2, &mut mq);
        for r in 0..2 {
            for c in 0..2 {
                let w: f32 = (0..2).map(|i| want[r * 2 + i] * q[i * 2 + c]).sum();
                assert!((mq[r * 2 + c] - w).abs() < 1e-6, "{mq:?}");
            }
        }
        // One point has no pair: nothing is added.
        let mut none = [0.0f32; 4];
        add_moment(&eps[..2], 2, &mut none);
        assert_eq!(none, [0.0; 4]);
    }

    #[test]
    fn an_anchor_moves_halfway_towards_a_noiseless_truth() {
        // Residuals all equal to s = H(θ* − θ) with H = 2I: A = (Uᵀs)(Uᵀs)ᵀ,
        // σ̂ = |Uᵀs|, and with α = β = 2 the step is σ̂/4 along U Uᵀ s.
        let theta_star = [1.0f32, -1.0, 0.5];
        let mut theta = [0.0f32; 3];
        let s: Vec<f32> = theta_star.iter().map(|t| 2.0 * t).collect();
        let eps: Vec<f32> = (0..4).flat_map(|_| s.clone()).collect();
        let u = [1.0, 0.0, 0.0, 1.0, 0.0, 0.0]; // spans e1, e2 only
        let rule = StepRule {
            power_steps: 50,
            scale: 2.0 / (2.0 * 4.0),
            stop_below: 0.01,
        };
        let mv = anchor_step(&mut theta, &u, 2, &eps, rule);
        assert!(!mv.stopped);
        let sigma_want = 8.0f64.sqrt(); // the projection drops e3
        assert!((mv.sigma - sigma_want).abs() < 1e-6, "{mv:?}");
        assert!(
            (theta[0] - 0.5).abs() < 1e-6 && (theta[1] + 0.5).abs() < 1e-6,
            "{theta:?}"
        );
        assert_eq!(theta[2], 0.0);
        // Already at the truth: σ̂ = 0 and the anchor stops.
        let mut at = theta_star;
        let zeros = vec![0.0f32; 12];
        assert!(anchor_step(&mut at, &u, 2, &zeros, rule).stopped);
        assert_eq!(at, theta_star);
    }
}
