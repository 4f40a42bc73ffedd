//! The SR-FCA paper's MNIST experiments (Tables 1, 2 and 4): inverted MNIST (2
//! clusters) and rotated MNIST (4 clusters), m = 100 clients of n = 600 images,
//! SR-FCA with 2 REFINE steps against Local, Global, CFL, Local-KMeans, IFCA,
//! FedSoft and ONE_SHOT-IFCA, every method trained by Adam on minibatches of 50
//! (the public code's optimizer; its rates, participation and budgets differ, as
//! the report says).

use super::Protocol;
use crate::reproduce::harness::Tolerance::Absolute;
use crate::reproduce::harness::{
    Check, Claim, Column, ConfigFile, Experiment, Field, Method, Metric, POINTS, Paper, PaperClaim,
    Setting, TEN_PERCENT, Table, config_file,
};

/// SR-FCA's REFINE steps.
const REFINE_STEPS: usize = 2;

/// A setting: its transforms, rounds, REFINE rounds and λ quantile.
struct SettingSpec {
    key: &'static str,
    label: &'static str,
    transforms: &'static [&'static str],
    rounds: usize,
    refine_rounds: usize,
    lambda_quantile: f64,
    /// Local steps of the public code's Local-KMeans.
    kmeans_erm_steps: usize,
}

const SETTINGS: [SettingSpec; 2] = [
    SettingSpec {
        key: "inverted",
        label: "inverted MNIST (k = 2)",
        transforms: &["identity", "invert"],
        rounds: 280,
        refine_rounds: 56,
        lambda_quantile: 0.25,
        kmeans_erm_steps: 10,
    },
    SettingSpec {
        key: "rotated",
        label: "rotated MNIST (k = 4)",
        transforms: &["identity", "rotate90", "rotate180", "rotate270"],
        rounds: 250,
        refine_rounds: 42,
        lambda_quantile: 0.1,
        kmeans_erm_steps: 250,
    },
];

impl SettingSpec {
    fn rounds(&self, p: &Protocol) -> usize {
        p.rounds.unwrap_or(if p.quick { 12 } else { self.rounds })
    }

    /// REFINE rounds: the setting's, or a fifth of overridden rounds.
    fn refine_rounds(&self, p: &Protocol) -> usize {
        match (p.rounds, p.quick) {
            (None, false) => self.refine_rounds,
            _ => (self.rounds(p) / 5).max(1),
        }
    }

    /// Rounds (from 1) after which Table 4 reads SR-FCA's accuracy: ONE_SHOT's
    /// local models, then the end of each REFINE (after its TrimmedMeanGD,
    /// RECLUSTER and MERGE; the cross-loss distance spends one evaluation round
    /// per REFINE).
    fn table4_rounds(&self, p: &Protocol) -> Vec<usize> {
        let r = self.refine_rounds(p);
        std::iter::once(1)
            .chain((1..=REFINE_STEPS).map(|step| 2 + step * (r + 1)))
            .filter(|&round| round <= self.rounds(p))
            .collect()
    }

    fn setting(&self, p: &Protocol) -> Setting {
        let k = self.transforms.len();
        Setting {
            key: self.key.into(),
            label: self.label.into(),
            overrides: vec![
                format!("data.transforms={:?}", self.transforms),
                format!("rounds={}", self.rounds(p)),
                format!("algorithm.clusters?={k}"),
                format!("algorithm.refine_rounds?={}", self.refine_rounds(p)),
                format!("algorithm.threshold.value?={}", self.lambda_quantile),
            ],
            ..Default::default()
        }
    }
}

/// The paper's Table 1 (test accuracy %) and, where given, Table 2
/// (misclustering) numbers: inverted, rotated.
fn paper(accuracy: [f64; 2], misclustering: Option<[f64; 2]>) -> Vec<Paper> {
    let final_ = |f| Metric::Final(f);
    let mut paper = vec![Paper::plain(
        final_(Field::TestAccuracy),
        &accuracy.map(Some),
    )];
    if let Some(m) = misclustering {
        paper.push(Paper::plain(
            final_(Field::MajorityMisclustering),
            &m.map(Some),
        ));
    }
    paper
}

/// The paper's Table 4: SR-FCA after REFINE 1 and 2 (mean, std), inverted and rotated.
const TABLE4: [[(f64, f64); 2]; 2] = [
    [(91.88, 0.39), (92.03, 0.30)],
    [(91.63, 0.12), (91.66, 0.13)],
];

const SRFCA: ConfigFile = config_file!("srfca-inverted-mnist.toml");

/// `reproduce srfca-mnist`.
pub fn experiment(p: &Protocol) -> Experiment {
    let mut srfca =
        Method::new("srfca", "SR-FCA", SRFCA).with_paper(paper([92.03, 91.66], Some([0.0; 2])));
    let eval_at = |s: &SettingSpec| format!("eval_at={:?}", s.table4_rounds(p));
    // Algorithm 1 ends with its last REFINE: so does the headline row.
    let refined = |s: &SettingSpec| {
        let end = s.table4_rounds(p).last().copied().unwrap_or(1);
        vec![eval_at(s), format!("rounds={end}")]
    };
    srfca.per_setting = SETTINGS.iter().map(refined).enumerate().collect();
    for metric in [ACCURACY, at(1), at(2)] {
        srfca = srfca.with_gap(ROTATED, metric, CHAINED_CLIENTS);
    }
    let mut trained = Method::new(
        "srfca-trained",
        "SR-FCA, then trained on its clusters",
        SRFCA,
    );
    trained.per_setting = SETTINGS
        .iter()
        .map(|s| vec![eval_at(s)])
        .enumerate()
        .collect();
    srfca.paper.extend((0..REFINE_STEPS).map(|r| {
        Paper {
            metric: Metric::AtEval(Field::TestAccuracy, r + 1),
            values: TABLE4
                .iter()
                .map(|s| Some((s[r].0, Some(s[r].1))))
                .collect(),
        }
    }));
    // The paper's Local-KMeans, as its public code runs it: local models
    // (Adam at 2e-4, 10 steps on inverted and 250 on rotated MNIST), k-means on
    // their weights, and the centroids scored as they are, never trained.
    let mut centroids = Method::new(
        "local-kmeans-centroids",
        "Local-KMeans (its centroids, as the public code)",
        KMEANS,
    )
    .with_overrides(&["rounds=1", "algorithm.erm_lr=0.0002"])
    .with_paper(paper([10.56, 10.35], Some([0.36, 0.28])));
    centroids.per_setting = SETTINGS
        .iter()
        .map(|s| vec![format!("algorithm.erm_steps={}", s.kmeans_erm_steps)])
        .enumerate()
        .collect();
    let mut one_shot_ifca = Method::new("one-shot-ifca", "ONE_SHOT-IFCA", SRFCA);
    let then_ifca = "algorithm.then={ kind = \"ifca\", local_steps = 5 }";
    one_shot_ifca.overrides.push(then_ifca.into());
    let mut overrides = vec!["eval_every=0".into()];
    overrides.extend(p.data_dir_override());
    let full = !p.quick && p.rounds.is_none();
    let each = |f: &dyn Fn(&SettingSpec) -> usize| {
        SETTINGS
            .iter()
            .map(|s| f(s).to_string())
            .collect::<Vec<_>>()
            .join(" / ")
    };
    Experiment {
        name: "srfca-mnist",
        title: "SR-FCA paper, Tables 1, 2 and 4: inverted and rotated MNIST".into(),
        protocol: format!(
            "m = 100 clients of n = 600 images, disjoint (no training image held twice), 32 test \
             clients, MLP 784-200-10, full participation, {} rounds (inverted / rotated). Every method trains with Adam (lr \
             0.001, minibatches of 50, moments kept per client), 5 local steps per round. SR-FCA: \
             ONE_SHOT trains 250 local steps; cross-cluster-loss distance; t = 2; λ the 0.25 \
             (inverted) or 0.1 (rotated) quantile of the pairwise distances; {REFINE_STEPS} REFINE \
             steps of {} rounds, each round 5 local steps and the trimmed mean (β = 0.15) of the \
             updates. Local-KMeans as the paper's public code runs it: local models trained from \
             independent random starts (Adam at 2e-4, 10 / 250 steps), k-means on their weights, \
             the centroids scored as they are; 'then FedAvg per cluster' trains 250 local steps \
             at 1e-3 before k-means and FedAvg in each cluster after it. FedSoft: μ = 0.1, importance \
             re-estimated every 5 rounds. CFL: ε₁ = 0.1, ε₂ = 0.52 after 20 warm-up rounds (chosen so that it splits, as the paper's CFL does). \
             Misclustering: each found cluster labelled by its majority true cluster (Definition \
             3.1), over the training clients, the ones the algorithms cluster (the paper's Table 2 \
             says its misclustering is on the test set, and does not say how test clients are \
             clustered). Test accuracy: each training client's model (its cluster's, or under Local its \
             own) on all test data of its true cluster, averaged over the clients. Table 4: \
             SR-FCA's accuracy after ONE_SHOT (its local models) and after each REFINE (after its \
             RECLUSTER and MERGE). SR-FCA's rows end after its last REFINE (Algorithm 1's output, \
             Table 4's last column, as the paper's Table 1); 'SR-FCA, then trained on its \
             clusters' runs on to the other methods' rounds, TrimmedMeanGD on its final \
             clusters, which Algorithm 1 does not have.",
            each(&|s| s.rounds(p)),
            each(&|s| s.refine_rounds(p)),
        ),
        settings: SETTINGS.iter().map(|s| s.setting(p)).collect(),
        methods: vec![
            srfca,
            trained,
            Method::new("local", "Local", LOCAL)
                .with_paper(paper([76.52, 85.55], None))
                .with_gap(INVERTED, ACCURACY, RAW_PIXELS_LOCAL),
            Method::new("global", "Global", GLOBAL)
                .with_paper(paper([88.61, 80.88], None))
                .with_gap(INVERTED, ACCURACY, PUBLIC_GLOBAL_PROTOCOL),
            Method::new("cfl", "CFL", CFL)
                .with_paper(paper([88.30, 80.47], Some([0.08, 0.14])))
                .with_gap(INVERTED, ACCURACY, CFL_SPLITS_LATE)
                .with_gap(ROTATED, ACCURACY, CFL_SEPARATES_ROTATIONS)
                .with_gap(INVERTED, MISCLUSTERING, CFL_CUTS_ACROSS)
                .with_gap(ROTATED, MISCLUSTERING, CFL_SEPARATES_ROTATIONS),
            centroids
                .with_gap(ROTATED, ACCURACY, CENTROIDS_NEAR_CHANCE)
                .with_gap(INVERTED, MISCLUSTERING, KMEANS_ON_RANDOM_STARTS)
                .with_gap(ROTATED, MISCLUSTERING, KMEANS_ON_RANDOM_STARTS),
            Method::new(
                "local-kmeans",
                "Local-KMeans, then FedAvg per cluster",
                KMEANS,
            ),
            Method::new("ifca", "IFCA", IFCA)
                .with_paper(paper([91.55, 91.80], Some([0.0; 2])))
                .with_gap(INVERTED, ACCURACY, PUBLIC_IFCA_PROTOCOL)
                .with_gap(ROTATED, MISCLUSTERING, IFCA_MERGES),
            Method::new("fedsoft", "FedSoft", FEDSOFT),
            one_shot_ifca,
        ],
        seeds: p.seeds(5),
        overrides,
        tables: vec![
            Table {
                title: "Table 1: test accuracy %".into(),
                columns: vec![Column::new("test accuracy %", ACCURACY, POINTS)],
                ..Default::default()
            },
            Table {
                title: "Table 2: misclustering (ours over the training clients; the paper's \
                        on the test set)"
                    .into(),
                columns: vec![
                    Column::new("misclustering", MISCLUSTERING, Absolute(0.015)),
                    Column::new("clusters found", at_end(Field::ClustersFound), TEN_PERCENT),
                ],
                ..Default::default()
            },
            Table {
                title: "Table 4: SR-FCA's test accuracy % after ONE_SHOT and after each REFINE"
                    .into(),
                columns: vec![
                    Column::new("after ONE_SHOT", at(0), POINTS),
                    Column::new("after REFINE 1", at(1), POINTS),
                    Column::new("after REFINE 2", at(2), POINTS),
                ],
                ..Default::default()
            },
        ],
        claims: claims(),
        notes: if full {
            vec![AGAINST_THE_PAPER.into()]
        } else {
            Vec::new()
        },
        smoke: !full,
        ..Default::default()
    }
}

fn at_end(field: Field) -> Metric {
    Metric::Final(field)
}

/// Test accuracy at the `i`-th evaluation (0: after ONE_SHOT, then after each REFINE).
fn at(i: usize) -> Metric {
    Metric::AtEval(Field::TestAccuracy, i)
}

/// Tables 1 and 2's columns.
const ACCURACY: Metric = Metric::Final(Field::TestAccuracy);
const MISCLUSTERING: Metric = Metric::Final(Field::MajorityMisclustering);

/// [`SETTINGS`]' indices.
const INVERTED: usize = 0;
const ROTATED: usize = 1;

/// The established reasons for cells off the paper's numbers (the note
/// gives the measurements).
const CHAINED_CLIENTS: &str = "the paper's code trains a round's sampled clients one after \
     another on shared weights: its REFINE so run gives 91.63, side by side as in Algorithm 1 \
     86.71 (scripts/srfca_refine_chain_torch.py)";
const PUBLIC_GLOBAL_PROTOCOL: &str = "the paper's code runs Global for 50 rounds of 10 clients \
     at Adam 2e-4, one after another on shared weights, on raw 0-255 pixels: so run it gives 89.23 \
     (85.51 on pixels in [0, 1]); ours trains 280 rounds of all clients at 1e-3, one MLP serving \
     both inverted clusters (scripts/srfca_inverted_scale_torch.py)";
const CFL_SPLITS_LATE: &str = "CFL splits late (round 58 on seed 1): until then it is Global, \
     whose one MLP serves both inverted clusters";
const CFL_SEPARATES_ROTATIONS: &str = "our CFL separates the four rotations exactly on every \
     seed (the paper's misclusters 0.14)";
const CFL_CUTS_ACROSS: &str = "a split cuts across the true clusters on 3 of 5 seeds (0, 0, \
     0.23, 0.15, 0.12), within one standard deviation of the paper's";
const KMEANS_ON_RANDOM_STARTS: &str = "k-means on the weights of MLPs still near independent \
     random starts: whom it groups depends on the starts";
const CENTROIDS_NEAR_CHANCE: &str = "near chance as the paper's: the mean of independently \
     initialised MLPs is no model";
const RAW_PIXELS_LOCAL: &str = "the paper's code trains inverted MNIST on raw 0-255 pixels: its \
     Local (280 Adam steps at 2e-4) so run gives 76.06, on pixels in [0, 1] 83.12; ours trains 1,400 \
     steps at 1e-3 (scripts/srfca_inverted_scale_torch.py)";
const PUBLIC_IFCA_PROTOCOL: &str = "the paper's code runs IFCA for 50 rounds of 10 clients per \
     cluster at Adam 2e-4, one after another on shared weights, on raw 0-255 pixels: so run it \
     gives 91.78 and 91.42 where it separates the clusters, 86.55 where every client joins one \
     model (90.54 on pixels in [0, 1]); ours trains 280 rounds of all clients at 1e-3 \
     (scripts/srfca_inverted_scale_torch.py)";
const IFCA_MERGES: &str = "from its random start IFCA merges two rotations on seeds 2, 3 and 4; \
     the paper's 0.00 matches seeds 1 and 5";

const LOCAL: ConfigFile = config_file!("srfca-mnist/local.toml");
const GLOBAL: ConfigFile = config_file!("srfca-mnist/global.toml");
const CFL: ConfigFile = config_file!("srfca-mnist/cfl.toml");
const KMEANS: ConfigFile = config_file!("srfca-mnist/local-kmeans.toml");
const IFCA: ConfigFile = config_file!("srfca-mnist/ifca.toml");
const FEDSOFT: ConfigFile = config_file!("srfca-mnist/fedsoft.toml");

/// Where the full runs differ from the paper's tables, and why (measured on
/// the committed `results/srfca-mnist` run).
const AGAINST_THE_PAPER: &str = include_str!("srfca_mnist_against_the_paper.md");

/// Every baseline with a Table 1 row here.
const BASELINES: &[&str] = &[
    "local",
    "global",
    "cfl",
    "local-kmeans-centroids",
    "local-kmeans",
    "ifca",
    "fedsoft",
    "one-shot-ifca",
];

/// The paper's claims about Tables 1 and 2 (Section 5.1).
fn claims() -> Vec<PaperClaim> {
    const RESULTS: &str = "Across all datasets, we find that SR-FCA is competitive with or \
        outperforms all other algorithms in terms of both misclustering error and test accuracy.";
    vec![
        PaperClaim {
            quote: RESULTS,
            source: "Section 5.1, Table 1; competitive read as within 1.5 points of the best \
                     baseline or above it; as the tables stand, the baselines train longer than \
                     SR-FCA's REFINE (280 / 250 rounds of all clients against 2 x 56 / 42 from w₀)",
            check: Check::Competitive {
                table: 0,
                method: "srfca",
                against: BASELINES,
            },
        },
        PaperClaim {
            quote: RESULTS,
            source: "Section 5.1, Table 1, like for like: 'SR-FCA, then trained on its clusters' \
                     runs to the baselines' rounds at their rate and local steps (ONE_SHOT's 250 \
                     local steps besides; each REFINE restarts from w₀, so its last models train \
                     for fewer rounds than the baselines')",
            check: Check::Competitive {
                table: 0,
                method: "srfca-trained",
                against: BASELINES,
            },
        },
        PaperClaim {
            quote: RESULTS,
            source: "Section 5.1, Table 2; ours over the training clients, the paper's on the \
                     test set; within 0.015 of the lowest misclustering or below it",
            check: Check::Competitive {
                table: 1,
                method: "srfca",
                against: &[
                    "cfl",
                    "local-kmeans-centroids",
                    "local-kmeans",
                    "ifca",
                    "fedsoft",
                    "one-shot-ifca",
                ],
            },
        },
        PaperClaim {
            quote: "we find that IFCA recovers C* and outperforms SR-FCA marginally for MNIST \
                    datasets",
            source: "Section 5.1, Tables 1 and 2; checked on the ordering of Table 1",
            check: Check::Ordering {
                table: 0,
                claim: Claim {
                    method: "ifca",
                    like: None,
                    beats: &["srfca"],
                },
            },
        },
        PaperClaim {
            quote: "SR-FCA and other clustered FL baselines perform better as they find correct \
                    clusters with low heterogeneity inside each cluster",
            source: "Section 5.1, against Local and Global, Table 1",
            check: Check::Ordering {
                table: 0,
                claim: Claim {
                    method: "srfca",
                    like: None,
                    beats: &["local", "global"],
                },
            },
        },
    ]
}
