//! The tiny synthetic grid every harness test runs, and helpers to read what
//! it leaves.

use std::path::{Path, PathBuf};
use std::time::SystemTime;

use fedcluster_cli::reproduce::harness::{
    Check, Claim, Column, ConfigFile, Experiment, Field, Layout, Method, Metric, Paper, PaperClaim,
    Plot, RunOptions, Setting, TEN_PERCENT, Table, Tolerance,
};

pub const BASE: ConfigFile = ConfigFile {
    path: "test.toml",
    text: r#"
seed = 1
rounds = 30
[data]
kind = "ifca-synthetic"
clients = 12
points_per_client = 40
test_points_per_client = 10
dim = 8
clusters = 2
noise_std = 0.1
separation = 1.0
[model]
kind = "linear"
[algorithm]
name = "ifca"
clusters = 2
lr = 0.2
restarts = 2
init = { kind = "gaussian", std = 1.0 }
"#,
};

pub fn setting(key: &str, noise: f64) -> Setting {
    Setting {
        key: key.into(),
        label: format!("σ = {noise}"),
        overrides: vec![format!("data.noise_std={noise}")],
        seed_offset: 0,
        paper: None,
        grid: None,
    }
}

pub fn method(
    key: &'static str,
    label: &'static str,
    overrides: &[&str],
    paper: &[Option<f64>],
) -> Method {
    Method {
        key,
        label,
        config: BASE,
        overrides: overrides.iter().map(|s| s.to_string()).collect(),
        per_setting: Vec::new(),
        paper: vec![Paper::plain(Metric::Final(Field::Misclustering), paper)],
        tuned: None,
        gaps: Vec::new(),
    }
}

pub fn experiment(seeds: usize, rounds: usize) -> Experiment {
    Experiment {
        name: "test-grid",
        title: "A tiny grid".into(),
        protocol: "IFCA and a global model on a small mixture.".into(),
        settings: vec![setting("low", 0.1), setting("high", 0.3)],
        methods: vec![
            method("ifca", "IFCA", &[], &[Some(0.0), Some(0.0)]),
            method(
                "global",
                "global",
                &["algorithm={ name = \"global\", aggregation = \"gradient\", lr = 0.2 }"],
                &[Some(0.5), None],
            ),
            method(
                "diverging",
                "IFCA at lr 1e6",
                &["algorithm.lr=1000000.0"],
                &[None, None],
            ),
        ],
        seeds,
        overrides: vec![format!("rounds={rounds}")],
        from_data: None,
        tables: vec![Table {
            title: "Misclustering".into(),
            columns: vec![
                Column {
                    header: "misclustering".into(),
                    metric: Metric::Final(Field::Misclustering),
                    tolerance: Tolerance::Absolute(0.015),
                },
                Column {
                    header: "parameter error".into(),
                    metric: Metric::BestReplica(Field::ParamError),
                    tolerance: TEN_PERCENT,
                },
            ],
            layout: Layout::Long,
            no_paper: None,
            claim: None,
        }],
        plots: vec![Plot::Curves {
            field: Field::ParamError,
            log10: true,
        }],
        curves: true,
        last_round_only: false,
        notes: Vec::new(),
        claims: vec![PaperClaim {
            quote: "IFCA finds the clusters a global model cannot",
            source: "the fixture's Table",
            check: Check::Ordering {
                table: 0,
                claim: Claim {
                    method: "ifca",
                    like: None,
                    beats: &["global"],
                },
            },
        }],
        smoke: false,
        tune_by: None,
        report_absent_data: false,
        held_out: None,
    }
}

pub fn temp_dir(tag: &str) -> PathBuf {
    let dir =
        std::env::temp_dir().join(format!("fedcluster-reproduce-{}-{tag}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

pub fn options(out: &Path) -> RunOptions {
    RunOptions {
        out: out.to_path_buf(),
        threads: 1,
        ..Default::default()
    }
}

/// Every finished run directory under `out` and the time it was written (a
/// `seed-N.partial` being saved when the run was killed is not finished).
pub fn finished(out: &Path) -> Vec<(PathBuf, SystemTime)> {
    let mut runs = Vec::new();
    let Ok(settings) = std::fs::read_dir(out.join("runs")) else {
        return runs;
    };
    for s in settings.flatten() {
        for m in std::fs::read_dir(s.path()).unwrap().flatten() {
            for seed in std::fs::read_dir(m.path()).unwrap().flatten() {
                if seed.path().extension().is_some_and(|e| e == "partial") {
                    continue;
                }
                let config = seed.path().join("config.toml");
                if let Ok(meta) = std::fs::metadata(&config) {
                    runs.push((seed.path(), meta.modified().unwrap()));
                }
            }
        }
    }
    runs.sort();
    runs
}
