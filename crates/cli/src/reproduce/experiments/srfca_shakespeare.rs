//! The SR-FCA paper's Table 3, Shakespeare: m = 50 users sampled from LEAF
//! Shakespeare, LEAF's character LSTM (embedding 8, two LSTM layers of 256,
//! dense to 80 symbols), 2,400 iterations of SGD (lr 0.8, minibatches of 10)
//! as the public code trains every method; SR-FCA with one REFINE, the
//! clustered baselines with K tuned over {1, 2, 3, 4}.

use super::Protocol;
use crate::reproduce::harness::{
    Check, Claim, Column, ConfigFile, Experiment, Field, Method, Metric, POINTS, Paper, PaperClaim,
    Setting, Table, Tuned, config_file,
};

/// The paper's Table 3 (test accuracy %, mean ± std over 5 seeds).
fn paper(mean: f64, std: f64) -> Vec<Paper> {
    vec![Paper {
        metric: Metric::Final(Field::TestAccuracy),
        values: vec![Some((mean, Some(std)))],
    }]
}

/// K over which the clustered baselines are tuned.
const KS: [usize; 4] = [1, 2, 3, 4];

/// `family`'s variants on `config`, one per K (keyed `keys`), the paper's
/// numbers on the first, `gap` (where established) on each.
fn tuned(
    keys: [&'static str; 4],
    family: &'static str,
    config: ConfigFile,
    paper_numbers: Vec<Paper>,
    gap: Option<&'static str>,
) -> Vec<Method> {
    let mut paper_numbers = Some(paper_numbers);
    KS.iter()
        .zip(keys)
        .map(|(&k, key)| {
            let mut method = Method::new(key, family, config)
                .with_overrides(&[&format!("algorithm.clusters={k}")]);
            method.paper = paper_numbers.take().unwrap_or_default();
            method.tuned = Some(Tuned {
                family,
                value: format!("K = {k}"),
            });
            match gap {
                Some(why) => method.with_gap(0, Metric::Final(Field::TestAccuracy), why),
                None => method,
            }
        })
        .collect()
}

/// `reproduce srfca-shakespeare`.
pub fn experiment(p: &Protocol) -> Experiment {
    let full = !p.quick && p.rounds.is_none();
    let mut overrides = vec!["eval_every=0".to_string()];
    overrides.extend(p.data_dir_override());
    // The smoke run: 6 clients, a small LSTM, a few steps, capped splits.
    let quick = |full_rounds: usize, quick_rounds: usize| {
        p.rounds
            .unwrap_or(if p.quick { quick_rounds } else { full_rounds })
    };
    if p.quick {
        overrides.extend(
            [
                "data.clients=6",
                "data.max_train_samples=300",
                "data.max_test_samples=100",
                "model.hidden=32",
                "algorithm.local_steps?=20",
                "algorithm.participation?=0.5",
            ]
            .map(String::from),
        );
    }
    let rounds = quick(6, 2);
    overrides.push(format!("rounds={rounds}"));
    let mut srfca = Method::new("srfca", "SR-FCA", SRFCA)
        .with_paper(paper(48.54, 0.69))
        .with_gap(0, Metric::Final(Field::TestAccuracy), SRFCA_ONE_CLUSTER);
    let mut one_shot_ifca = Method::new("one-shot-ifca", "ONE_SHOT-IFCA", SRFCA)
        .with_paper(paper(45.56, 1.15))
        .with_gap(
            0,
            Metric::Final(Field::TestAccuracy),
            ONE_SHOT_IFCA_ONE_CLUSTER,
        );
    // SR-FCA: ONE_SHOT, the pairwise losses, one REFINE of 6 rounds and its
    // evaluation. ONE_SHOT-IFCA: ONE_SHOT, the losses, IFCA's rounds.
    // ONE_SHOT's local training runs as `parts` rounds (each client keeps its
    // model and optimizer between them), so a run checkpoints between parts.
    let (refine_rounds, one_shot_steps, local_steps, parts) = if p.quick {
        (2, 40, 20, 2)
    } else {
        (rounds, 6 * 400, 400, 6)
    };
    srfca.overrides.extend([
        format!("rounds={}", parts + 1 + refine_rounds + 1),
        format!("algorithm.refine_rounds={refine_rounds}"),
        format!("algorithm.local_steps={one_shot_steps}"),
        format!("algorithm.local_rounds={parts}"),
        format!("algorithm.refine_local_steps={local_steps}"),
    ]);
    // The public code cuts ONE_SHOT's and MERGE's threshold graphs with the
    // pivot algorithm, not into connected components (docs/algorithms.md).
    let mut srfca_correlation = Method::new(
        "srfca-correlation",
        "SR-FCA, ONE_SHOT and MERGE by correlation clustering (as the public code)",
        SRFCA,
    );
    srfca_correlation.overrides = srfca.overrides.clone();
    srfca_correlation
        .overrides
        .push("algorithm.clustering=\"correlation\"".into());
    one_shot_ifca.overrides.extend([
        format!("rounds={}", parts + 1 + rounds),
        format!("algorithm.local_steps={one_shot_steps}"),
        format!("algorithm.local_rounds={parts}"),
        format!("algorithm.then={{ kind = \"ifca\", local_steps = {local_steps} }}"),
    ]);
    // The public code's round: its sampled clients (10, or 3 of the smoke
    // run's 6) train one after another, one engine round per client.
    let chained_rounds = rounds * if p.quick { 3 } else { 10 };
    let mut methods = vec![
        srfca,
        srfca_correlation,
        Method::new("local", "Local", LOCAL)
            .with_paper(paper(33.86, 1.22))
            .with_gap(0, Metric::Final(Field::TestAccuracy), LOCAL_UNEXPLAINED),
        Method::new("global", "Global", GLOBAL)
            .with_paper(paper(45.28, 0.78))
            .with_gap(0, Metric::Final(Field::TestAccuracy), CHAINED_CLIENTS),
        Method::new(
            "global-uniform",
            "Global, unweighted average (as the public code)",
            GLOBAL,
        )
        .with_overrides(&["algorithm.weighting=\"uniform\""]),
        Method::new(
            "global-carried",
            "Global, LSTM state carried across minibatches (as the public code)",
            GLOBAL,
        )
        .with_overrides(&["model.state=\"carried\""]),
        Method::new(
            "global-chained",
            "Global, clients in sequence and unweighted (emulating the public code)",
            GLOBAL,
        )
        .with_overrides(&[
            "algorithm.weighting=\"uniform\"",
            "algorithm.clients=\"sequential\"",
            &format!("rounds={chained_rounds}"),
        ]),
        // ONE_SHOT-IFCA's IFCA rounds at K = 1 train every client from the mean
        // of the ONE_SHOT models; this row trains every client from w₀.
        Method::new(
            "global-every-client",
            "Global, every client a round (as ONE_SHOT-IFCA's IFCA rounds)",
            GLOBAL,
        )
        .with_overrides(&["algorithm.participation=1.0"]),
        Method::new("cfl", "CFL", CFL)
            .with_paper(paper(44.14, 1.03))
            .with_gap(0, Metric::Final(Field::TestAccuracy), CFL_NEVER_SPLITS),
    ];
    let ifca_keys = ["ifca-k1", "ifca-k2", "ifca-k3", "ifca-k4"];
    let ifca_gap = Some(IFCA_UNASSIGNED);
    methods.extend(tuned(ifca_keys, "IFCA", IFCA, paper(46.12, 1.22), ifca_gap));
    // The public code's IFCA at K = 2: every client assigned each round, then
    // each cluster's 10 members (the smoke run's 2) in sequence, one engine
    // round per link and one per assignment (none before the first round).
    let per_cluster = if p.quick { 2 } else { 10 };
    methods.push(
        Method::new(
            "ifca-k2-chained",
            "IFCA, K = 2, every client assigned, each cluster's clients in sequence \
             (emulating the public code)",
            IFCA_CHAINED,
        )
        .with_overrides(&[
            &format!("algorithm.clients_per_round={per_cluster}"),
            &format!("rounds={}", rounds * per_cluster + rounds - 1),
        ]),
    );
    let fedsoft_keys = ["fedsoft-k1", "fedsoft-k2", "fedsoft-k3", "fedsoft-k4"];
    methods.extend(tuned(
        fedsoft_keys,
        "FedSoft",
        FEDSOFT,
        paper(46.98, 1.25),
        Some(FEDSOFT_IS_NOT_THE_CODES),
    ));
    methods.push(one_shot_ifca);
    Experiment {
        name: "srfca-shakespeare",
        title: "SR-FCA paper, Table 3: LEAF Shakespeare".into(),
        protocol: format!(
            "{clients} users sampled uniformly without replacement (by the seed) from LEAF \
             Shakespeare built from the Project Gutenberg plays (`fedcluster data \
             leaf-shakespeare`), LEAF's split at 0.8{caps}; the character LSTM (embedding 8, two \
             layers of {hidden}, dense to 80 symbols) on 80-character windows. Every method \
             trains with SGD (lr 0.8, minibatches of 10) for {iterations} iterations: Global, \
             IFCA and FedSoft {rounds} rounds of {local} local steps on a sampled {share} of the \
             clients; Local {rounds} x {local} steps per client; CFL {rounds} rounds of {local} \
             steps on 10 members of each cluster. SR-FCA: ONE_SHOT trains {one_shot} local steps per client (over {parts} rounds), \
             cross-cluster-loss distance, λ the 0.25 quantile of the pairwise distances, t = 2, \
             one REFINE of {refine} rounds of {local} local steps with the trimmed mean (β = \
             0.15) on 10 members of each cluster a round. ONE_SHOT-IFCA: ONE_SHOT, then IFCA for {rounds} rounds of \
             {local} steps from its clusters. IFCA and FedSoft are run at every K in {{1, 2, 3, \
             4}}; the headline row is the K of highest mean test accuracy over the seeds run (the \
             paper tunes K and reports the best), every K has its own row. CFL splits by its \
             update-norm criteria (ε₁ = 0.084, ε₂ = 0.39) and takes no K; ONE_SHOT-IFCA takes its \
             clusters from ONE_SHOT. Test accuracy: each client's model (its cluster's, the \
             global one, or its own) on the client's own test split, averaged with equal weight \
             per client, as the public code computes Table 3.",
            clients = if p.quick { 6 } else { 50 },
            parts = parts,
            caps = if p.quick {
                " (at most 300 training and 100 test windows per client)"
            } else {
                ""
            },
            hidden = if p.quick { 32 } else { 256 },
            iterations = rounds * local_steps,
            local = local_steps,
            share = if p.quick { "half" } else { "fifth (10)" },
            one_shot = one_shot_steps,
            refine = refine_rounds,
        ),
        settings: vec![Setting {
            key: "shakespeare".into(),
            label: "Shakespeare".into(),
            ..Default::default()
        }],
        methods,
        seeds: p.seeds(5),
        overrides,
        tables: vec![Table {
            title: "Table 3: test accuracy % (Shakespeare)".into(),
            columns: vec![
                Column::new(
                    "test accuracy %",
                    Metric::Final(Field::TestAccuracy),
                    POINTS,
                ),
                Column::new(
                    "clusters found",
                    Metric::Final(Field::ClustersFound),
                    crate::reproduce::harness::TEN_PERCENT,
                ),
                Column::new(
                    "seconds",
                    Metric::Seconds,
                    crate::reproduce::harness::TEN_PERCENT,
                ),
            ],
            ..Default::default()
        }],
        notes: vec![AGAINST_THE_PAPER.into()],
        claims: vec![
            PaperClaim {
                quote: "Across all datasets, we find that SR-FCA is competitive with or \
                        outperforms all other algorithms in terms of both misclustering error \
                        and test accuracy.",
                source: "Section 5.1, Table 3 (Shakespeare); competitive read as within 1.5 \
                         points of the best baseline (every K of IFCA and FedSoft) or above it; \
                         ONE_SHOT-IFCA's IFCA rounds here train all 50 clients a round from the \
                         mean of the ONE_SHOT models, SR-FCA's REFINE 10 a round from w₀",
                check: Check::Competitive {
                    table: 0,
                    method: "srfca",
                    against: &[
                        "local",
                        "global",
                        "cfl",
                        "ifca-k1",
                        "ifca-k2",
                        "ifca-k3",
                        "ifca-k4",
                        "fedsoft-k1",
                        "fedsoft-k2",
                        "fedsoft-k3",
                        "fedsoft-k4",
                        "one-shot-ifca",
                    ],
                },
            },
            PaperClaim {
                quote: "SR-FCA consistently outperforms IFCA.",
                source: "Table 3's caption; checked against IFCA's K = 2 (IFCA at K = 1 is Global)",
                check: Check::Ordering {
                    table: 0,
                    claim: Claim {
                        method: "srfca",
                        like: None,
                        beats: &["ifca-k2"],
                    },
                },
            },
        ],
        smoke: !full,
        tune_by: Some(Metric::Final(Field::TestAccuracy)),
        ..Default::default()
    }
}

const SRFCA: ConfigFile = config_file!("srfca-shakespeare/srfca.toml");
const LOCAL: ConfigFile = config_file!("srfca-shakespeare/local.toml");
const GLOBAL: ConfigFile = config_file!("srfca-shakespeare/global.toml");

/// Local's gap: not found in the public code (seed 1).
const LOCAL_UNEXPLAINED: &str = "not explained: the public code's Local is the ONE_SHOT \
     models of its SR-FCA (`init_metrics`), trained as ours (2,400 SGD steps, lr 0.8, \
     minibatches of 10, a constant step) and scored as ours (each client's last model on its \
     own test split, equal weight per client: the paper reports 'the final test accuracy'); \
     what differs is the 50 users (another Gutenberg edition, another draw), mixed precision, \
     and the LSTM state carried across minibatches, which changes nothing for Global; ours \
     ends at a training loss of 1.87 and a test loss of 3.92, each client's model fitting its \
     own lines (seed 1)";

/// Global's gap, measured on seed 1: the public code's clients in sequence.
const CHAINED_CLIENTS: &str = "the paper's code trains a round's 10 sampled clients one after \
     another on shared weights, 4,000 sequential SGD steps a round against our 400 averaged; \
     emulating that (the row 'clients in sequence and unweighted') gives 44.59, within a point \
     of the paper, while its unweighted average alone gives 36.99 and its LSTM state carried \
     across minibatches alone 36.07, no change (seed 1 each)";
const CFL: ConfigFile = config_file!("srfca-shakespeare/cfl.toml");

/// CFL's gap, read off the finished run (seed 1).
const CFL_NEVER_SPLITS: &str = "CFL never splits at the code's ε₁ = 0.084, ε₂ = 0.39 (one \
     cluster found) and so trains Global's rounds, with Global's gap: its training losses equal \
     Global's to 7 digits and its test accuracy is Global's 36.07 (seed 1)";
/// SR-FCA's gap, read off the finished run (seed 1) and the public code.
const SRFCA_ONE_CLUSTER: &str = "ONE_SHOT's threshold graph at λ (the 0.25 quantile of the \
     pairwise cross-cluster losses) has one connected component of at least t = 2 clients, so \
     ONE_SHOT, and REFINE after it, find one cluster (clusters found 1), and SR-FCA trains \
     what Global trains (10 of the 50 clients a round, 400 steps each, the trimmed mean in \
     place of the mean): it ends at 36.13 beside Global's 36.07; the public code trains a \
     cluster's 10 sampled members one after another, as its Global, which emulated for \
     Global gives 44.59, and cuts the graph by correlation clustering, not into components: \
     run so (the row 'srfca-correlation'), ONE_SHOT finds 2 clusters, REFINE trains 16 \
     clients a round, its RECLUSTER and MERGE leave one cluster, and it ends at 36.03, \
     so the chain, not the cut, is the gap (seed 1)";
/// ONE_SHOT-IFCA's gap, read off the finished run (seed 1) and the public code.
const ONE_SHOT_IFCA_ONE_CLUSTER: &str = "ONE_SHOT finds one cluster, as in SR-FCA's run (the \
     same rounds: the run forks from SR-FCA's checkpoint), so IFCA runs at K = 1: 6 rounds in \
     which every one of the 50 clients trains 400 steps side by side from the round's model, \
     the sample-weighted mean, starting from the mean of the 50 ONE_SHOT models (training loss \
     2.00 at the end, Global's 2.22); the public code (`oneshot_ifca.py`) starts each \
     cluster's model from PyTorch's initialisation, not from ONE_SHOT's models, cuts the graph \
     by correlation clustering, and trains 10 members of each cluster a round one after \
     another, as its Global, which emulated for Global gives 44.59; not emulated; Global with \
     every client a round from w₀ gives 36.99, so the start, not the clients, lifts it above \
     Global's 36.07 (seed 1)";
const IFCA: ConfigFile = config_file!("srfca-shakespeare/ifca.toml");
const IFCA_CHAINED: ConfigFile = config_file!("srfca-shakespeare/ifca_chained.toml");

/// IFCA's gap, read off the finished K = 2 run (seed 1) and the public code.
const IFCA_UNASSIGNED: &str = "seed 1's 6 draws of 10 clients never reach 13 of the 50 (at \
     every K), which then have no cluster and score 0 (test loss inf): in the K = 2 run the \
     37 others average 35.96, Global's 36.07; the public code assigns all 50 clients every \
     round and trains 10 members of each cluster in sequence, and emulating that (the row \
     'ifca-k2-chained') gives 45.90, within a point of the paper (seed 1)";
const FEDSOFT: ConfigFile = config_file!("srfca-shakespeare/fedsoft.toml");

/// FedSoft's gap, read off the finished runs at K = 1 to 4 (seed 1) and the public code.
const FEDSOFT_IS_NOT_THE_CODES: &str = "the paper's FedSoft row is its code's soft-IFCA \
     (`soft_ifca.py`), another algorithm than FedSoft's proximal updates from the mixture of \
     the centres run here: each of its cluster models trains as the code's Global (clients \
     in sequence, no proximal term, drawn by importance x samples, the importances from an \
     argmin along the wrong axis), and its number is each cluster model scored on all 50 \
     clients' test splits, averaged over the clusters: K Globals, whose nearest row here, \
     Global with the clients in sequence, gives 44.59; at K = 1, 2, 3 and 4 ours trains to a \
     loss of 3.1-3.5, at or above the 3.10-nat entropy of the clients' character frequencies \
     (Global's 2.2-2.9), and ends at the same 14.62 at each K to every digit: exactly what \
     predicting the space, the most frequent character, for every window scores on the 37 \
     clients the draws reach, the 13 others scoring 0 (test loss infinite) (seed 1)";

/// Where the protocol differs from the paper's, and why.
const AGAINST_THE_PAPER: &str = include_str!("srfca_shakespeare_against_the_paper.md");
