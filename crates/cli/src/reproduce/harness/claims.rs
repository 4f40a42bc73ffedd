//! The report's "Claims" section: each of the paper's claims in its own
//! words, ours against it and a verdict (holds, does not hold, not checked),
//! computed from the finished runs, so that it stays true when they change.

use std::fmt::Write as _;

use super::claim::Outcome;
use super::numbers::{digits, mean_std};
use super::spec::{Check, Column, Experiment, Metric};

/// A metric's values over the seeds of one (setting, method), and how many
/// runs that (setting, method) has (a run may have no value).
pub struct Values {
    /// The values, one per run that has one.
    pub values: Vec<f64>,
    /// The finished runs.
    pub runs: usize,
}

/// The section, or `None` for an experiment that declares no claims.
/// `stat(setting, method, metric)` reads the finished runs.
pub fn section(exp: &Experiment, stat: &dyn Fn(usize, usize, Metric) -> Values) -> Option<String> {
    if exp.claims.is_empty() {
        return None;
    }
    let mut text = String::from(
        "## Claims\n\nEach claim in the paper's words, checked on our runs (means over seeds \
         unless it says otherwise):\n\n",
    );
    for claim in &exp.claims {
        let (verdict, ours) = match check(exp, claim.check, stat) {
            Ok((verdict, ours)) => (verdict, ours),
            Err(why) => ("not checked", why),
        };
        let _ = writeln!(
            text,
            "- \"{}\" ({}). **{verdict}**: {ours}",
            claim.quote, claim.source
        );
    }
    text.push('\n');
    Some(text)
}

/// The verdict and our numbers, or why the claim is not checked.
fn check(
    exp: &Experiment,
    check: Check,
    stat: &dyn Fn(usize, usize, Metric) -> Values,
) -> Result<(&'static str, String), String> {
    let column = |table: usize| -> Result<&Column, String> {
        exp.tables
            .get(table)
            .and_then(|t| t.columns.first())
            .ok_or_else(|| format!("the experiment has no table {table}"))
    };
    let not_yet = || "the methods it compares have no finished runs yet".to_string();
    let outcome = match check {
        Check::NotChecked(why) => return Err(why.into()),
        Check::Ordering { table, claim } => {
            let column = column(table)?;
            let values = |s, m| stat(s, m, column.metric).values;
            let words = ["holds", "does not hold"];
            claim
                .check(exp, column, words, values)
                .ok_or_else(not_yet)?
        }
        Check::Competitive {
            table,
            method,
            against,
        } => competitive(exp, column(table)?, method, against, stat).ok_or_else(not_yet)?,
        Check::AtMost {
            table,
            method,
            bound,
        } => at_most(exp, column(table)?, method, bound, stat).ok_or_else(not_yet)?,
        Check::Rises { table } => rises(exp, column(table)?, stat).ok_or_else(not_yet)?,
    };
    let verdict = outcome.word("holds", "holds in some settings only", "does not hold");
    Ok((verdict, outcome.text))
}

fn method_index(exp: &Experiment, key: &str) -> Option<usize> {
    exp.methods.iter().position(|m| m.key == key)
}

/// Appends `part` to `text`, `; `-separated.
fn push(text: &mut String, part: String) {
    if !text.is_empty() {
        text.push_str("; ");
    }
    text.push_str(&part);
}

/// "Competitive with or better than every one of `against`", per setting.
fn competitive(
    exp: &Experiment,
    column: &Column,
    method: &str,
    against: &[&str],
    stat: &dyn Fn(usize, usize, Metric) -> Values,
) -> Option<Outcome> {
    let ours = method_index(exp, method)?;
    let higher = column.metric.higher_is_better();
    let d = digits(column.metric);
    let mean = |s, m| {
        let v = stat(s, m, column.metric).values;
        (!v.is_empty()).then(|| (mean_std(&v).0, v.len()))
    };
    let (mut held, mut settings, mut text) = (0, 0, String::new());
    for (s, setting) in exp.settings.iter().enumerate() {
        let Some((o, seeds)) = mean(s, ours) else {
            continue;
        };
        let best = against
            .iter()
            .filter_map(|key| method_index(exp, key))
            .filter_map(|m| Some((m, mean(s, m)?.0)))
            .reduce(|a, b| if (b.1 > a.1) == higher { b } else { a });
        let Some((b, bv)) = best else { continue };
        settings += 1;
        let better = if higher { o >= bv } else { o <= bv };
        let ok = better || column.tolerance.holds(o, bv);
        held += usize::from(ok);
        let relation = if better {
            "as good as or better than".to_string()
        } else {
            format!(
                "{} {} short of",
                if ok { "within" } else { "more than" },
                column.tolerance.describe()
            )
        };
        push(
            &mut text,
            format!(
                "{}: {} ({} {o:.d$} over {seeds} seed(s), {relation} the best of the others, {} {bv:.d$})",
                setting.label,
                if ok { "holds" } else { "does not hold" },
                exp.methods[ours].label,
                exp.methods[b].label
            ),
        );
    }
    (settings > 0).then_some(Outcome {
        held,
        settings,
        text,
    })
}

/// "`method`'s value is at most `bound`", on every seed of every setting.
fn at_most(
    exp: &Experiment,
    column: &Column,
    method: &str,
    bound: f64,
    stat: &dyn Fn(usize, usize, Metric) -> Values,
) -> Option<Outcome> {
    let ours = method_index(exp, method)?;
    let d = digits(column.metric);
    let (mut held, mut settings, mut text) = (0, 0, String::new());
    for (s, setting) in exp.settings.iter().enumerate() {
        let Values { values, runs } = stat(s, ours, column.metric);
        if runs == 0 {
            continue;
        }
        settings += 1;
        let missing = runs - values.len();
        let ok = missing == 0 && values.iter().all(|v| *v <= bound);
        held += usize::from(ok);
        let shown: Vec<String> = values.iter().map(|v| format!("{v:.d$}")).collect();
        let never = match missing {
            0 => String::new(),
            n => format!(", never on {n} of {runs} seed(s)"),
        };
        push(
            &mut text,
            format!(
                "{}: {} ({} {}{never}; the paper: about {bound})",
                setting.label,
                if ok { "holds" } else { "does not hold" },
                column.header,
                if shown.is_empty() {
                    "none".to_string()
                } else {
                    shown.join(", ")
                },
            ),
        );
    }
    (settings > 0).then_some(Outcome {
        held,
        settings,
        text,
    })
}

/// A grid point: its x, the mean over seeds and the mean's standard error.
type Point = (f64, f64, f64);

/// "The value rises along every row of the grid" (first method): a fall
/// larger than twice the standard error of the difference of the two means
/// breaks it; a smaller one is listed as within the noise.
fn rises(
    exp: &Experiment,
    column: &Column,
    stat: &dyn Fn(usize, usize, Metric) -> Values,
) -> Option<Outcome> {
    let d = digits(column.metric);
    let mut rows: Vec<(&str, Vec<Point>)> = Vec::new();
    for (s, setting) in exp.settings.iter().enumerate() {
        let Some((row, x)) = &setting.grid else {
            continue;
        };
        let values = stat(s, 0, column.metric).values;
        if values.is_empty() {
            continue;
        }
        let (mean, std) = mean_std(&values);
        let point = (*x, mean, std / (values.len() as f64).sqrt());
        match rows.iter_mut().find(|(r, _)| r == row) {
            Some((_, points)) => points.push(point),
            None => rows.push((row.as_str(), vec![point])),
        }
    }
    let (mut held, mut text) = (0, String::new());
    for (row, points) in &mut rows {
        points.sort_by(|a, b| a.0.total_cmp(&b.0));
        let (mut falls, mut noise) = (Vec::new(), Vec::new());
        for w in points.windows(2) {
            let ((x0, m0, e0), (x1, m1, e1)) = (w[0], w[1]);
            if m1 >= m0 {
                continue;
            }
            let dip = format!("{m1:.d$} at {x1} after {m0:.d$} at {x0}");
            if m0 - m1 > 2.0 * e0.hypot(e1) {
                falls.push(dip);
            } else {
                noise.push(dip);
            }
        }
        held += usize::from(falls.is_empty());
        let values: Vec<String> = points.iter().map(|p| format!("{:.d$}", p.1)).collect();
        let mut line = format!("{row}: {}", values.join(", "));
        if !falls.is_empty() {
            let _ = write!(line, ", falls: {}", falls.join(", "));
        }
        if !noise.is_empty() {
            let _ = write!(
                line,
                ", dips within twice the standard error: {}",
                noise.join(", ")
            );
        }
        push(&mut text, line);
    }
    (!rows.is_empty()).then_some(Outcome {
        held,
        settings: rows.len(),
        text,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reproduce::harness::{
        Claim, Field, Method, POINTS, PaperClaim, Setting, Table, config_file,
    };

    fn experiment(checks: Vec<Check>) -> Experiment {
        let cfg = config_file!("ifca-rotated-mnist.toml");
        let setting = |key: &str, row: &str, x: f64| Setting {
            key: key.into(),
            label: key.to_uppercase(),
            grid: Some((row.into(), x)),
            ..Default::default()
        };
        let accuracy = Metric::Final(Field::TestAccuracy);
        let round = Metric::SettledAt(Field::Misclustering);
        Experiment {
            settings: vec![setting("a", "r", 1.0), setting("b", "r", 2.0)],
            methods: vec![
                Method::new("ours", "ours", cfg),
                Method::new("best", "best", cfg),
                Method::new("weak", "weak", cfg),
            ],
            tables: vec![
                Table {
                    columns: vec![Column::new("accuracy", accuracy, POINTS)],
                    ..Default::default()
                },
                Table {
                    columns: vec![Column::new("round", round, POINTS)],
                    ..Default::default()
                },
            ],
            claims: checks
                .into_iter()
                .map(|check| PaperClaim {
                    quote: "a claim",
                    source: "Table 1",
                    check,
                })
                .collect(),
            ..Default::default()
        }
    }

    /// Setting A: ours 90, best 91, weak 50; B: ours 80, best 95, weak 50.
    /// Rounds: ours 3 and 5 in A; in B 4 and one run that never settles.
    fn stat(s: usize, m: usize, metric: Metric) -> Values {
        let values = match (metric, s, m) {
            (Metric::SettledAt(_), 0, 0) => vec![3.0, 5.0],
            (Metric::SettledAt(_), 1, 0) => vec![4.0],
            (Metric::SettledAt(_), _, _) => vec![],
            (_, 0, 0) => vec![89.0, 91.0],
            (_, 1, 0) => vec![80.0, 80.0],
            (_, 0, 1) => vec![91.0],
            (_, 1, 1) => vec![95.0],
            _ => vec![50.0],
        };
        Values { values, runs: 2 }
    }

    #[test]
    fn each_claim_gets_its_verdict_from_the_runs() {
        let exp = experiment(vec![
            Check::Competitive {
                table: 0,
                method: "ours",
                against: &["best", "weak"],
            },
            Check::Ordering {
                table: 0,
                claim: Claim {
                    method: "ours",
                    like: None,
                    beats: &["weak"],
                },
            },
            Check::AtMost {
                table: 1,
                method: "ours",
                bound: 30.0,
            },
            Check::Rises { table: 0 },
            Check::NotChecked("no such data here"),
        ]);
        let text = section(&exp, &stat).expect("claims declared");
        let lines: Vec<&str> = text.lines().filter(|l| l.starts_with("- ")).collect();
        assert_eq!(lines.len(), 5, "{text}");
        assert!(
            lines[0].contains("**holds in some settings only**"),
            "{}",
            lines[0]
        );
        assert!(
            lines[0].contains("A: holds (ours 90.00 over 2 seed(s), within 1.5 points short of the best of the others, best 91.00)"),
            "{}",
            lines[0]
        );
        assert!(
            lines[0].contains("B: does not hold (ours 80.00"),
            "{}",
            lines[0]
        );
        assert!(
            lines[1].contains(
                "**holds**: A: holds (ours 90.00 over 2 seed(s); better than weak 50.00)"
            ),
            "{}",
            lines[1]
        );
        assert!(
            lines[2].contains("**holds in some settings only**"),
            "{}",
            lines[2]
        );
        assert!(
            lines[2].contains("A: holds (round 3.0, 5.0;"),
            "{}",
            lines[2]
        );
        assert!(
            lines[2].contains("B: does not hold (round 4.0, never on 1 of 2 seed(s)"),
            "{}",
            lines[2]
        );
        // The first method's accuracy along row r: 90 then 80, a fall beyond the noise.
        assert!(
            lines[3]
                .contains("**does not hold**: r: 90.00, 80.00, falls: 80.00 at 2 after 90.00 at 1"),
            "{}",
            lines[3]
        );
        assert!(
            lines[4].contains("**not checked**: no such data here"),
            "{}",
            lines[4]
        );
    }

    #[test]
    fn a_claim_without_runs_is_not_checked_and_no_claims_no_section() {
        let exp = experiment(vec![Check::Competitive {
            table: 0,
            method: "ours",
            against: &["best"],
        }]);
        let none = |_: usize, _: usize, _: Metric| Values {
            values: vec![],
            runs: 0,
        };
        let text = section(&exp, &none).expect("claims declared");
        assert!(
            text.contains("**not checked**: the methods it compares have no finished runs yet"),
            "{text}"
        );
        assert!(section(&experiment(vec![]), &stat).is_none());
    }
}
