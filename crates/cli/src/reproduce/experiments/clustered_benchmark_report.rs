//! The clustered-benchmark's report: `report.md` (verdicts, one table per setting with
//! ranks and costs, the ranks across settings, the search budget; "not run:
//! data absent here" for an optional setting without its files) and
//! `results.csv`, from the finished runs of both grids.

use std::fmt::Write as _;
use std::path::Path;

use anyhow::Result;
use serde::Serialize;

use super::Protocol;
use super::clustered_benchmark_choice::{Choice, of, values};
use super::clustered_benchmark_lineup::Lineup;
use super::clustered_benchmark_methods::{Family, families};
use super::clustered_benchmark_sections::{NOT_INCLUDED, budget, protocol, spent};
use super::clustered_benchmark_settings::{ACCURACY, Sizes};
use super::clustered_benchmark_stats::{NOISE_RULE, beats, mean_std, ranks};
use crate::reproduce::harness::{Experiment, Field, FinishedRun, Metric, write_csv};
use crate::table::render;
use fedcluster_run::whole_file::write_whole;

/// One row of `results.csv`: a test run of a chosen candidate.
#[derive(Serialize)]
struct ResultRow<'a> {
    setting: &'a str,
    method: &'a str,
    candidate: &'a str,
    seed: u64,
    diverged: bool,
    accuracy: Option<f64>,
    best_round_accuracy: Option<f64>,
    ari: Option<f64>,
    nmi: Option<f64>,
    rounds: usize,
    bytes: Option<u64>,
    seconds: Option<f64>,
}

/// "mean ± std" with `d` decimals, or `-`.
fn show(v: &[f64], d: usize) -> String {
    match mean_std(v) {
        None => "-".into(),
        Some((m, _)) if v.len() == 1 => format!("{m:.d$}"),
        Some((m, s)) => format!("{m:.d$} ± {s:.d$}"),
    }
}

/// Writes `report.md` and `results.csv` into `out` for the settings of
/// `lineup`; returns the tables.
#[allow(clippy::too_many_arguments)]
pub fn write(
    p: &Protocol,
    out: &Path,
    lineup: &Lineup,
    search: &Experiment,
    searched: &[FinishedRun],
    choice: &Choice,
    test: &Experiment,
    tested: &[FinishedRun],
) -> Result<String> {
    let families = families();
    let sizes = Sizes::of(p);
    let mut rows = Vec::new();
    let (mut tables, mut verdicts) = (String::new(), String::new());
    // Mean accuracy per (family, setting), for the ranks across settings.
    let settings = lineup.specs();
    let mut rank_table: Vec<Vec<Option<f64>>> = vec![vec![None; settings.len()]; families.len()];
    for (si, setting) in settings.iter().enumerate() {
        let chosen: Vec<(usize, &Family, usize)> = families
            .iter()
            .enumerate()
            .filter_map(|(fi, f)| Some((fi, f, choice.winner(si, f.key)?)))
            .filter(|(_, _, m)| of(tested, si, *m).next().is_some())
            .collect();
        if chosen.is_empty() {
            continue;
        }
        let acc: Vec<Vec<f64>> = chosen
            .iter()
            .map(|&(_, _, m)| values(tested, si, m, ACCURACY))
            .collect();
        let rank = ranks(
            &acc.iter()
                .map(|v| mean_std(v).map(|x| x.0))
                .collect::<Vec<_>>(),
        );
        for (&(fi, _, _), r) in chosen.iter().zip(&rank) {
            rank_table[fi][si] = *r;
        }
        let mut body = Vec::new();
        for (i, &(_, f, m)) in chosen.iter().enumerate() {
            let runs: Vec<&FinishedRun> = of(tested, si, m).collect();
            let summaries: Vec<_> = runs.iter().filter_map(|r| r.run.summary.as_ref()).collect();
            let bytes: Vec<f64> = summaries
                .iter()
                .map(|s| (s.bytes_down + s.bytes_up) as f64 / 1e6)
                .collect();
            let seconds: Vec<f64> = summaries.iter().map(|s| s.wall_seconds).collect();
            let known = setting.clusters > 1;
            let clustering = |field| {
                if known {
                    show(&values(tested, si, m, Metric::Final(field)), 2)
                } else {
                    "-".into()
                }
            };
            let candidate = test.methods[m]
                .tuned
                .as_ref()
                .map_or("", |t| t.value.as_str());
            body.push(vec![
                rank[i].map_or("-".into(), |r| format!("{r}")),
                f.label.to_string(),
                candidate.to_string(),
                show(&acc[i], 2),
                show(&values(tested, si, m, Metric::BestTestAccuracy), 2),
                clustering(Field::Ari),
                clustering(Field::Nmi),
                runs.first().map_or(0, |r| r.run.config.rounds).to_string(),
                show(&bytes, 1),
                show(&seconds, 1),
                runs.len().to_string(),
            ]);
            for r in &runs {
                let s = r.run.summary.as_ref();
                rows.push(ResultRow {
                    setting: setting.key,
                    method: f.key,
                    candidate: test.methods[m].key,
                    seed: r.seed,
                    diverged: r.run.diverged(),
                    accuracy: r.run.value(ACCURACY),
                    best_round_accuracy: r.run.value(Metric::BestTestAccuracy),
                    ari: r.run.value(Metric::Final(Field::Ari)),
                    nmi: r.run.value(Metric::Final(Field::Nmi)),
                    rounds: r.run.config.rounds,
                    bytes: s.map(|s| s.bytes_down + s.bytes_up),
                    seconds: s.map(|s| s.wall_seconds),
                });
            }
        }
        body.sort_by(|a, b| rank_key(&a[0]).total_cmp(&rank_key(&b[0])));
        let header = [
            "rank",
            "method",
            "chosen candidate",
            "accuracy % (last round)",
            "best round %",
            "ARI",
            "NMI",
            "rounds",
            "MB on the wire",
            "seconds",
            "seeds",
        ];
        let _ = write!(
            tables,
            "### {}\n\n{}\n",
            setting.label,
            render(&header, &body)
        );
        let _ = writeln!(
            verdicts,
            "- **{}**: {}",
            setting.label,
            verdict(&chosen, &acc)
        );
    }
    let mut rank_rows: Vec<(f64, Vec<String>)> = families
        .iter()
        .zip(&rank_table)
        .filter(|(_, r)| r.iter().any(Option::is_some))
        .map(|(f, r)| {
            let ranked: Vec<f64> = r.iter().flatten().copied().collect();
            let mean = ranked.iter().sum::<f64>() / ranked.len() as f64;
            let mut row = vec![f.label.to_string()];
            row.extend(r.iter().map(|x| x.map_or("-".into(), |x| format!("{x}"))));
            row.push(format!("{mean:.2}"));
            (mean, row)
        })
        .collect();
    rank_rows.sort_by(|a, b| a.0.total_cmp(&b.0));
    for a in &lineup.absent {
        let _ = write!(tables, "### {}\n\n{}\n\n", a.spec.label, a.why);
        let _ = writeln!(verdicts, "- **{}**: {}", a.spec.label, a.why);
    }
    let mut header = vec!["method"];
    header.extend(settings.iter().map(|s| s.key));
    header.push("mean rank");
    let rank_text = render(
        &header,
        &rank_rows.into_iter().map(|r| r.1).collect::<Vec<_>>(),
    );
    let budget = budget(&families, &settings, search, searched, choice);
    write_csv(&out.join("results.csv"), rows)?;
    let smoke = if p.quick || p.rounds.is_some() {
        "**A smoke run (`--quick` or `--rounds`): not the benchmark's protocol.**\n\n"
    } else {
        ""
    };
    let report = format!(
        "# Clustered benchmark: every clustered method and the baselines, tuned alike\n\n\
         {smoke}## Verdicts\n\nPer setting, ranked by the mean personalised test accuracy after \
         the last round. A difference counts as larger than the seed noise when the two means \
         are more than {NOISE_RULE} pooled standard deviations apart (the standard deviation of \
         one run, pooled over both methods' seeds).\n\n{verdicts}\n\
         ## Protocol\n\n{protocol}\n\n{spent}\n\n## Results per setting\n\n{tables}\
         ## Ranks across settings\n\n{rank_text}\n## Search budget\n\n{budget}\n\
         ## Not included\n\n{NOT_INCLUDED}\n\nFiles: `results.csv` (every test run), \
         `search/` and `test/` (every run, with the harness's own report of each grid).\n",
        protocol = protocol(p, sizes, test.seeds, &settings),
        spent = spent(searched, tested),
    );
    write_whole(&out.join("report.md"), report.as_bytes())?;
    Ok(format!("{tables}## Ranks across settings\n\n{rank_text}"))
}

/// Sorts a rank cell (`-` last).
fn rank_key(cell: &str) -> f64 {
    cell.parse().unwrap_or(f64::INFINITY)
}

/// A setting's verdict: the best method, those within the noise of it, and
/// which methods beat FedAvg (global) beyond the noise.
fn verdict(chosen: &[(usize, &Family, usize)], acc: &[Vec<f64>]) -> String {
    let mean = |i: usize| mean_std(&acc[i]).map_or(f64::NEG_INFINITY, |x| x.0);
    let Some(best) = (0..chosen.len()).max_by(|&a, &b| mean(a).total_cmp(&mean(b))) else {
        return "no runs".into();
    };
    let label = |i: usize| chosen[i].1.label;
    let mut tied = Vec::new();
    let mut judged = true;
    for i in (0..chosen.len()).filter(|&i| i != best) {
        match beats(&acc[best], &acc[i]) {
            Some(false) => tied.push(label(i)),
            Some(true) => {}
            None => judged = false,
        }
    }
    if !judged {
        return format!(
            "best mean: {} ({:.2}%); one seed: no difference is judged against the noise",
            label(best),
            mean(best)
        );
    }
    let global = chosen.iter().position(|c| c.1.key == "global");
    let above_global: Vec<&str> = match global {
        Some(g) => (0..chosen.len())
            .filter(|&i| beats(&acc[i], &acc[g]) == Some(true))
            .map(label)
            .collect(),
        None => Vec::new(),
    };
    let list = |v: &[&str]| {
        if v.is_empty() {
            "none".into()
        } else {
            v.join(", ")
        }
    };
    format!(
        "best mean: {} ({:.2}%); within the noise of it: {}; above FedAvg beyond the noise: {}",
        label(best),
        mean(best),
        list(&tied),
        if global.is_some() {
            list(&above_global)
        } else {
            "FedAvg not run here".into()
        }
    )
}
