//! SVG line charts for reproduction reports: one panel of the run library's
//! [`fedcluster_run::chart`], written whole.

use std::path::Path;

use anyhow::{Context, Result};

use fedcluster_run::chart::{Panel, svg};
pub use fedcluster_run::chart::{Scale, Series};
use fedcluster_run::whole_file::write_whole;

/// Width and height of a report's chart, in pixels.
const SIZE: (u32, u32) = (720, 480);

/// Draws `series` as lines into an SVG file (written whole or not at all),
/// the y axis named `y_label` and spanning the data as `scale` says.
pub fn line_chart(
    path: &Path,
    title: &str,
    x_label: &str,
    y_label: &str,
    scale: Scale,
    series: Vec<Series>,
) -> Result<()> {
    let panel = Panel {
        title: title.into(),
        x_label: x_label.into(),
        y_label: y_label.into(),
        scale,
        x_range: None,
        series,
    };
    let text = svg(&[panel], SIZE).with_context(|| format!("cannot draw {}", path.display()))?;
    write_whole(path, text.as_bytes())
}
