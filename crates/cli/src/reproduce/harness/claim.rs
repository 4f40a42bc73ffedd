//! A figure's claim checked on our numbers. Papers that report an experiment
//! as curves make claims such as "ours is comparable to the oracle and better
//! than the baselines"; a [`Claim`] (declared with the report's tables, in
//! [`super::spec`]) states one, and [`Claim::verdict`] computes the report's
//! verdict from the finished runs, per setting, instead of it being written
//! by hand.

use std::fmt::Write as _;

use super::numbers::{digits, mean_std};
use super::spec::{Claim, Column, Experiment};

/// A claim checked over the settings: in how many it held, of how many
/// with runs, and each setting's numbers.
pub struct Outcome {
    /// Settings where it held.
    pub held: usize,
    /// Settings with runs to check it on.
    pub settings: usize,
    /// Each setting's outcome and numbers, `; `-separated.
    pub text: String,
}

impl Outcome {
    /// `all` when it held in every setting, `none` in none, else `some`.
    pub fn word<'a>(&self, all: &'a str, some: &'a str, none: &'a str) -> &'a str {
        match self.held {
            h if h == self.settings => all,
            0 => none,
            _ => some,
        }
    }
}

impl Claim {
    /// The verdict over every setting with runs of `method` and `like`:
    /// `reproduced` or `not reproduced`, each setting's numbers given.
    /// `values(setting, method index)` are the column's values over seeds.
    pub fn verdict(
        &self,
        exp: &Experiment,
        column: &Column,
        values: impl Fn(usize, usize) -> Vec<f64>,
    ) -> Option<String> {
        let outcome = self.check(exp, column, ["reproduced", "not reproduced"], values)?;
        Some(format!(
            "{}, the paper's claim checked on our {}: {}",
            outcome.word("reproduced", "partly reproduced", "not reproduced"),
            column.header,
            outcome.text
        ))
    }

    /// The claim checked per setting with runs of `method` and `like`
    /// (`None` where no setting has them), each setting's outcome named by
    /// `words` (held, not held).
    pub fn check(
        &self,
        exp: &Experiment,
        column: &Column,
        words: [&str; 2],
        values: impl Fn(usize, usize) -> Vec<f64>,
    ) -> Option<Outcome> {
        let index = |key: &str| exp.methods.iter().position(|m| m.key == key);
        let label = |i: usize| exp.methods[i].label;
        let ours = index(self.method)?;
        let like = match self.like {
            Some(key) => Some(index(key)?),
            None => None,
        };
        let higher = column.metric.higher_is_better();
        let better = |a: f64, b: f64| if higher { a > b } else { a < b };
        let d = digits(column.metric);
        let mean = |s, m| {
            let v: Vec<f64> = values(s, m);
            (!v.is_empty()).then(|| (mean_std(&v).0, v.len()))
        };
        let (mut held, mut settings, mut text) = (0, 0, String::new());
        for (s, setting) in exp.settings.iter().enumerate() {
            let Some((o, seeds)) = mean(s, ours) else {
                continue;
            };
            // The reference's mean, where the claim has one.
            let reference = match like {
                Some(l) => match mean(s, l) {
                    Some((v, _)) => Some((l, v)),
                    None => continue,
                },
                None => None,
            };
            settings += 1;
            let matches = reference.is_none_or(|(_, l)| column.tolerance.holds(o, l));
            let mut lost = Vec::new();
            let mut won = Vec::new();
            for key in self.beats {
                let Some(b) = index(key) else { continue };
                if let Some((v, _)) = mean(s, b) {
                    let entry = format!("{} {v:.d$}", label(b));
                    if better(o, v) {
                        won.push(entry)
                    } else {
                        lost.push(entry)
                    }
                }
            }
            let ok = matches && lost.is_empty();
            held += usize::from(ok);
            let against = match reference {
                Some((l, v)) => format!(
                    " against {} {v:.d$} over {seeds} seed(s), {} {}",
                    label(l),
                    if matches { "within" } else { "more than" },
                    column.tolerance.describe()
                ),
                None => format!(" over {seeds} seed(s)"),
            };
            let _ = write!(
                text,
                "{}{}: {} ({} {o:.d$}{against}{})",
                if text.is_empty() { "" } else { "; " },
                setting.label,
                if ok { words[0] } else { words[1] },
                label(ours),
                match (won.is_empty(), lost.is_empty()) {
                    (_, false) => format!("; not better than {}", lost.join(", ")),
                    (false, true) => format!("; better than {}", won.join(", ")),
                    (true, true) => String::new(),
                },
            );
        }
        (settings > 0).then_some(Outcome {
            held,
            settings,
            text,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reproduce::harness::{Field, Method, Metric, POINTS, Setting, config_file};

    fn experiment() -> Experiment {
        let cfg = config_file!("mixed-regression-mnist/two-phase.toml");
        Experiment {
            settings: vec![
                Setting {
                    key: "a".into(),
                    label: "A".into(),
                    ..Default::default()
                },
                Setting {
                    key: "b".into(),
                    label: "B".into(),
                    ..Default::default()
                },
            ],
            methods: vec![
                Method::new("ours", "ours", cfg),
                Method::new("oracle", "oracle", cfg),
                Method::new("fedavg", "FedAvg", cfg),
            ],
            ..Default::default()
        }
    }

    #[test]
    fn a_claim_holds_per_setting_by_the_tolerance_and_the_direction() {
        let exp = experiment();
        let column = Column::new("test error %", Metric::Final(Field::TestError), POINTS);
        let claim = Claim {
            method: "ours",
            like: Some("oracle"),
            beats: &["fedavg"],
        };
        // Setting A: ours 11 vs oracle 10 (within 1.5), FedAvg 20: holds.
        // Setting B: ours 30 vs oracle 12, FedAvg 25: fails both ways.
        let values = |s: usize, m: usize| -> Vec<f64> {
            match (s, m) {
                (0, 0) => vec![10.5, 11.5],
                (0, 1) => vec![10.0],
                (0, 2) => vec![20.0],
                (1, 0) => vec![30.0],
                (1, 1) => vec![12.0],
                _ => vec![25.0],
            }
        };
        let v = claim.verdict(&exp, &column, values).expect("runs exist");
        assert!(v.starts_with("partly reproduced"), "{v}");
        assert!(
            v.contains(
                "A: reproduced (ours 11.00 against oracle 10.00 over 2 seed(s), within 1.5 points"
            ),
            "{v}"
        );
        assert!(v.contains("better than FedAvg 20.00"), "{v}");
        assert!(
            v.contains(
                "B: not reproduced (ours 30.00 against oracle 12.00 over 1 seed(s), more than 1.5 points"
            ),
            "{v}"
        );
        assert!(v.contains("not better than FedAvg 25.00"), "{v}");
        // Accuracy is better higher: the same numbers read the other way.
        let acc = Column::new(
            "test accuracy %",
            Metric::Final(Field::TestAccuracy),
            POINTS,
        );
        let v = claim.verdict(&exp, &acc, values).expect("runs exist");
        assert!(
            v.contains("A: not reproduced") && v.contains("not better than FedAvg 20.00"),
            "{v}"
        );
        // Without a reference the claim is only the ordering.
        let beats_only = Claim {
            like: None,
            ..claim
        };
        let v = beats_only
            .verdict(&exp, &column, values)
            .expect("runs exist");
        assert!(v.starts_with("partly reproduced"), "{v}");
        assert!(
            v.contains("A: reproduced (ours 11.00 over 2 seed(s); better than FedAvg 20.00)"),
            "{v}"
        );
        assert!(
            v.contains(
                "B: not reproduced (ours 30.00 over 1 seed(s); not better than FedAvg 25.00)"
            ),
            "{v}"
        );
        // No runs of the reference: no verdict.
        assert_eq!(
            claim.verdict(&exp, &column, |_, m| if m == 1 {
                vec![]
            } else {
                vec![1.0]
            }),
            None
        );
    }
}
