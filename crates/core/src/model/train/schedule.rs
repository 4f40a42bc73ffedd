//! Step-size schedules by step, for the recipes whose step size changes
//! within a local training: the SR-FCA public code's triangular schedule
//! (`cifar_code/cifar_trainers.py`: `LambdaLR` over
//! `np.interp(arange(...), [0, 5 · iters_per_epoch, epochs · iters_per_epoch],
//! [0, 1, 0])`). The per-round decay `lr · lr_decay^round` (IFCA's ×0.99 per
//! round) is the optimizer's `lr_decay`, in
//! `fedcluster_algorithms::common::optimizer`.

/// A linear warm-up from 0 to the full step size over `warmup` steps, then a
/// linear decay to 0 at step `total`, and 0 after it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Triangular {
    /// Steps of the warm-up (the peak is at this step).
    pub warmup: usize,
    /// The step at which the step size reaches 0 again (`> warmup`).
    pub total: usize,
}

impl Triangular {
    /// The SR-FCA code's schedule for `iterations` steps of
    /// `iters_per_epoch` each epoch: warm-up over 5 epochs, down to 0 after the
    /// last whole epoch (`epochs = iterations // iters_per_epoch`). `None`
    /// when that leaves no step after the warm-up (fewer than 6 epochs) or
    /// `iters_per_epoch` is 0.
    pub fn srfca(iterations: usize, iters_per_epoch: usize) -> Option<Self> {
        let epochs = iterations.checked_div(iters_per_epoch)?;
        let schedule = Self {
            warmup: 5 * iters_per_epoch,
            total: epochs * iters_per_epoch,
        };
        (schedule.total > schedule.warmup).then_some(schedule)
    }

    /// The factor of the step size at step `step` (from 0: the first
    /// optimizer step is step 0, as `LambdaLR` applies `schedule[0]` before
    /// any `scheduler.step()`): `np.interp(step, [0, warmup, total], [0, 1, 0])`.
    pub fn factor(&self, step: usize) -> f32 {
        let (s, w, t) = (step as f64, self.warmup as f64, self.total as f64);
        let f = if step >= self.total {
            0.0
        } else if step <= self.warmup {
            if self.warmup == 0 { 1.0 } else { s / w }
        } else {
            (t - s) / (t - w)
        };
        f as f32
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `np.interp(x, [0, w, t], [0, 1, 0])`, written out.
    fn interp(x: f64, w: f64, t: f64) -> f64 {
        if x <= w {
            x / w
        } else if x <= t {
            1.0 - (x - w) / (t - w)
        } else {
            0.0
        }
    }

    #[test]
    fn the_triangle_rises_over_the_warm_up_and_falls_to_zero() {
        // The SR-FCA client trainer: 2400 iterations, 50000 // (100 · 16) = 31
        // per epoch, so 77 epochs: peak at 155, zero at 2387.
        let s = Triangular::srfca(2400, 31).unwrap();
        assert_eq!(
            s,
            Triangular {
                warmup: 155,
                total: 2387
            }
        );
        assert_eq!(
            s.factor(0),
            0.0,
            "LambdaLR's first step uses schedule[0] = 0"
        );
        assert_eq!(s.factor(155), 1.0);
        assert_eq!(s.factor(2387), 0.0);
        assert_eq!(s.factor(2399), 0.0, "np.interp holds the last value");
        for step in [1, 77, 154, 156, 1000, 2386] {
            let want = interp(step as f64, 155.0, 2387.0);
            assert!(
                (s.factor(step) as f64 - want).abs() < 1e-7,
                "step {step}: {} vs {want}",
                s.factor(step)
            );
        }
        assert_eq!(Triangular::srfca(100, 31), None, "3 epochs: no decay");
        assert_eq!(Triangular::srfca(100, 0), None);
        let flat_start = Triangular {
            warmup: 0,
            total: 4,
        };
        assert_eq!(
            (0..5).map(|s| flat_start.factor(s)).collect::<Vec<_>>(),
            [1.0, 0.75, 0.5, 0.25, 0.0]
        );
    }
}
