//! `report.md` (a verdict per table, the paper's claims checked, ours mean ±
//! std beside the paper with the seed count, the protocol), `results.csv`,
//! `curves.csv` and the plots, all from the finished runs.

use std::fmt::Write as _;
use std::path::Path;

use anyhow::{Context, Result};

use super::Cell;
use super::claims;
use super::numbers::{digits, mean_std};
use super::spec::{Experiment, Layout, Metric, Plot, Table};
use super::stored::{Finished, RunKey, write_csv};
use crate::plot::{Scale, Series, line_chart};
use crate::table::render;
use fedcluster_run::whole_file::write_whole;

/// Writes every output file into `out`; returns the tables as printed.
/// With `not_run` (why no run could start: the data is absent), every
/// table's verdict says so instead.
pub fn write(
    exp: &Experiment,
    out: &Path,
    runs: &[(Cell, Finished)],
    not_run: Option<&str>,
) -> Result<String> {
    std::fs::create_dir_all(out).with_context(|| format!("cannot create {}", out.display()))?;
    let key = |c: &Cell| RunKey {
        setting: exp.settings[c.setting].key.clone(),
        method: exp.methods[c.method].key.into(),
        seed: c.seed,
    };
    let results = runs.iter().map(|(c, r)| r.result_row(key(c)));
    write_csv(&out.join("results.csv"), results)?;
    if exp.curves {
        let rounds = runs
            .iter()
            .flat_map(|(c, r)| r.records.iter().map(move |rec| (key(c), rec)));
        write_csv(&out.join("curves.csv"), rounds)?;
    }
    let cells = Cells { exp, runs };
    let (mut verdicts, mut tables) = (String::new(), String::new());
    if exp.smoke {
        verdicts.push_str(
            "**A smoke run (`--quick` or fewer rounds than the paper's): these verdicts compare \
             another protocol with the paper's numbers.**\n\n",
        );
    }
    for table in &exp.tables {
        let (text, verdict) = match table.layout {
            Layout::Long => cells.long_table(table),
            Layout::Grid => (cells.grid_table(table), None),
        };
        let why = table
            .no_paper
            .as_deref()
            .unwrap_or("the paper gives no numbers");
        let claimed = || {
            let (claim, column) = (table.claim?, table.columns.first()?);
            claim.verdict(exp, column, |s, m| cells.stat(s, m, column.metric).values)
        };
        let verdict = match not_run {
            Some(absent) => format!("not run: data absent here ({absent})"),
            None => verdict
                .or_else(claimed)
                .unwrap_or_else(|| format!("not comparable: {why}")),
        };
        let _ = writeln!(verdicts, "- **{}**: {verdict}", table.title);
        let _ = write!(tables, "## {}\n\n{text}\n", table.title);
    }
    for s in &exp.settings {
        if let Some(paper) = &s.paper {
            let _ = writeln!(tables, "Paper, {}: {paper}.\n", s.label);
        }
    }
    let mut files = vec!["`results.csv` (every run's final numbers)".to_string()];
    if exp.curves {
        files.push("`curves.csv` (every round of every run)".into());
    }
    files.extend(cells.plots(out)?);
    let stat = |s, m, metric| {
        let stat = cells.stat(s, m, metric);
        claims::Values {
            values: stat.values,
            runs: stat.runs,
        }
    };
    let claims = claims::section(exp, &stat).unwrap_or_default();
    let notes: String = exp.notes.iter().map(|n| format!("{n}\n\n")).collect();
    let diverged = runs.iter().filter(|(_, r)| r.diverged()).count();
    let run_seconds: f64 = runs
        .iter()
        .filter_map(|(_, r)| r.value(Metric::Seconds))
        .sum();
    let report = format!(
        "# {title}\n\n## Verdicts\n\n{verdicts}\nA cell is reproduced when ours is within \
         1.5 points (percentages) or 10% (other quantities) of the paper's number.\n\n\
         {claims}## Protocol\n\n{protocol}\n\nSeeds per (setting, method): {seeds}; {runs} finished runs, \
         {diverged} of them diverged; their rounds took {hours:.2} hours of wall-clock time \
         as the runs measured it. Every run is kept under `runs/<setting>/<method>/seed-<s>/`; \
         re-running the command with the same `--out` runs only what is missing.\n\n{tables}{notes}\
         Files: {files}.\n",
        title = exp.title,
        protocol = exp.protocol,
        seeds = seed_range(&cells.seed_counts()),
        runs = runs.len(),
        // `+ 0.0`: an empty sum is -0.0, which would print as "-0.00".
        hours = run_seconds / 3600.0 + 0.0,
        files = files.join(", "),
    );
    let path = out.join("report.md");
    write_whole(&path, report.as_bytes())?;
    Ok(tables)
}

fn seed_range(counts: &[usize]) -> String {
    match (counts.iter().min(), counts.iter().max()) {
        (Some(a), Some(b)) if a == b => a.to_string(),
        (Some(a), Some(b)) => format!("{a} to {b}"),
        _ => "none yet".into(),
    }
}

/// The finished runs, grouped by (setting, method).
struct Cells<'a> {
    exp: &'a Experiment,
    runs: &'a [(Cell, Finished)],
}

/// One row of a long table: its label, the method whose runs it shows and
/// the method whose paper numbers stand beside them.
struct RowPlan {
    label: String,
    runs: usize,
    paper: Option<usize>,
}

/// A metric's values over the seeds of one (setting, method).
struct Stat {
    values: Vec<f64>,
    runs: usize,
}

impl Stat {
    fn mean_std(&self) -> Option<(f64, f64)> {
        (!self.values.is_empty()).then(|| mean_std(&self.values))
    }

    fn show(&self, metric: Metric) -> String {
        let d = digits(metric);
        match self.mean_std() {
            None if self.runs == 0 => "-".into(),
            None => "n/a".into(),
            Some((m, _)) if self.values.len() == 1 => format!("{m:.d$}"),
            Some((m, s)) => format!("{m:.d$} ± {s:.d$}"),
        }
    }
}

impl Cells<'_> {
    fn runs(&self, setting: usize, method: usize) -> impl Iterator<Item = &Finished> {
        self.runs
            .iter()
            .filter(move |(c, _)| c.setting == setting && c.method == method)
            .map(|(_, r)| r)
    }

    fn stat(&self, setting: usize, method: usize, metric: Metric) -> Stat {
        let runs: Vec<&Finished> = self.runs(setting, method).collect();
        Stat {
            values: runs.iter().filter_map(|r| r.value(metric)).collect(),
            runs: runs.len(),
        }
    }

    fn paper(&self, setting: usize, method: usize, metric: Metric) -> Option<(f64, Option<f64>)> {
        let p = self.exp.methods[method]
            .paper
            .iter()
            .find(|p| p.metric == metric)?;
        p.values.get(setting).copied().flatten()
    }

    /// The established reason for a gap to the paper in the cell, in full
    /// runs only (a smoke run's gaps are its own).
    fn gap(&self, setting: usize, method: usize, metric: Metric) -> Option<&'static str> {
        let gaps = &self.exp.methods[method].gaps;
        let gap = gaps
            .iter()
            .find(|g| g.setting == setting && g.metric == metric)?;
        (!self.exp.smoke).then_some(gap.why)
    }

    /// Finished runs per (setting, method) that has any.
    fn seed_counts(&self) -> Vec<usize> {
        let mut counts = std::collections::BTreeMap::new();
        for (c, _) in self.runs {
            *counts.entry((c.setting, c.method)).or_insert(0) += 1;
        }
        counts.into_values().collect()
    }

    /// A row per (setting, method) with any number; the table's verdict
    /// (`None` when no cell has a paper number).
    fn long_table(&self, table: &Table) -> (String, Option<String>) {
        let with_paper: Vec<bool> = table
            .columns
            .iter()
            .map(|c| {
                self.exp
                    .methods
                    .iter()
                    .any(|m| m.paper.iter().any(|p| p.metric == c.metric))
            })
            .collect();
        let mut header = vec!["setting".to_string(), "method".to_string()];
        for (c, paper) in table.columns.iter().zip(&with_paper) {
            header.push(format!("{} (ours)", c.header));
            if *paper {
                header.push("paper".into());
            }
        }
        header.extend(["seeds".into(), "verdict".into()]);
        let (mut rows, mut within, mut compared, mut outside) = (Vec::new(), 0, 0, Vec::new());
        for (si, setting) in self.exp.settings.iter().enumerate() {
            for planned in self.row_plan(si) {
                let mi = planned.runs;
                let stats: Vec<Stat> = table
                    .columns
                    .iter()
                    .map(|c| self.stat(si, mi, c.metric))
                    .collect();
                let papers: Vec<_> = table
                    .columns
                    .iter()
                    .map(|c| planned.paper.and_then(|pm| self.paper(si, pm, c.metric)))
                    .collect();
                if stats.iter().all(|s| s.values.is_empty()) && papers.iter().all(Option::is_none) {
                    continue;
                }
                let mut row = vec![setting.label.clone(), planned.label.clone()];
                let mut verdict = Vec::new();
                for (((c, stat), paper), shown) in table
                    .columns
                    .iter()
                    .zip(&stats)
                    .zip(&papers)
                    .zip(&with_paper)
                {
                    row.push(stat.show(c.metric));
                    if *shown {
                        let d = digits(c.metric);
                        row.push(match paper {
                            Some((p, Some(sd))) => format!("{p:.d$} ± {sd:.d$}"),
                            Some((p, None)) => format!("{p:.d$}"),
                            None => "-".into(),
                        });
                    }
                    if let (Some((p, _)), Some((ours, _))) = (paper, stat.mean_std()) {
                        let ok = c.tolerance.holds(ours, *p);
                        compared += 1;
                        if ok {
                            within += 1;
                        } else {
                            let d = digits(c.metric);
                            let why = planned
                                .paper
                                .and_then(|pm| self.gap(si, pm, c.metric))
                                .map(|why| format!(": {why}"))
                                .unwrap_or_default();
                            outside.push(format!(
                                "{} / {} / {}: {ours:.d$} vs {p:.d$}{why}",
                                setting.label, planned.label, c.header
                            ));
                        }
                        verdict.push(ok);
                    }
                }
                row.push(stats.iter().map(|s| s.runs).max().unwrap_or(0).to_string());
                row.push(match (verdict.is_empty(), verdict.iter().all(|v| *v)) {
                    (true, _) => "-".into(),
                    (false, true) => "reproduced".into(),
                    (false, false) => "not reproduced".into(),
                });
                rows.push(row);
            }
        }
        let header: Vec<&str> = header.iter().map(String::as_str).collect();
        let verdict = (compared > 0).then(|| {
            if outside.is_empty() {
                format!("reproduced ({within} of {compared} cells within tolerance)")
            } else {
                format!(
                    "not reproduced in {} of {compared} cells ({})",
                    outside.len(),
                    outside.join("; ")
                )
            }
        });
        (render(&header, &rows), verdict)
    }

    /// The rows of a long table in `setting`: each untuned method, and for
    /// each tuned family its best variant (beside the paper) then every
    /// variant (without it).
    fn row_plan(&self, setting: usize) -> Vec<RowPlan> {
        let methods = &self.exp.methods;
        let mut plan = Vec::new();
        for (mi, method) in methods.iter().enumerate() {
            let Some(tuned) = &method.tuned else {
                plan.push(RowPlan {
                    label: method.label.to_string(),
                    runs: mi,
                    paper: Some(mi),
                });
                continue;
            };
            let family: Vec<usize> = (0..methods.len())
                .filter(|&m| {
                    methods[m]
                        .tuned
                        .as_ref()
                        .is_some_and(|t| t.family == tuned.family)
                })
                .collect();
            if family[0] == mi {
                // Scored so that higher is better; the first variant wins a tie.
                let score = |m: usize| {
                    let metric = self.exp.tune_by?;
                    let sign = if metric.higher_is_better() { 1.0 } else { -1.0 };
                    let (mean, _) = self.stat(setting, m, metric).mean_std()?;
                    Some(sign * mean)
                };
                let best = family
                    .iter()
                    .filter_map(|&m| Some((m, score(m)?)))
                    .reduce(|best, next| if next.1 > best.1 { next } else { best });
                let label = match best {
                    Some((m, _)) => format!(
                        "{} (best: {})",
                        tuned.family,
                        methods[m].tuned.as_ref().map_or("", |t| t.value.as_str())
                    ),
                    None => format!("{} (not tuned yet)", tuned.family),
                };
                plan.push(RowPlan {
                    label,
                    runs: best.map_or(mi, |(m, _)| m),
                    paper: Some(mi),
                });
            }
            plan.push(RowPlan {
                label: format!("{}, {}", tuned.family, tuned.value),
                runs: mi,
                paper: None,
            });
        }
        plan
    }

    /// The first column's metric, settings placed on their grid (one method).
    fn grid_table(&self, table: &Table) -> String {
        let Some(column) = table.columns.first() else {
            return String::new();
        };
        let (rows, xs) = self.grid_axes();
        let mut header = vec![String::new()];
        header.extend(xs.iter().map(|x| format!("{x}")));
        let body: Vec<Vec<String>> =
            rows.iter()
                .map(|row| {
                    let mut cells = vec![row.clone()];
                    for x in &xs {
                        let at = self.exp.settings.iter().position(|s| {
                            s.grid.as_ref().is_some_and(|(r, sx)| r == row && sx == x)
                        });
                        cells.push(at.map_or("-".into(), |si| {
                            self.stat(si, 0, column.metric).show(column.metric)
                        }));
                    }
                    cells
                })
                .collect();
        let header: Vec<&str> = header.iter().map(String::as_str).collect();
        let seeds = seed_range(&self.seed_counts());
        let plural = if seeds == "1" { "" } else { "s" };
        format!(
            "{}, {seeds} seed{plural} per cell:\n\n{}",
            column.header,
            render(&header, &body)
        )
    }

    /// The distinct grid rows and x values, in settings order.
    fn grid_axes(&self) -> (Vec<String>, Vec<f64>) {
        let (mut rows, mut xs) = (Vec::<String>::new(), Vec::<f64>::new());
        for (r, x) in self.exp.settings.iter().filter_map(|s| s.grid.as_ref()) {
            if !rows.contains(r) {
                rows.push(r.clone());
            }
            if !xs.contains(x) {
                xs.push(*x);
            }
        }
        (rows, xs)
    }

    /// Draws the experiment's plots; returns the files written.
    fn plots(&self, out: &Path) -> Result<Vec<String>> {
        let mut files = Vec::new();
        for plot in &self.exp.plots {
            match *plot {
                Plot::Curves { field, log10 } => {
                    for (si, setting) in self.exp.settings.iter().enumerate() {
                        let series: Vec<Series> = self
                            .exp
                            .methods
                            .iter()
                            .enumerate()
                            .filter_map(|(mi, m)| {
                                let run = self.runs.iter().find(|(c, _)| {
                                    c.setting == si && c.method == mi && c.seed == 1
                                })?;
                                let points: Vec<(f64, f64)> = run
                                    .1
                                    .records
                                    .iter()
                                    .filter_map(|r| Some((r.round as f64 + 1.0, field.of(r)?)))
                                    .filter(|(_, v)| !log10 || *v > 0.0)
                                    .map(|(x, v)| (x, if log10 { v.log10() } else { v }))
                                    .collect();
                                (!points.is_empty()).then(|| Series {
                                    label: m.label.into(),
                                    points,
                                })
                            })
                            .collect();
                        if series.is_empty() {
                            continue;
                        }
                        let file = format!("{}_{}.svg", file_stem(field.name()), setting.key);
                        let y = if log10 {
                            format!("log10 {}", field.name())
                        } else {
                            field.name().into()
                        };
                        line_chart(
                            &out.join(&file),
                            &format!("{}, seed 1", setting.label),
                            "round",
                            &y,
                            Scale::Fit,
                            series,
                        )?;
                        files.push(format!("plot `{file}`"));
                    }
                }
                Plot::Grid {
                    metric,
                    file,
                    x_label,
                    y_label,
                    scale,
                } => {
                    let (rows, _) = self.grid_axes();
                    let series: Vec<Series> = rows
                        .iter()
                        .map(|row| Series {
                            label: row.clone(),
                            points: self
                                .exp
                                .settings
                                .iter()
                                .enumerate()
                                .filter_map(|(si, s)| {
                                    let (r, x) = s.grid.as_ref()?;
                                    let (mean, _) = self.stat(si, 0, metric).mean_std()?;
                                    (r == row).then_some((*x, mean))
                                })
                                .collect(),
                        })
                        .collect();
                    let path = out.join(format!("{file}.svg"));
                    line_chart(&path, &self.exp.title, x_label, y_label, scale, series)?;
                    files.push(format!("plot `{file}.svg`"));
                }
            }
        }
        Ok(files)
    }
}

/// `name` as a file name: letters and digits, words joined by `_`
/// (`test accuracy %` is `test_accuracy`).
fn file_stem(name: &str) -> String {
    name.split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|w| !w.is_empty())
        .collect::<Vec<_>>()
        .join("_")
}
