//! A client's E-step for a mixture of `K` shared models (FedEM, FedRC): each
//! sample's loss under every component, the responsibilities
//! `q_ik ∝ π_k exp(−ℓ_ik) / c_ik` (a log-sum-exp softmax; `c_ik = 1` for
//! FedEM, FedRC's component label prior `P_k(y_i)`), the new mixture weights
//! `π_k = mean_i q_ik`, and for FedRC the soft label counts per component
//! that the server turns into `P_k(y)` ([`LabelSums`]).

use serde::{Deserialize, Serialize};

use fedcluster_core::{Batch, Model, Workspace};

/// The floor of every `P_k(y)` before normalisation (FedRC's public code,
/// `run_experiment.py`: `1e-8`).
pub const LABEL_FLOOR: f64 = 1e-8;

/// Each sample's loss under each of the `k` models held back to back in
/// `models`: `n × k`, row-major.
pub fn sample_losses(
    model: &dyn Model,
    models: &[f32],
    k: usize,
    data: Batch<'_>,
    ws: &mut Workspace,
) -> Vec<f64> {
    let mut losses = vec![0.0f64; data.len() * k];
    for (i, row) in losses.chunks_exact_mut(k.max(1)).enumerate() {
        model.losses(models, data.rows(i, i + 1), row, ws);
    }
    losses
}

/// One E-step's outcome.
#[derive(Debug, Clone, PartialEq)]
pub struct EStep {
    /// Responsibilities `q_ik`, `n × k` row-major, each row summing to 1.
    pub q: Vec<f64>,
    /// The mixture's mean negative log-likelihood before the step,
    /// `−mean_i ln Σ_k π_k exp(−ℓ_ik)` (non-finite if a loss was).
    pub nll: f64,
}

/// The E-step from `losses` (`n × k`) and the weights `π` (`k`), with
/// `log_prior(i, k)`, the `ln c_ik` each sample's score is divided by (0 for
/// plain EM). A component of weight 0 gets no responsibility.
pub fn responsibilities(
    losses: &[f64],
    weights: &[f64],
    log_prior: impl Fn(usize, usize) -> f64,
) -> EStep {
    let k = weights.len();
    let log_pi: Vec<f64> = weights.iter().map(|w| w.ln()).collect();
    let mut q = vec![0.0f64; losses.len()];
    let mut nll = 0.0f64;
    let rows = losses.len() / k.max(1);
    for (i, (row, out)) in losses
        .chunks_exact(k.max(1))
        .zip(q.chunks_exact_mut(k.max(1)))
        .enumerate()
    {
        nll -= log_sum_exp(row.iter().zip(&log_pi).map(|(l, lp)| lp - l));
        for (j, (o, (l, lp))) in out.iter_mut().zip(row.iter().zip(&log_pi)).enumerate() {
            *o = lp - l - log_prior(i, j);
        }
        let norm = log_sum_exp(out.iter().copied());
        out.iter_mut().for_each(|o| *o = (*o - norm).exp());
    }
    EStep {
        q,
        nll: nll / rows.max(1) as f64,
    }
}

/// `ln Σ exp(a)`, shifted by the largest term; `−∞` for no finite term.
fn log_sum_exp(values: impl Iterator<Item = f64> + Clone) -> f64 {
    let top = values.clone().fold(f64::NEG_INFINITY, f64::max);
    if top == f64::NEG_INFINITY {
        return top;
    }
    top + values.map(|v| (v - top).exp()).sum::<f64>().ln()
}

/// The M-step of the weights: `π_k = mean_i q_ik`.
pub fn mixture_weights(q: &[f64], k: usize) -> Vec<f64> {
    let mut pi = vec![0.0f64; k];
    for row in q.chunks_exact(k.max(1)) {
        pi.iter_mut().zip(row).for_each(|(p, v)| *p += v);
    }
    let n = (q.len() / k.max(1)).max(1) as f64;
    pi.iter_mut().for_each(|p| *p /= n);
    pi
}

/// Component `j`'s column of `q`, as training weights.
pub fn column(q: &[f64], k: usize, j: usize) -> Vec<f32> {
    q.chunks_exact(k.max(1)).map(|row| row[j] as f32).collect()
}

/// The soft label counts `Σ_{i: y_i = c} q_ik`, `k × C` row-major, `C` the
/// largest label plus one.
pub fn label_mass(q: &[f64], k: usize, labels: &[u32]) -> Vec<f64> {
    let classes = labels.iter().max().map_or(0, |c| *c as usize + 1);
    let mut mass = vec![0.0f64; k * classes];
    for (row, &y) in q.chunks_exact(k.max(1)).zip(labels) {
        for (j, v) in row.iter().enumerate() {
            mass[j * classes + y as usize] += v;
        }
    }
    mass
}

/// The server's running sums of the clients' label counts, `k × C`, `C`
/// growing to the most classes a reply holds.
#[derive(Debug, Default, Clone, Serialize, Deserialize)]
pub struct LabelSums {
    k: usize,
    classes: usize,
    sums: Vec<f64>,
}

impl LabelSums {
    /// Starts a round for `k` components.
    pub fn reset(&mut self, k: usize) {
        *self = LabelSums {
            k,
            classes: 0,
            sums: Vec::new(),
        };
    }

    /// Adds one reply's `k × C` counts; `false` (nothing added) when its
    /// length is not a multiple of `k`.
    pub fn add(&mut self, mass: &[f64]) -> bool {
        let k = self.k.max(1);
        if !mass.len().is_multiple_of(k) {
            return false;
        }
        let classes = mass.len() / k;
        if classes > self.classes {
            let mut grown = vec![0.0f64; k * classes];
            for (j, row) in self.sums.chunks_exact(self.classes.max(1)).enumerate() {
                grown[j * classes..j * classes + row.len()].copy_from_slice(row);
            }
            self.sums = grown;
            self.classes = classes;
        }
        for (j, row) in mass.chunks_exact(classes.max(1)).enumerate() {
            let at = j * self.classes;
            self.sums[at..at + row.len()]
                .iter_mut()
                .zip(row)
                .for_each(|(s, m)| *s += m);
        }
        true
    }

    /// `P_k(c)`: each component's counts floored at [`LABEL_FLOOR`] and
    /// normalised; empty when no reply held a label.
    pub fn prior(&self) -> Vec<f64> {
        let mut prior: Vec<f64> = self.sums.iter().map(|s| s.max(LABEL_FLOOR)).collect();
        for row in prior.chunks_exact_mut(self.classes.max(1)) {
            let total: f64 = row.iter().sum();
            row.iter_mut().for_each(|p| *p /= total);
        }
        prior
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn responsibilities_are_the_weighted_softmax_of_minus_the_losses() {
        // Two samples, two components, weights (0.25, 0.75).
        let losses = [0.0, 1.0, 2.0, 0.5];
        let e = responsibilities(&losses, &[0.25, 0.75], |_, _| 0.0);
        let a = 0.25f64;
        let b = 0.75 * (-1.0f64).exp();
        assert!((e.q[0] - a / (a + b)).abs() < 1e-12);
        assert!((e.q[0] + e.q[1] - 1.0).abs() < 1e-12);
        let c = 0.25 * (-2.0f64).exp();
        let d = 0.75 * (-0.5f64).exp();
        assert!((e.q[2] - c / (c + d)).abs() < 1e-12);
        let nll = -((a + b).ln() + (c + d).ln()) / 2.0;
        assert!((e.nll - nll).abs() < 1e-12);
        let pi = mixture_weights(&e.q, 2);
        assert!((pi[0] - (e.q[0] + e.q[2]) / 2.0).abs() < 1e-15);
        assert_eq!(column(&e.q, 2, 1), vec![e.q[1] as f32, e.q[3] as f32]);
        // A prior divides the score: ln c = ln 2 on component 0 halves it.
        let halved = responsibilities(
            &losses,
            &[0.25, 0.75],
            |_, j| {
                if j == 0 { 2f64.ln() } else { 0.0 }
            },
        );
        assert!((halved.q[0] - a / 2.0 / (a / 2.0 + b)).abs() < 1e-12);
        assert_eq!(halved.nll, e.nll, "the likelihood ignores the prior");
        // A weightless component gets nothing; huge losses stay finite.
        let none = responsibilities(&[1e6, 1e6 + 1.0], &[1.0, 0.0], |_, _| 0.0);
        assert_eq!(none.q, vec![1.0, 0.0]);
        assert!((none.nll - 1e6).abs() < 1e-6);
    }

    #[test]
    fn label_sums_grow_to_the_most_classes_and_floor_the_prior() {
        let q = [1.0, 0.0, 0.25, 0.75];
        assert_eq!(label_mass(&q, 2, &[0, 1]), vec![1.0, 0.25, 0.0, 0.75]);
        let mut sums = LabelSums::default();
        sums.reset(2);
        assert!(sums.prior().is_empty());
        assert!(sums.add(&[1.0, 0.0]));
        assert!(sums.add(&[1.0, 0.25, 2.0, 0.0, 0.75, 1.0]));
        assert!(!sums.add(&[1.0, 2.0, 3.0]), "not a multiple of k");
        let prior = sums.prior();
        let total0 = 2.25 + 2.0;
        assert!((prior[0] - 2.0 / total0).abs() < 1e-12);
        assert!((prior[1] - 0.25 / total0).abs() < 1e-12);
        assert!((prior[3] - LABEL_FLOOR / (1.75 + LABEL_FLOOR)).abs() < 1e-15);
        assert!((prior[3..].iter().sum::<f64>() - 1.0).abs() < 1e-12);
    }
}
