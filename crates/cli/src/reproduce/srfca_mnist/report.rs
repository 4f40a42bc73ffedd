//! The SR-FCA MNIST report: Tables 1, 2 and 4 beside the paper, and where and
//! why the full run differs from it.

use std::fmt::Write as _;
use std::path::Path;
use std::time::Instant;

use anyhow::{Context, Result};

use super::{
    ADAM_LR, BATCH, LOCAL_STEPS, M, N, ONE_SHOT_STEPS, Options, REFINE_STEPS, Run, SETTINGS,
    TEST_CLIENTS, TRIM, run_all,
};
use crate::reproduce::mean_std;
use crate::table::render;

fn paper(table: &[(&str, f64)], method: &str, digits: usize) -> String {
    table
        .iter()
        .find(|(m, _)| *m == method)
        .map_or("-".into(), |(_, v)| format!("{v:.digits$}"))
}

/// Runs both settings and writes `report.md` and `results.csv` into `out`;
/// returns the report's tables.
pub fn reproduce(o: &Options, out: &Path) -> Result<String> {
    let start = Instant::now();
    let runs = run_all(o)?;
    std::fs::create_dir_all(out).with_context(|| format!("cannot create {}", out.display()))?;
    let mut csv = String::from(
        "setting,method,seed_index,test_accuracy,majority_misclustering,clusters_found,seconds\n",
    );
    let mut tables = String::new();
    let opt = |v: Option<f64>| v.map(|x| x.to_string()).unwrap_or_default();
    for (si, setting) in SETTINGS.iter().enumerate() {
        let mut rows = Vec::new();
        for method in o.selected() {
            let these: Vec<&Run> = runs
                .iter()
                .filter(|r| r.setting == si && r.method == method)
                .collect();
            for (s, r) in these.iter().enumerate() {
                let _ = writeln!(
                    csv,
                    "{},{method},{},{},{},{},{}",
                    setting.label,
                    s + 1,
                    opt(r.accuracy),
                    opt(r.misclustering),
                    r.clusters.map(|c| c.to_string()).unwrap_or_default(),
                    r.seconds
                );
            }
            let acc: Vec<f64> = these
                .iter()
                .filter_map(|r| r.accuracy)
                .map(|a| 100.0 * a)
                .collect();
            let mis: Vec<f64> = these.iter().filter_map(|r| r.misclustering).collect();
            let (a, a_sd) = mean_std(&acc);
            let (mc, _) = mean_std(&mis);
            let clusters: Vec<String> = these
                .iter()
                .filter_map(|r| r.clusters)
                .map(|c| c.to_string())
                .collect();
            rows.push(vec![
                method.to_string(),
                format!("{a:.2} ± {a_sd:.2}"),
                paper(setting.accuracy, method, 2),
                if mis.is_empty() {
                    "-".into()
                } else {
                    format!("{mc:.2}")
                },
                paper(setting.misclustering, method, 2),
                if clusters.is_empty() {
                    "-".into()
                } else {
                    clusters.join(" ")
                },
            ]);
        }
        let _ = write!(
            tables,
            "## {}\n\n{}\n",
            setting.label,
            render(
                &[
                    "method",
                    "test accuracy % (ours)",
                    "paper (Table 1)",
                    "misclustering (ours)",
                    "paper (Table 2)",
                    "clusters found"
                ],
                &rows
            )
        );
    }
    let _ = write!(tables, "{}", table4(&runs));
    if o.rounds.is_none() {
        tables.push_str(AGAINST_THE_PAPER);
    }
    std::fs::write(out.join("results.csv"), csv)?;
    let report = format!(
        "# SR-FCA paper, Tables 1, 2 and 4: inverted and rotated MNIST\n\n\
         m = {M} clients of n = {N} images, {TEST_CLIENTS} test clients, MLP 784-200-10, full \
         participation, {rounds} rounds, {seeds} seed(s). Every method trains with Adam (lr \
         {ADAM_LR}, minibatches of {BATCH}, moments kept per client), {LOCAL_STEPS} local steps \
         per round. SR-FCA: ONE_SHOT trains {ONE_SHOT_STEPS} local steps; cross-cluster-loss \
         distance; t = 2; λ the 0.25 (inverted) or 0.1 (rotated) quantile of the pairwise \
         distances; {REFINE_STEPS} REFINE steps of {refine} rounds, each round {LOCAL_STEPS} \
         local steps and the trimmed mean (β = {TRIM}) of the updates. Local-KMeans trains \
         {ONE_SHOT_STEPS} local steps from independent random starts, then k-means on the \
         weights and FedAvg per cluster. FedSoft: μ = 0.1, importance re-estimated every 5 \
         rounds. CFL: ε₁ = 1.0, ε₂ = 1.6 after 20 warm-up rounds. \
         Misclustering: each found cluster labelled by its majority true cluster (Definition \
         3.1). Test accuracy: each training client's model (its cluster's, or under Local its \
         own) on all test data of its true cluster, averaged over the clients. Took {secs:.0} \
         s.\n\n{tables}`results.csv` has every run.\n",
        rounds = rounds_text(o),
        seeds = o.seeds,
        refine = refine_text(o),
        secs = start.elapsed().as_secs_f64(),
    );
    std::fs::write(out.join("report.md"), report)?;
    Ok(tables)
}

/// Where the full runs differ from the paper's tables, and why (measured on
/// the committed `results/srfca-mnist` run).
const AGAINST_THE_PAPER: &str = "## Against the paper\n\n\
- SR-FCA recovers the true clustering without k (2 and 4 clusters, misclustering 0 on \
every seed) and lands within 2 points of Table 1, above it.\n\
- Inverted MNIST: inversion x -> 1 - x is affine, so one MLP serves both clusters, and \
the pooled models (Global; CFL, which does not split; FedSoft; Local-KMeans, whose \
clusters are mixed) train on twice the data of a cluster model. Here they end above the \
clustered methods, whereas the paper's Table 1 has Global at 88.61 below SR-FCA. On \
rotated MNIST, where one model cannot serve all rotations, the clustered methods lead \
as in the paper (SR-FCA and IFCA, then Local, then Global and CFL), with IFCA below \
SR-FCA here (next point).\n\
- Local-KMeans: the paper's 10.56 / 10.35 are chance level, a model that never trained. \
Ours clusters the weights of independently initialised local MLPs (hidden units can be \
permuted, so weight distances say little: misclustering 0.46 / 0.95, worse than the \
paper's 0.36 / 0.28), then trains each, mixed, cluster with FedAvg for the remaining \
rounds, which a working FedAvg does well.\n\
- CFL: with ε₁ = 1.0 and ε₂ = 1.6 the split criterion (mean update norm below ε₁ and \
largest above ε₂) never fires in these runs, so CFL equals Global, as the paper's CFL nearly does (88.30 against 88.61, \
80.47 against 80.88). Its misclustering with one cluster is not defined here.\n\
- IFCA from one random initialisation: on rotated MNIST two of its four models each take \
two rotations (misclustering 0.50), which the paper's IFCA avoided; ONE_SHOT-IFCA, \
started from ONE_SHOT's clusters, does not.\n\
- Table 4: each REFINE's TrimmedMeanGD restarts from w₀ for 56 / 42 rounds, so the \
intermediate accuracies sit 1.3-2.5 points below the paper's; the final training on \
the merged clusters then passes them.\n\n";

fn rounds_text(o: &Options) -> String {
    let each: Vec<String> = SETTINGS.iter().map(|s| s.rounds(o).to_string()).collect();
    format!("{} (inverted / rotated)", each.join(" / "))
}

fn refine_text(o: &Options) -> String {
    let each: Vec<String> = SETTINGS
        .iter()
        .map(|s| s.refine_rounds(o).to_string())
        .collect();
    each.join(" / ")
}

/// Table 4: SR-FCA's test accuracy after ONE_SHOT (its local models), after
/// each REFINE's TrimmedMeanGD, and at the end.
fn table4(runs: &[Run]) -> String {
    let mut rows = Vec::new();
    let stages = 1 + REFINE_STEPS;
    for stage in 0..=stages {
        let label = match stage {
            0 => "after ONE_SHOT (local models)".to_string(),
            s if s <= REFINE_STEPS => format!("after REFINE {s}"),
            _ => "final".to_string(),
        };
        let mut row = vec![label];
        for (si, setting) in SETTINGS.iter().enumerate() {
            let acc: Vec<f64> = runs
                .iter()
                .filter(|r| r.setting == si && r.method == "SR-FCA")
                .filter_map(|r| {
                    if stage == stages {
                        r.accuracy
                    } else {
                        r.intermediate.get(stage).copied().flatten()
                    }
                })
                .map(|a| 100.0 * a)
                .collect();
            let (mean, sd) = mean_std(&acc);
            row.push(if acc.is_empty() {
                "-".into()
            } else {
                format!("{mean:.2} ± {sd:.2}")
            });
            row.push(match stage {
                s if (1..=REFINE_STEPS).contains(&s) => {
                    let (m, d) = setting.after_refine[s - 1];
                    format!("{m:.2} ± {d:.2}")
                }
                _ => "-".into(),
            });
        }
        rows.push(row);
    }
    format!(
        "## Table 4: SR-FCA's intermediate steps\n\nAfter ONE_SHOT: each client's local model. \
         After REFINE r: its TrimmedMeanGD's cluster models after its RECLUSTER and MERGE.\n\n{}\n",
        render(
            &[
                "SR-FCA",
                "inverted (ours)",
                "paper",
                "rotated (ours)",
                "paper",
            ],
            &rows
        )
    )
}
