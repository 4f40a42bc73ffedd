//! Su, Xu, Yang 2024, Section V-D (Figs. 4-5): MNIST downsampled to 14x14,
//! logistic regression 196 -> 10, k = 2 (0 and 90 degrees) and k = 4 (0, 90,
//! 180, 270 degrees); one anchor client of 20 images per cluster and 25,000
//! clients of 2 images; the test set copied per rotation.

use super::Protocol;
use crate::reproduce::harness::{
    Column, Experiment, FIGURES_ONLY, Field, Method, Metric, POINTS, Plot, Setting, TEN_PERCENT,
    Table, config_file,
};

const CLIENTS: usize = 25_000;
const PER_ROUND: usize = 100;
/// Exchanges of the federated orthogonal iteration per Phase 1 iteration (with
/// 10, Phase 1 left the rotations unseparated on one seed of three).
const ORTHOGONAL_STEPS: usize = 20;

/// A setting: its rotations and Phase 1 iterations; every method runs Phase
/// 1's rounds and `phase2` more.
fn setting(transforms: &[&str], iterations: usize, phase2: usize, paper: &str) -> Setting {
    let k = transforms.len();
    let phase1 = iterations * (ORTHOGONAL_STEPS + 1);
    Setting {
        key: format!("k{k}"),
        label: format!("k = {k} ({})", transforms.join(", ")),
        overrides: vec![
            format!("data.transforms={transforms:?}"),
            format!("rounds={}", phase1 + phase2),
            format!(
                "algorithm.participation={}",
                PER_ROUND as f64 / (CLIENTS + k) as f64
            ),
            format!("algorithm.clusters?={k}"),
            format!("algorithm.phase1.iterations?={iterations}"),
            format!("algorithm.phase1.anchors?={k}"),
        ],
        paper: Some(paper.into()),
        ..Default::default()
    }
}

/// `reproduce mixed-regression-mnist`.
pub fn experiment(p: &Protocol) -> Experiment {
    let phase2 = p.rounds.unwrap_or(if p.quick { 20 } else { 1000 });
    let two_phase = config_file!("mixed-regression-mnist/two-phase.toml");
    let mut overrides = vec![format!("eval_every={}", if p.quick { 5 } else { 10 })];
    overrides.extend(p.data_dir_override());
    Experiment {
        name: "mixed-regression-mnist",
        title: "Su, Xu, Yang 2024, Figs. 4-5: MNIST with anchor clients".into(),
        protocol: format!(
            "MNIST at 14x14, logistic regression 196 -> 10, one anchor client of 20 images per \
             cluster and {CLIENTS} clients of 2 images, the test set copied per rotation. Phase 1 \
             (Remark 3, ε = −∇ℓ): 5 (k = 2) or 10 (k = 4) iterations, 1000 clients sampled per \
             subspace estimate (data reused), the federated orthogonal iteration with T₁ = \
             {ORTHOGONAL_STEPS} exchanges (so {ORTHOGONAL_STEPS} + 1 rounds per iteration), T₂ = 50, \
             α = β = 0.15 (tuned; the anchor moves by σ̂/2β), from the logistic model's own \
             initialisation. Then {phase2} rounds of Phase 2; every method runs as many rounds as \
             the two-phase method of its setting. Every method: {PER_ROUND} clients per round, \
             FedAvg s = 5, lr 0.1. One-shot: 100 local ERM steps of 0.1 from zero, k-means with 10 \
             restarts, then FedAvg; oracle: Phase 2 with every client told its true cluster. Test \
             error: per cluster the lowest error among the k models, averaged over the clusters."
        ),
        settings: vec![
            setting(
                &["identity", "rotate90"],
                5,
                phase2,
                "Fig. 4: two-phase comparable to the oracle, clearly better than FedAvg, one-shot and IFCA",
            ),
            setting(
                &["identity", "rotate90", "rotate180", "rotate270"],
                10,
                phase2,
                "Fig. 5: two-phase comparable to the oracle, clearly better than FedAvg, one-shot and IFCA",
            ),
        ],
        methods: vec![
            Method::new("two-phase", "two-phase", two_phase),
            Method::new(
                "fedavg",
                "FedAvg",
                config_file!("mixed-regression-mnist/global.toml"),
            ),
            Method::new(
                "one-shot",
                "one-shot",
                config_file!("mixed-regression-mnist/oneshot.toml"),
            ),
            Method::new("ifca", "IFCA (random init)", two_phase)
                .with_overrides(&["algorithm.start=\"init\""]),
            Method::new("oracle", "oracle", two_phase)
                .with_overrides(&["algorithm.start=\"labels\""]),
        ],
        seeds: p.seeds(3),
        overrides,
        tables: vec![Table {
            title: "Final test error".into(),
            columns: vec![
                Column::new("test error %", Metric::Final(Field::TestError), POINTS),
                Column::new("test loss", Metric::Final(Field::TestLoss), TEN_PERCENT),
                Column::new(
                    "ms per round after Phase 1",
                    Metric::MsPerRound { last: phase2 },
                    TEN_PERCENT,
                ),
            ],
            no_paper: Some(FIGURES_ONLY.into()),
            ..Default::default()
        }],
        plots: vec![
            Plot::Curves {
                field: Field::TestError,
                log10: false,
            },
            Plot::Curves {
                field: Field::TestLoss,
                log10: false,
            },
        ],
        curves: true,
        smoke: p.quick || p.rounds.is_some(),
        ..Default::default()
    }
}
