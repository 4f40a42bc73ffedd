//! The numbers the README, docs/ and the hand-written reports quote from the
//! committed reproductions, read against the `results/<name>/results.csv`
//! they come from, so that a re-run that changes a result fails here until
//! the prose says the new number. (The harness's reports are generated from
//! the same runs and cannot drift; this covers what people wrote.)

use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// One quoted number: `file` holds `text`, which must contain the number as
/// the mean (± sample standard deviation) over the seeds of (`setting`,
/// `method`) in `results/<dir>/results.csv`, `column` times `scale`, with
/// `decimals` decimals; `seed` restricts it to one seed.
struct Quote {
    file: &'static str,
    text: &'static str,
    dir: &'static str,
    setting: &'static str,
    method: &'static str,
    seed: Option<u32>,
    column: &'static str,
    scale: f64,
    decimals: usize,
    with_std: bool,
}

/// A test accuracy in %, mean ± std over every seed, 2 decimals.
const fn accuracy(
    file: &'static str,
    text: &'static str,
    dir: &'static str,
    setting: &'static str,
    method: &'static str,
) -> Quote {
    Quote {
        file,
        text,
        dir,
        setting,
        method,
        seed: None,
        column: "test_accuracy",
        scale: 100.0,
        decimals: 2,
        with_std: true,
    }
}

/// The same for one seed's number, without a standard deviation.
const fn seed_one(
    file: &'static str,
    text: &'static str,
    dir: &'static str,
    setting: &'static str,
    method: &'static str,
) -> Quote {
    Quote {
        seed: Some(1),
        with_std: false,
        ..accuracy(file, text, dir, setting, method)
    }
}

const DOCS: &str = "docs/reproductions.md";
const README: &str = "README.md";
const IFCA: &str = "ifca-rotated-mnist";
const CFLMGD: &str = "cflmgd-rotated-mnist";
const SRFCA: &str = "srfca-mnist";

fn quotes() -> Vec<Quote> {
    let mut quotes = vec![
        Quote {
            decimals: 1,
            with_std: false,
            ..accuracy(
                README,
                "95.0% against the paper's 95.05",
                IFCA,
                "2400x100",
                "ifca",
            )
        },
        accuracy(DOCS, "IFCA 95.03 ± 0.02", IFCA, "2400x100", "ifca"),
        accuracy(DOCS, "global 88.46 ± 0.09", IFCA, "2400x100", "global"),
        accuracy(DOCS, "local 74.63 ± 0.02", IFCA, "2400x100", "local"),
        accuracy(DOCS, "IFCA 94.18 ± 0.01", IFCA, "4800x50", "ifca"),
        accuracy(DOCS, "global 86.62 ± 0.07", IFCA, "4800x50", "global"),
        accuracy(DOCS, "local 64.29 ± 0.02", IFCA, "4800x50", "local"),
        accuracy(DOCS, "IFCA 95.13 ± 0.64", IFCA, "1200x200", "ifca"),
        accuracy(DOCS, "global 89.56 ± 0.09", IFCA, "1200x200", "global"),
        accuracy(DOCS, "local 81.25 ± 0.05", IFCA, "1200x200", "local"),
        accuracy(DOCS, "CFL-MGD 97.69 ± 0.05", CFLMGD, "2400x100", "cflmgd"),
        accuracy(
            DOCS,
            "IFCA 95.03 ± 0.02 (3 seeds)",
            CFLMGD,
            "2400x100",
            "ifca",
        ),
        accuracy(DOCS, "FedAvg 88.46 ± 0.09", CFLMGD, "2400x100", "fedavg"),
        accuracy(
            DOCS,
            "not in the paper, 94.35 ± 0.05",
            CFLMGD,
            "2400x100",
            "fedavg-momentum",
        ),
        accuracy(DOCS, "SR-FCA 89.25 ± 0.07", SRFCA, "rotated", "srfca"),
        accuracy(DOCS, "IFCA 92.34 ± 1.17", SRFCA, "rotated", "ifca"),
        Quote {
            with_std: false,
            ..accuracy(
                DOCS,
                "Global 36.07% against",
                "srfca-shakespeare",
                "shakespeare",
                "global",
            )
        },
        Quote {
            with_std: false,
            ..accuracy(
                DOCS,
                "| FedSoft, K = 2 | 14.62 |",
                "srfca-shakespeare",
                "shakespeare",
                "fedsoft-k2",
            )
        },
        Quote {
            with_std: false,
            ..accuracy(
                DOCS,
                "| FedSoft, K = 3 | 14.62 |",
                "srfca-shakespeare",
                "shakespeare",
                "fedsoft-k3",
            )
        },
        Quote {
            with_std: false,
            ..accuracy(
                DOCS,
                "| SR-FCA | 36.13 |",
                "srfca-shakespeare",
                "shakespeare",
                "srfca",
            )
        },
        Quote {
            with_std: false,
            ..accuracy(
                DOCS,
                "| ONE_SHOT-IFCA | 42.93 |",
                "srfca-shakespeare",
                "shakespeare",
                "one-shot-ifca",
            )
        },
        Quote {
            with_std: false,
            ..accuracy(
                DOCS,
                "(as ONE_SHOT-IFCA's IFCA rounds) | 36.99 |",
                "srfca-shakespeare",
                "shakespeare",
                "global-every-client",
            )
        },
        Quote {
            with_std: false,
            ..accuracy(
                DOCS,
                "correlation clustering (as the public code) | 36.03 |",
                "srfca-shakespeare",
                "shakespeare",
                "srfca-correlation",
            )
        },
        Quote {
            with_std: false,
            ..accuracy(
                DOCS,
                "| FedSoft, K = 4 | 14.62 |",
                "srfca-shakespeare",
                "shakespeare",
                "fedsoft-k4",
            )
        },
        Quote {
            with_std: false,
            ..accuracy(
                DOCS,
                "| IFCA, K = 3 | 26.56 |",
                "srfca-shakespeare",
                "shakespeare",
                "ifca-k3",
            )
        },
        Quote {
            with_std: false,
            ..accuracy(
                DOCS,
                "| FedSoft, K = 1 | 14.62 |",
                "srfca-shakespeare",
                "shakespeare",
                "fedsoft-k1",
            )
        },
        Quote {
            with_std: false,
            ..accuracy(
                DOCS,
                "| IFCA, K = 4 | 26.56 |",
                "srfca-shakespeare",
                "shakespeare",
                "ifca-k4",
            )
        },
        Quote {
            with_std: false,
            ..accuracy(
                DOCS,
                "ends at\n45.90, within a point",
                "srfca-shakespeare",
                "shakespeare",
                "ifca-k2-chained",
            )
        },
    ];
    // The issue-45 rows: IFCA at CFL-MGD's effective step, SR-FCA like for like.
    let step_note =
        "crates/cli/src/reproduce/experiments/cflmgd_rotated_mnist_against_the_paper.md";
    for file in [DOCS, step_note] {
        let text = if file == DOCS {
            "96.06% after round 100"
        } else {
            "it reaches 96.06%"
        };
        quotes.push(Quote {
            with_std: false,
            ..accuracy(file, text, CFLMGD, "2400x100", "ifca-step")
        });
    }
    for (method, setting, text) in [
        ("srfca-trained", "rotated", "(93.11 against 93.83)"),
        ("one-shot-ifca", "rotated", "(93.11 against 93.83)"),
        ("srfca-trained", "inverted", "(93.68 against 95.47)"),
        ("global", "inverted", "(93.68 against 95.47)"),
    ] {
        quotes.push(Quote {
            with_std: false,
            ..accuracy(DOCS, text, SRFCA, setting, method)
        });
    }
    // Table I at seed 1, the docs' first table.
    for (setting, method, text) in [
        ("4800x50", "ifca", "| IFCA | (4800, 50) | 94.17%"),
        ("2400x100", "ifca", "| IFCA | (2400, 100) | 95.01%"),
        ("1200x200", "ifca", "| IFCA | (1200, 200) | 95.51%"),
        ("4800x50", "global", "| global | (4800, 50) | 86.69%"),
        ("2400x100", "global", "| global | (2400, 100) | 88.55%"),
        ("1200x200", "global", "| global | (1200, 200) | 89.60%"),
        ("4800x50", "local", "| local | (4800, 50) | 64.27%"),
        ("2400x100", "local", "| local | (2400, 100) | 74.61%"),
        ("1200x200", "local", "| local | (1200, 200) | 81.28%"),
    ] {
        quotes.push(seed_one(DOCS, text, IFCA, setting, method));
    }
    // SR-FCA's Table 1 on inverted MNIST, as the docs list it.
    for (method, text) in [
        (
            "srfca",
            "| SR-FCA, after REFINE 2 (Algorithm 1's output) | 90.64 ± 0.11",
        ),
        (
            "srfca-trained",
            "| SR-FCA, then trained on its clusters (not in the paper) | 93.68 ± 0.10",
        ),
        ("ifca", "| IFCA | 94.26 ± 0.10"),
        ("one-shot-ifca", "| ONE_SHOT-IFCA | 94.63 ± 0.13"),
        ("fedsoft", "| FedSoft | 95.33 ± 0.14"),
        ("global", "| Global | 95.47 ± 0.19"),
        ("cfl", "| CFL (ε₁ = 0.1, ε₂ = 0.52) | 95.29 ± 0.15"),
        ("local", "| Local | 86.97 ± 0.07"),
        (
            "local-kmeans-centroids",
            "the public code scores them | 10.53 ± 0.59",
        ),
        (
            "local-kmeans",
            "then FedAvg per cluster (not the paper's) | 94.16 ± 0.15",
        ),
    ] {
        quotes.push(accuracy(DOCS, text, SRFCA, "inverted", method));
    }
    quotes
}

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// `results.csv` as rows of column name to value.
fn results(dir: &str) -> Vec<HashMap<String, String>> {
    let path = root().join("results").join(dir).join("results.csv");
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().expect("a header").split(',').collect();
    lines
        .map(|line| {
            let cells = line.split(',').map(String::from);
            header.iter().map(|h| h.to_string()).zip(cells).collect()
        })
        .collect()
}

/// The number as the quote should show it.
fn expected(q: &Quote) -> String {
    let values: Vec<f64> = results(q.dir)
        .iter()
        .filter(|r| r["setting"] == q.setting && r["method"] == q.method)
        .filter(|r| r["diverged"] == "false")
        .filter(|r| q.seed.is_none_or(|s| r["seed"] == s.to_string()))
        .map(|r| {
            let v: f64 = r[q.column].parse().expect("a number");
            v * q.scale
        })
        .collect();
    assert!(
        !values.is_empty(),
        "results/{}/results.csv has no run of {} / {}",
        q.dir,
        q.setting,
        q.method
    );
    let n = values.len() as f64;
    let mean = values.iter().sum::<f64>() / n;
    let d = q.decimals;
    if !q.with_std {
        return format!("{mean:.d$}");
    }
    let var = values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1.0).max(1.0);
    format!("{mean:.d$} ± {:.d$}", var.sqrt())
}

#[test]
fn every_quoted_number_is_the_one_in_results() {
    let mut wrong = Vec::new();
    for q in quotes() {
        let text = std::fs::read_to_string(root().join(q.file)).expect("the quoting file");
        let number = expected(&q);
        if !text.contains(q.text) {
            wrong.push(format!("{} no longer says {:?}", q.file, q.text));
        } else if !q.text.contains(&number) {
            wrong.push(format!(
                "{} says {:?}, but results/{}/results.csv gives {number} for {} / {}",
                q.file, q.text, q.dir, q.setting, q.method
            ));
        }
    }
    assert!(
        wrong.is_empty(),
        "quoted numbers off:\n{}",
        wrong.join("\n")
    );
}

#[test]
fn a_changed_result_is_caught() {
    // The check itself: a quote with a wrong number fails.
    let q = accuracy(DOCS, "IFCA 95.04 ± 0.02", IFCA, "2400x100", "ifca");
    assert_ne!(expected(&q), "95.04 ± 0.02");
    assert_eq!(expected(&q), "95.03 ± 0.02");
}
