//! Su, Xu, Yang 2024, Section V-D (Figs. 4-5): MNIST downsampled to 14x14,
//! logistic regression 196 -> 10, k = 2 (0 and 90 degrees) and k = 4 (0, 90,
//! 180, 270 degrees); one anchor client of 20 images per cluster and 25,000
//! clients of 2 images; the test set copied per rotation.

use super::Protocol;
use crate::reproduce::harness::{
    Check, Claim, Column, ConfigFile, Experiment, FIGURES_ONLY, Field, Method, Metric, POINTS,
    PaperClaim, Plot, Setting, TEN_PERCENT, Table, config_file,
};

const CLIENTS: usize = 25_000;
const PER_ROUND: usize = 100;
/// Exchanges of the federated orthogonal iteration per Phase 1 iteration in
/// the row that uses it instead of the direct SVD.
const ORTHOGONAL_STEPS: usize = 20;
/// Phase 1 rounds per iteration: the subspace exchanges, then the anchor step.
const SVD_ROUNDS: usize = 2;
const ORTHOGONAL_ROUNDS: usize = ORTHOGONAL_STEPS + 1;
const TWO_PHASE: ConfigFile = config_file!("mixed-regression-mnist/two-phase.toml");
/// Phase 1 checkpoints in the report: this many evenly spaced iteration ends.
const CHECKPOINTS: usize = 5;

/// The settings: their rotations and Phase 1 iterations.
const SHAPES: [(&[&str], usize); 2] = [
    (&["identity", "rotate90"], 5),
    (&["identity", "rotate90", "rotate180", "rotate270"], 10),
];

/// A setting: its rotations; every method runs the two-phase method's Phase 1
/// rounds (direct SVD) and `phase2` more.
fn setting(transforms: &[&str], iterations: usize, phase2: usize, paper: &str) -> Setting {
    let k = transforms.len();
    Setting {
        key: format!("k{k}"),
        label: format!("k = {k} ({})", transforms.join(", ")),
        overrides: vec![
            format!("data.transforms={transforms:?}"),
            format!("rounds={}", iterations * SVD_ROUNDS + phase2),
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

/// The rounds after which Phase 1's models are evaluated: the ends of
/// [`CHECKPOINTS`] evenly spaced iterations (every iteration for k = 2, every
/// second for k = 4), as `eval_at` (1-based round counts).
fn checkpoints(iterations: usize, rounds_per_iteration: usize) -> String {
    let rounds: Vec<usize> = (1..=CHECKPOINTS)
        .map(|c| c * iterations / CHECKPOINTS * rounds_per_iteration)
        .collect();
    format!("eval_at={rounds:?}")
}

/// A two-phase row: Phase 1's models evaluated at the checkpoints, and
/// `extra` overrides per setting.
fn two_phase_row(
    key: &'static str,
    label: &'static str,
    rounds_per_iteration: usize,
    extra: impl Fn(usize) -> Vec<String>,
) -> Method {
    let mut m = Method::new(
        key,
        label,
        config_file!("mixed-regression-mnist/two-phase.toml"),
    );
    m.per_setting = SHAPES
        .iter()
        .enumerate()
        .map(|(i, (_, iterations))| {
            let mut o = vec![checkpoints(*iterations, rounds_per_iteration)];
            o.extend(extra(*iterations));
            (i, o)
        })
        .collect();
    m
}

/// `reproduce mixed-regression-mnist`.
pub fn experiment(p: &Protocol) -> Experiment {
    let phase2 = p.rounds.unwrap_or(if p.quick { 20 } else { 1000 });
    let mut overrides = vec![format!("eval_every={}", if p.quick { 5 } else { 10 })];
    overrides.extend(p.data_dir_override());
    let orthogonal = two_phase_row(
        "two-phase-orthogonal",
        "two-phase, orthogonal iteration",
        ORTHOGONAL_ROUNDS,
        |iterations| {
            vec![
                format!(
                    "algorithm.phase1.subspace={{kind=\"orthogonal\",steps={ORTHOGONAL_STEPS}}}"
                ),
                // Its longer Phase 1, then as many Phase 2 rounds as the others.
                format!("rounds={}", iterations * ORTHOGONAL_ROUNDS + phase2),
            ]
        },
    );
    let paper = "two-phase comparable to the oracle, clearly better than FedAvg, one-shot and IFCA";
    Experiment {
        name: "mixed-regression-mnist",
        title: "Su, Xu, Yang 2024, Figs. 4-5: MNIST with anchor clients".into(),
        protocol: format!(
            "MNIST at 14x14, logistic regression 196 -> 10, one anchor client of 20 images per \
             cluster and {CLIENTS} clients of 2 images, the test set copied per rotation. Phase 1 \
             (Remark 3, ε = −∇ℓ): 5 (k = 2) or 10 (k = 4) iterations, 1000 clients sampled per \
             subspace estimate (data reused), the subspace by a direct SVD of the clients' \
             moments as the paper implements it (so {SVD_ROUNDS} rounds per iteration), T₂ = 50, \
             α = β = 0.15 (the paper gives none for MNIST; tuned on seed 1 and kept for every seed; the anchor moves by σ̂/2β), \
             from the logistic model's own initialisation. Then {phase2} rounds of Phase 2; \
             every method runs as many rounds as the two-phase method of its setting. Every \
             method: {PER_ROUND} clients per round, FedAvg s = 5, lr 0.1. The row 'two-phase, \
             orthogonal iteration' estimates each subspace by the federated orthogonal \
             iteration (Algorithm 3) with T₁ = {ORTHOGONAL_STEPS} exchanges instead \
             ({ORTHOGONAL_ROUNDS} rounds per iteration, then {phase2} rounds of Phase 2). \
             One-shot: 100 local ERM steps of 0.1 from zero, k-means with 10 restarts, then \
             FedAvg; oracle: Phase 2 with every client told its true cluster. Test error: per \
             cluster the lowest error among the k models, averaged over the clusters. \
             Participants' cluster accuracy: the share of a round's 100 clients whose chosen \
             model is their rotation's (best one-to-one matching), averaged over the last 100 \
             rounds."
        ),
        settings: SHAPES
            .iter()
            .zip(["Fig. 4", "Fig. 5"])
            .map(|((transforms, iterations), fig)| {
                setting(transforms, *iterations, phase2, &format!("{fig}: {paper}"))
            })
            .collect(),
        methods: vec![
            two_phase_row("two-phase", "two-phase", SVD_ROUNDS, |_| Vec::new()),
            orthogonal,
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
            Method::new("ifca", "IFCA (random init)", TWO_PHASE)
                .with_overrides(&["algorithm.start=\"init\""]),
            Method::new("oracle", "oracle", TWO_PHASE)
                .with_overrides(&["algorithm.start=\"labels\""]),
        ],
        seeds: p.seeds(3),
        overrides,
        tables: vec![
            Table {
                title: "Final test error".into(),
                columns: vec![
                    Column::new("test error %", Metric::Final(Field::TestError), POINTS),
                    Column::new("test loss", Metric::Final(Field::TestLoss), TEN_PERCENT),
                    Column::new(
                        "participants' cluster accuracy %, last 100 rounds",
                        Metric::MeanOverLast(Field::RoundClusterAccuracy, 100),
                        POINTS,
                    ),
                    Column::new(
                        "ms per round in Phase 2",
                        Metric::MsPerRound { last: phase2 },
                        TEN_PERCENT,
                    ),
                ],
                no_paper: Some(FIGURES_ONLY.into()),
                claim: Some(Claim {
                    method: "two-phase",
                    like: Some("oracle"),
                    beats: &["fedavg", "one-shot", "ifca"],
                }),
                ..Default::default()
            },
            Table {
                title: "Phase 1: test error % of the anchors' models after 1/5, 2/5, ... of its \
                        iterations (k = 2: iterations 1-5; k = 4: 2, 4, ..., 10), then the test \
                        loss at its end"
                    .into(),
                columns: (0..CHECKPOINTS)
                    .map(|c| {
                        Column::new(
                            &format!("{}/{CHECKPOINTS}", c + 1),
                            Metric::AtEval(Field::TestError, c),
                            POINTS,
                        )
                    })
                    .chain([Column::new(
                        "test loss at the end",
                        Metric::AtEval(Field::TestLoss, CHECKPOINTS - 1),
                        TEN_PERCENT,
                    )])
                    .collect(),
                no_paper: Some(
                    "the paper plots Phase 1 without numbers; its text says the errors 'first \
                     quickly decay and then either fluctuate around 3.5 or saturate at 4.3' \
                     (k = 2, k = 4), which fits neither our test error in % nor, at k = 2, our \
                     test loss (both in this table)"
                        .into(),
                ),
                ..Default::default()
            },
        ],
        plots: vec![
            Plot::Curves {
                field: Field::TestError,
                log10: false,
            },
            Plot::Curves {
                field: Field::TestLoss,
                log10: false,
            },
            Plot::Curves {
                field: Field::RoundClusterAccuracy,
                log10: false,
            },
        ],
        curves: true,
        claims: [
            ("two-phase", "two-phase"),
            ("two-phase-orthogonal", "its orthogonal-iteration row"),
        ]
        .into_iter()
        .map(|(method, row)| PaperClaim {
            quote: "Consistent with Fig. 1, 2, and 3, our algorithm is comparable to the \
                        Oracle algorithm and significantly outperforms other benchmarks.",
            source: if row == "two-phase" {
                "Section V-D, Figs. 4-5; comparable read as within 1.5 points of the oracle's \
                     test error, on the mean over seeds (seed by seed in the last section)"
            } else {
                "Section V-D, Figs. 4-5, on the row with the federated orthogonal iteration"
            },
            check: Check::Ordering {
                table: 0,
                claim: Claim {
                    method,
                    like: Some("oracle"),
                    beats: &["fedavg", "one-shot", "ifca"],
                },
            },
        })
        .collect(),
        notes: if p.quick || p.rounds.is_some() {
            Vec::new()
        } else {
            vec![AGAINST_THE_PAPER.into()]
        },
        smoke: p.quick || p.rounds.is_some(),
        ..Default::default()
    }
}

/// What the investigation of the k = 4 gap found (measured on the committed
/// `results/mixed-regression-mnist` run and its seed-1 side runs).
const AGAINST_THE_PAPER: &str = include_str!("mixed_regression_mnist_against_the_paper.md");
