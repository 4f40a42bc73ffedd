//! `curves.svg`: a run's training curves, drawn from the rows of its
//! `metrics.csv` (the selected replica's): the training loss, the test
//! accuracy (the test loss where the task has no accuracy) and the
//! misclustering of the training and test clients, one panel each, against the
//! round (counted from 1: the point at round r is the row `round = r - 1`).
//! A function of the rows alone, so it is byte-identical whenever
//! `metrics.csv` is (thread counts, `--resume`).

use anyhow::Result;

use fedcluster_sim::record::RoundRecord;

use crate::chart::{Panel, Scale, Series, svg};

/// The file's name in a run directory.
pub const CURVES_FILE: &str = "curves.svg";

/// Width and height of each of the three panels, in pixels.
const PANEL_SIZE: (u32, u32) = (720, 300);

/// `curves.svg` of the run `name` whose `metrics.csv` holds `records`.
pub fn curves_svg(name: &str, records: &[&RoundRecord]) -> Result<String> {
    let series = |label: &str, field: fn(&RoundRecord) -> Option<f64>| -> Option<Series> {
        let points: Vec<(f64, f64)> = (records.iter())
            .filter_map(|r| Some((r.round as f64 + 1.0, field(r)?)))
            .collect();
        (!points.is_empty()).then(|| Series {
            label: label.into(),
            points,
        })
    };
    let last = records.last().map_or(1.0, |r| r.round as f64 + 1.0);
    let panel = |title: String, y_label: &str, scale, series: Vec<Option<Series>>| Panel {
        title,
        x_label: "round".into(),
        y_label: y_label.into(),
        scale,
        x_range: Some((1.0, last)),
        series: series.into_iter().flatten().collect(),
    };
    let train = series("training loss", |r| r.train_loss);
    let test = match series("test accuracy", |r| r.test_accuracy) {
        Some(accuracy) => (accuracy, "test accuracy", "Test accuracy", Scale::Fit),
        None => match series("test loss", |r| r.test_loss) {
            Some(loss) => (loss, "test loss", "Test loss", Scale::Auto),
            None => {
                let none = Series {
                    label: String::new(),
                    points: Vec::new(),
                };
                (none, "test accuracy", "Test accuracy", Scale::Fit)
            }
        },
    };
    let (test, test_label, test_title, test_scale) = test;
    let test_title = match test.points.len() {
        1 if records.len() > 1 => {
            format!("{test_title} (measured after the last round only: set eval_every for a curve)")
        }
        _ => test_title.to_string(),
    };
    let panels = [
        panel(
            format!("{name}: training loss"),
            "training loss",
            Scale::Auto,
            vec![train],
        ),
        panel(test_title, test_label, test_scale, vec![Some(test)]),
        panel(
            "Misclustering (best one-to-one matching of models to true clusters)".into(),
            "fraction of clients misclustered",
            Scale::Fraction,
            vec![
                series("training clients", |r| r.misclustering),
                series("test clients", |r| r.test_misclustering),
            ],
        ),
    ];
    svg(&panels, PANEL_SIZE)
}
