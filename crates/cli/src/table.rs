//! Plain-text tables for the terminal.

/// Formats rows as an aligned table with a header rule.
pub fn render(header: &[&str], rows: &[Vec<String>]) -> String {
    let cols = header.len();
    let mut width: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
    for row in rows {
        for (w, cell) in width.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let line = |cells: Vec<&str>| {
        let padded: Vec<String> = cells
            .iter()
            .zip(&width)
            .map(|(c, w)| format!("{c:<w$}", w = *w))
            .collect();
        format!("| {} |\n", padded.join(" | "))
    };
    let mut out = line(header.to_vec());
    out.push_str(&format!(
        "|{}|\n",
        width
            .iter()
            .map(|w| "-".repeat(w + 2))
            .collect::<Vec<_>>()
            .join("|")
    ));
    for row in rows {
        let mut cells: Vec<&str> = row.iter().map(String::as_str).collect();
        cells.resize(cols, "");
        out.push_str(&line(cells));
    }
    out
}

/// A metric for display: `-` when absent, 4 significant decimals otherwise.
pub fn metric(v: Option<f64>) -> String {
    match v {
        None => "-".into(),
        Some(x) if x != 0.0 && (x.abs() < 1e-3 || x.abs() >= 1e5) => format!("{x:.3e}"),
        Some(x) => format!("{x:.4}"),
    }
}
