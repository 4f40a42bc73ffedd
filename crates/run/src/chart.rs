//! SVG line charts: one panel or several stacked, each with its own y axis,
//! for a run directory's `curves.svg` ([`crate::rundir::curves`]) and the
//! reproduction reports' plots.
//!
//! Lines that may lie on one another stay apart: each series has its own
//! colour (the Okabe-Ito palette, readable with colour blindness), dash
//! pattern and marker shape; markers sit on at most [`MARKERS`] evenly spaced
//! points, shifted along the line per series, and the markers of different
//! series at one point sit side by side. Axes are named by the caller and span
//! the data ([`Scale`]). The output is a function of the input alone (no
//! timestamps, fixed size and fonts), so a run's files stay byte-identical for
//! the same config and seed.

use std::fmt::Display;

use anyhow::{Result, anyhow};
use plotters::coord::Shift;
use plotters::coord::ranged1d::Ranged;
use plotters::coord::types::RangedCoordf64;
use plotters::element::DashedPathElement;
use plotters::prelude::*;

/// The most markers a series shows (every point when it has no more).
pub const MARKERS: usize = 12;

/// The most points a line is drawn through: a longer series is thinned to
/// every n-th point (and its last), finer than the chart's pixels.
pub const MAX_LINE_POINTS: usize = 1000;

/// One line of a panel.
pub struct Series {
    /// Legend label.
    pub label: String,
    /// Points, in x order; non-finite values are left out.
    pub points: Vec<(f64, f64)>,
}

/// How a panel's y axis spans its data.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Scale {
    /// The data's range, with a margin.
    Fit,
    /// A fraction in [0, 1]: from 0 to the data's largest value (at least
    /// 0.1), with a margin, at most 1 (so 0 and small values are told apart).
    Fraction,
    /// [`Scale::Fit`], on a log scale where every value is positive and they
    /// span more than two decades (a training loss).
    Auto,
    /// A fixed range (a probability: 0 to 1), widened to the data if it
    /// strays outside.
    Fixed(f64, f64),
}

/// One chart of a figure.
pub struct Panel {
    /// Caption above the chart.
    pub title: String,
    /// The x axis' name.
    pub x_label: String,
    /// The y axis' name (" (log scale)" is added when the scale is).
    pub y_label: String,
    /// How the y axis spans the data.
    pub scale: Scale,
    /// The x axis' range (panels of one figure share it); `None`: the data's.
    pub x_range: Option<(f64, f64)>,
    /// The lines; an empty panel says it has nothing to show.
    pub series: Vec<Series>,
}

/// A figure of `panels` stacked top to bottom, each `size` pixels (width,
/// height), as SVG text.
pub fn svg(panels: &[Panel], size: (u32, u32)) -> Result<String> {
    let mut text = String::new();
    {
        let rows = u32::try_from(panels.len().max(1)).unwrap_or(1);
        let root = SVGBackend::with_string(&mut text, (size.0, size.1 * rows)).into_drawing_area();
        root.fill(&WHITE).map_err(failed)?;
        for (area, panel) in root.split_evenly((panels.len(), 1)).iter().zip(panels) {
            draw_panel(area, panel)?;
        }
        root.present().map_err(failed)?;
    }
    Ok(text)
}

fn failed(e: impl Display) -> anyhow::Error {
    anyhow!("cannot draw the chart: {e}")
}

/// Colours of the Okabe-Ito palette, without its yellow (faint on white).
const COLOURS: [RGBColor; 7] = [
    RGBColor(0, 114, 178),
    RGBColor(213, 94, 0),
    RGBColor(0, 158, 115),
    RGBColor(204, 121, 167),
    RGBColor(230, 159, 0),
    RGBColor(86, 180, 233),
    RGBColor(0, 0, 0),
];

/// Dash and gap lengths in pixels of series `i` (`None`: solid).
fn dashes(i: usize) -> Option<(u32, u32)> {
    match i % 3 {
        0 => None,
        1 => Some((9, 5)),
        _ => Some((3, 4)),
    }
}

type Area<'a> = DrawingArea<SVGBackend<'a>, Shift>;

fn draw_panel(area: &Area<'_>, panel: &Panel) -> Result<()> {
    let series: Vec<Vec<(f64, f64)>> = (panel.series.iter())
        .map(|s| {
            let finite = s.points.iter().copied();
            finite
                .filter(|(x, y)| x.is_finite() && y.is_finite())
                .collect()
        })
        .collect();
    let mut builder = ChartBuilder::on(area);
    builder
        .caption(&panel.title, ("sans-serif", 19))
        .margin(14)
        .x_label_area_size(44)
        .y_label_area_size(72);
    let xs = series.iter().flatten().map(|p| p.0);
    let ys: Vec<f64> = series.iter().flatten().map(|p| p.1).collect();
    let (labels, descriptions) = (("sans-serif", 14), ("sans-serif", 15));
    let tick = |v: &f64| short(*v);
    if ys.is_empty() {
        let chart = builder
            .build_cartesian_2d(0.0..1.0, 0.0..1.0)
            .map_err(failed)?;
        let plot = chart.plotting_area();
        let style = ("sans-serif", 16).into_font().color(&BLACK.mix(0.6));
        (plot.draw(&Text::new("not measured in this run", (0.35, 0.5), style))).map_err(failed)?;
        return Ok(());
    }
    let x = match panel.x_range {
        Some((lo, hi)) => padded([lo, hi].into_iter()),
        None => padded(xs),
    };
    let log = panel.scale == Scale::Auto && spans_decades(&ys);
    if log {
        let (lo, hi) = ys
            .iter()
            .fold((f64::MAX, f64::MIN), |(a, b), &v| (a.min(v), b.max(v)));
        let y = (lo / 1.25)..(hi * 1.25);
        let mut chart = builder
            .build_cartesian_2d(x, y.log_scale())
            .map_err(failed)?;
        let y_label = format!("{} (log scale)", panel.y_label);
        let mut mesh = chart.configure_mesh();
        mesh.x_desc(&panel.x_label).y_desc(y_label);
        mesh.label_style(labels).axis_desc_style(descriptions);
        mesh.x_label_formatter(&tick).y_label_formatter(&tick);
        mesh.draw().map_err(failed)?;
        draw_lines(&mut chart, panel, &series)
    } else {
        let y = y_range(panel.scale, &ys);
        let mut chart = builder.build_cartesian_2d(x, y).map_err(failed)?;
        let mut mesh = chart.configure_mesh();
        mesh.x_desc(&panel.x_label).y_desc(&panel.y_label);
        mesh.label_style(labels).axis_desc_style(descriptions);
        mesh.x_label_formatter(&tick).y_label_formatter(&tick);
        mesh.draw().map_err(failed)?;
        draw_lines(&mut chart, panel, &series)
    }
}

/// A tick label: at most four decimals, no trailing zeros (a value within
/// rounding error of 0 is 0).
fn short(v: f64) -> String {
    if v.abs() < 1e-12 {
        return "0".into();
    }
    if v.abs() >= 1e5 || v.abs() < 1e-3 {
        return format!("{v:.1e}");
    }
    let text = format!("{v:.4}");
    let text = text.trim_end_matches('0').trim_end_matches('.');
    if text == "-0" {
        "0".into()
    } else {
        text.into()
    }
}

/// Whether positive `ys` span more than two decades.
fn spans_decades(ys: &[f64]) -> bool {
    let (lo, hi) = ys
        .iter()
        .fold((f64::MAX, f64::MIN), |(a, b), &v| (a.min(v), b.max(v)));
    lo > 0.0 && hi / lo > 100.0
}

/// The range of `values` with a 5% margin (a unit wide around a single value).
fn padded(values: impl Iterator<Item = f64>) -> std::ops::Range<f64> {
    let (lo, hi) = values.fold((f64::MAX, f64::MIN), |(a, b), v| (a.min(v), b.max(v)));
    if lo > hi {
        return 0.0..1.0;
    }
    let pad = match (hi > lo, hi.abs()) {
        (true, _) => 0.05 * (hi - lo),
        (false, 0.0) => 0.5,
        (false, size) => 0.1 * size,
    };
    (lo - pad)..(hi + pad)
}

fn y_range(scale: Scale, ys: &[f64]) -> std::ops::Range<f64> {
    let (lo, hi) = ys
        .iter()
        .fold((f64::MAX, f64::MIN), |(a, b), &v| (a.min(v), b.max(v)));
    match scale {
        Scale::Fit | Scale::Auto => padded(ys.iter().copied()),
        Scale::Fraction => {
            let top = hi.clamp(0.1, 1.0);
            (lo.min(0.0) - 0.03 * top)..(hi.max(top) + 0.05 * top)
        }
        Scale::Fixed(a, b) => {
            let (a, b) = (a.min(lo), b.max(hi));
            let pad = 0.03 * (b - a).max(f64::MIN_POSITIVE);
            (a - pad)..(b + pad)
        }
    }
}

/// `points` thinned to at most [`MAX_LINE_POINTS`] (every n-th, and the last).
fn thinned(points: &[(f64, f64)]) -> Vec<(f64, f64)> {
    let step = points.len().div_ceil(MAX_LINE_POINTS).max(1);
    let mut kept: Vec<(f64, f64)> = points.iter().copied().step_by(step).collect();
    if let Some(&last) = points.last()
        && kept.last() != Some(&last)
    {
        kept.push(last);
    }
    kept
}

/// Where series `i` of `count` puts its markers among `n` points: every point
/// when there are at most [`MARKERS`], else [`MARKERS`] evenly spaced ones,
/// shifted by the series' share of the spacing.
fn marker_indices(n: usize, i: usize, count: usize) -> Vec<usize> {
    if n <= MARKERS {
        return (0..n).collect();
    }
    let spacing = n as f64 / MARKERS as f64;
    let shift = spacing * i as f64 / count.max(1) as f64;
    (0..MARKERS)
        .map(|m| ((m as f64 * spacing + shift) as usize).min(n - 1))
        .collect()
}

/// How many pixels series `i` of `count` moves its markers sideways, so that
/// the markers of lines lying on one another sit side by side (6 px apart,
/// centred on the point).
fn dodge(i: usize, count: usize) -> i32 {
    let (i, count) = (i as i32, count.min(8) as i32);
    3 * (2 * i.min(count - 1) + 1 - count)
}

/// Marker `i`'s shape (circle, triangle, square, cross) at a backend offset.
fn marker<DB: DrawingBackend>(
    i: usize,
    at: (i32, i32),
    style: ShapeStyle,
) -> DynElement<'static, DB, (i32, i32)> {
    let (x, y) = at;
    match i % 4 {
        0 => Circle::new((x, y), 4, style).into_dyn(),
        1 => TriangleMarker::new((x, y), 5, style).into_dyn(),
        2 => Rectangle::new([(x - 4, y - 4), (x + 4, y + 4)], style).into_dyn(),
        _ => Cross::new((x, y), 4, style.stroke_width(2)).into_dyn(),
    }
}

fn draw_lines<'a, Y>(
    chart: &mut ChartContext<'a, SVGBackend<'a>, Cartesian2d<RangedCoordf64, Y>>,
    panel: &Panel,
    series: &[Vec<(f64, f64)>],
) -> Result<()>
where
    Y: Ranged<ValueType = f64>,
{
    let count = series.len();
    let top_heavy = legend_below(chart, series);
    for (i, (points, s)) in series.iter().zip(&panel.series).enumerate() {
        if points.is_empty() {
            continue;
        }
        let colour = COLOURS[i % COLOURS.len()];
        let line = colour.stroke_width(2);
        let line_points = thinned(points);
        let drawn = match dashes(i) {
            None => chart.draw_series(LineSeries::new(line_points, line)),
            Some((dash, gap)) => {
                chart.draw_series(DashedLineSeries::new(line_points, dash, gap, line))
            }
        };
        let anno = drawn.map_err(failed)?;
        if count > 1 {
            anno.label(s.label.clone()).legend(move |(x, y)| {
                // Offsets from the legend entry's anchor (x, y).
                let path = vec![(0, 0), (24, 0)];
                let line: DynElement<'static, _, _> = match dashes(i) {
                    None => PathElement::new(path, line).into_dyn(),
                    Some((dash, gap)) => DashedPathElement::new(path, dash, gap, line).into_dyn(),
                };
                EmptyElement::at((x, y)) + line + marker(i, (12, 0), colour.filled())
            });
        }
        let style = if i % 4 == 3 {
            colour.into()
        } else {
            colour.filled()
        };
        let dodge = dodge(i, count);
        let marks = marker_indices(points.len(), i, count)
            .into_iter()
            .map(|m| EmptyElement::at(points[m]) + marker(i, (dodge, 0), style));
        chart.draw_series(marks).map_err(failed)?;
    }
    if count > 1 {
        let position = if top_heavy {
            SeriesLabelPosition::LowerRight
        } else {
            SeriesLabelPosition::UpperRight
        };
        chart
            .configure_series_labels()
            .position(position)
            .label_font(("sans-serif", 14))
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK.mix(0.5))
            .draw()
            .map_err(failed)?;
    }
    Ok(())
}

/// Whether the right third of the chart has its data in the upper half (so
/// the legend goes to the lower right, where it hides nothing).
fn legend_below<Y: Ranged<ValueType = f64>>(
    chart: &ChartContext<'_, SVGBackend<'_>, Cartesian2d<RangedCoordf64, Y>>,
    series: &[Vec<(f64, f64)>],
) -> bool {
    let (x_range, y_range) = (chart.x_range(), chart.y_range());
    let right = x_range.start + 2.0 * (x_range.end - x_range.start) / 3.0;
    let area = chart.plotting_area();
    let middle = (area.get_pixel_range().1.start + area.get_pixel_range().1.end) / 2;
    let (mut upper, mut lower) = (0usize, 0usize);
    for &(x, y) in series.iter().flatten().filter(|p| p.0 >= right) {
        let y = y.clamp(
            y_range.start.min(y_range.end),
            y_range.start.max(y_range.end),
        );
        if area.map_coordinate(&(x, y)).1 < middle {
            upper += 1;
        } else {
            lower += 1;
        }
    }
    upper > lower
}

#[cfg(test)]
mod tests {
    use super::*;

    fn curve(label: &str, f: impl Fn(f64) -> f64) -> Series {
        Series {
            label: label.into(),
            points: (0..50).map(|i| (i as f64, f(i as f64))).collect(),
        }
    }

    #[test]
    fn the_same_input_draws_the_same_bytes() {
        let panels = || {
            vec![
                Panel {
                    title: "loss".into(),
                    x_label: "round".into(),
                    y_label: "training loss".into(),
                    scale: Scale::Auto,
                    x_range: None,
                    series: vec![curve("a", |x| 1000.0 * (-x / 5.0).exp() + 0.01)],
                },
                Panel {
                    title: "empty".into(),
                    x_label: "round".into(),
                    y_label: "test accuracy".into(),
                    scale: Scale::Fit,
                    x_range: Some((1.0, 50.0)),
                    series: vec![],
                },
            ]
        };
        let a = svg(&panels(), (600, 300)).unwrap();
        assert_eq!(a, svg(&panels(), (600, 300)).unwrap());
        assert!(a.contains("training loss (log scale)"), "{a}");
        assert!(a.contains("not measured in this run"));
    }

    #[test]
    fn identical_lines_stay_apart_by_dash_and_marker() {
        let panel = Panel {
            title: "two".into(),
            x_label: "x".into(),
            y_label: "y".into(),
            scale: Scale::Fixed(0.0, 1.0),
            x_range: None,
            series: vec![curve("first", |_| 0.2), curve("second", |_| 0.2)],
        };
        let text = svg(&[panel], (600, 400)).unwrap();
        assert!(text.contains("first") && text.contains("second"));
        // The second line is dashed: many short segments rather than one polyline.
        assert!(text.matches("<polyline").count() > 10, "{text}");
    }

    #[test]
    fn ranges_fit_the_data() {
        assert_eq!(y_range(Scale::Fixed(0.0, 1.0), &[0.2, 0.3]), -0.03..1.03);
        let r = y_range(Scale::Fraction, &[0.0, 0.0]);
        assert!(r.start < 0.0 && r.end > 0.1 && r.end < 0.2, "{r:?}");
        let r = y_range(Scale::Fit, &[0.9, 0.95]);
        assert!(r.start > 0.89 && r.end < 0.96, "{r:?}");
        assert!(spans_decades(&[0.01, 5.0]) && !spans_decades(&[0.0, 5.0]));
        assert_eq!(padded([2.0].into_iter()), 1.8..2.2);
        assert_eq!(short(-2.8e-17), "0");
        assert_eq!(marker_indices(5, 1, 2), vec![0, 1, 2, 3, 4]);
        assert_eq!(
            (0..4).map(|i| dodge(i, 4)).collect::<Vec<_>>(),
            [-9, -3, 3, 9]
        );
        assert_eq!(dodge(0, 1), 0);
        let m = marker_indices(100, 1, 2);
        assert_eq!((m.len(), m[0]), (MARKERS, 4));
        let line = |n: usize| (0..n).map(|i| (i as f64, 0.0)).collect::<Vec<_>>();
        assert_eq!(thinned(&line(2500)).len(), 834); // every third: 0, 3, ..., 2499
        assert_eq!(thinned(&line(2501)).last(), Some(&(2500.0, 0.0)));
        assert_eq!(thinned(&line(1000)).len(), 1000);
        assert_eq!(
            (short(0.5), short(2.0), short(0.0001)),
            ("0.5".into(), "2".into(), "1.0e-4".into())
        );
    }
}
