//! `fedcluster reproduce NAME`: one command per paper experiment, writing a
//! report with the paper's result beside ours.

pub mod ifca_success;
pub mod mixed_regression;
pub mod mixed_regression_mnist;
pub mod mnist;
pub mod srfca_mnist;

/// Reproductions that `fedcluster reproduce` knows, with a one-line description.
pub const EXPERIMENTS: &[(&str, &str)] = &[
    (
        "ifca-synthetic-success",
        "IFCA paper Fig. 3(a): success probability over (sigma, R), m=100, n=100, d=1000, k=2",
    ),
    (
        "ifca-rotated-mnist",
        "IFCA paper Table I: IFCA, global, local on rotated MNIST, (m, n) in {(4800, 50), (2400, 100), (1200, 200)}",
    ),
    (
        "cflmgd-rotated-mnist",
        "CFL-MGD paper Table 2: CFL-MGD, IFCA, FedAvg (+ momentum) on rotated MNIST, (2400, 100)",
    ),
    (
        "mixed-regression",
        "Su, Xu, Yang Figs. 1-3: two-phase (FedAvg s in {1, 5, 10}, FedProx), FedAvg, one-shot, IFCA, oracle on mixed linear regression",
    ),
    (
        "mixed-regression-mnist",
        "Su, Xu, Yang Figs. 4-5: two-phase, FedAvg, one-shot, IFCA, oracle on 14x14 MNIST with 25,000 two-image clients, k = 2 and 4",
    ),
    (
        "srfca-mnist",
        "SR-FCA paper Tables 1-2: SR-FCA, Local, Global, CFL, Local-KMeans, IFCA, FedSoft, ONE_SHOT-IFCA on inverted and rotated MNIST, m = 100, n = 600",
    ),
];

/// Mean and sample standard deviation (0 for fewer than two values).
pub(crate) fn mean_std(v: &[f64]) -> (f64, f64) {
    let n = v.len().max(1) as f64;
    let mean = v.iter().sum::<f64>() / n;
    let var = v.iter().map(|x| (x - mean).powi(2)).sum::<f64>()
        / (v.len().saturating_sub(1).max(1)) as f64;
    (mean, var.sqrt())
}
