//! `fedcluster reproduce clustered-benchmark` (issue 46): every clustered
//! method of the algorithm table that runs on image classification, and the
//! FedAvg, Local and oracle baselines, on the same small federations, each
//! method's hyper-parameters chosen by an equal-budget search on a
//! validation split, then [`TEST_SEEDS`] seeds of each chosen configuration
//! scored on held-out test data, ranked in one report.
//!
//! Two grids run through the harness, each resumable in its own directory:
//! 1. the search (`<out>/search/`): every candidate of every method
//!    (six each) on one federation per setting drawn with seed
//!    [`SEARCH_SEED_OFFSET`] + 1, each client's first [`Sizes::search`]
//!    samples split into training and validation; the candidate of highest
//!    mean validation accuracy (last round) wins, per setting;
//! 2. the test (`<out>/test/`): each setting's winners on seeds 1, 2, 3,
//!    each client's first samples training and the [`Sizes::test`] after
//!    them its test split (never seen by the search);
//!
//! then [`report`](super::clustered_benchmark_report) writes
//! `<out>/report.md` and `<out>/results.csv`.

use anyhow::Result;

use super::Protocol;
use super::clustered_benchmark_choice::Choice;
use super::clustered_benchmark_methods::{Family, families};
use super::clustered_benchmark_report as report;
use super::clustered_benchmark_settings::{
    ACCURACY, SEARCH_SEED_OFFSET, SETTINGS, Sizes, TEST_SEEDS,
};
use crate::reproduce::harness::{
    self, Column, Experiment, Field, Metric, POINTS, RunOptions, Table,
};

/// The columns of the harness's own per-grid reports.
fn tables(title: &str) -> Vec<Table> {
    vec![Table {
        title: title.into(),
        columns: vec![
            Column::new("accuracy %", ACCURACY, POINTS),
            Column::new("best round %", Metric::BestTestAccuracy, POINTS),
            Column::new("ARI", Metric::Final(Field::Ari), POINTS),
        ],
        no_paper: Some("our own benchmark: no paper numbers".into()),
        ..Default::default()
    }]
}

/// A grid over `families` (every candidate of each) and the settings.
fn grid(p: &Protocol, families: &[Family], search: bool) -> Experiment {
    let sizes = Sizes::of(p);
    let (phase, held_out, offset, seeds) = if search {
        ("search", sizes.search, SEARCH_SEED_OFFSET, 1)
    } else {
        ("test", sizes.test, 0, p.seeds.unwrap_or(TEST_SEEDS).max(1))
    };
    Experiment {
        name: "clustered-benchmark",
        title: format!("Clustered benchmark, {phase} grid"),
        protocol: format!(
            "The {phase} grid of `fedcluster reproduce clustered-benchmark`: each client's first \
             {} samples train and its next {} score it ({}); the benchmark's report is \
             ../report.md.",
            held_out.train,
            held_out.test,
            if search {
                "validation"
            } else {
                "test, never seen by the search"
            }
        ),
        settings: SETTINGS
            .iter()
            .map(|s| s.setting(p, sizes, offset))
            .collect(),
        methods: families.iter().flat_map(Family::methods).collect(),
        seeds,
        overrides: vec!["test_pick=\"personal\"".into(), "eval_every=4".into()],
        tables: tables(if search {
            "Validation accuracy of every candidate"
        } else {
            "Test accuracy of the chosen candidates"
        }),
        tune_by: Some(ACCURACY),
        held_out: Some(held_out),
        smoke: p.quick || p.rounds.is_some(),
        ..Default::default()
    }
}

/// The search grid.
pub fn search_grid(p: &Protocol) -> Experiment {
    grid(p, &families(), true)
}

/// The test grid (every candidate declared; only the chosen ones run).
pub fn test_grid(p: &Protocol) -> Experiment {
    grid(p, &families(), false)
}

/// Runs what is missing of the benchmark into `o.out` (the search, then the
/// chosen candidates on test) and writes its report; returns the report's
/// tables. `o.only_methods` names families (`ifca`), `o.only_settings`
/// settings; `o.only_seeds` test seeds.
pub fn run(p: &Protocol, o: &RunOptions) -> Result<String> {
    let families = families();
    if let Some(bad) = o
        .only_methods
        .iter()
        .find(|m| !families.iter().any(|f| f.key.eq_ignore_ascii_case(m)))
    {
        let known: Vec<&str> = families.iter().map(|f| f.key).collect();
        anyhow::bail!(
            "--only-method {bad}: clustered-benchmark has no such method; known: {}",
            known.join(", ")
        );
    }
    let picked = |f: &&Family| {
        o.only_methods.is_empty() || o.only_methods.iter().any(|m| f.key.eq_ignore_ascii_case(m))
    };
    let chosen_families: Vec<&Family> = families.iter().filter(picked).collect();
    let variant_keys = |f: &Family| -> Vec<String> {
        f.variants()
            .into_iter()
            .map(|v| v.key.to_string())
            .collect()
    };
    let search = search_grid(p);
    let search_out = o.out.join("search");
    let search_options = RunOptions {
        out: search_out.clone(),
        only_methods: chosen_families
            .iter()
            .flat_map(|f| variant_keys(f))
            .collect(),
        only_seeds: Vec::new(),
        ..o.clone()
    };
    harness::run(&search, &search_options)?;
    let searched = harness::finished_runs(&search, &search_out)?;
    let choice = Choice::new(&search, &searched);
    let test = test_grid(p);
    let test_out = o.out.join("test");
    for (si, setting) in SETTINGS.iter().enumerate() {
        let wanted = o.only_settings.is_empty()
            || o.only_settings
                .iter()
                .any(|s| s.eq_ignore_ascii_case(setting.key));
        let winners: Vec<String> = chosen_families
            .iter()
            .filter_map(|f| choice.winner(si, f.key))
            .map(|m| search.methods[m].key.to_string())
            .collect();
        if !wanted || winners.is_empty() {
            continue;
        }
        let options = RunOptions {
            out: test_out.clone(),
            only_settings: vec![setting.key.into()],
            only_methods: winners,
            ..o.clone()
        };
        harness::run(&test, &options)?;
    }
    let tested = harness::finished_runs(&test, &test_out)?;
    report::write(p, &o.out, &search, &searched, &choice, &test, &tested)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_cell_of_both_grids_parses() {
        let p = Protocol::default();
        for exp in [search_grid(&p), test_grid(&p)] {
            for si in 0..exp.settings.len() {
                for mi in 0..exp.methods.len() {
                    exp.run_config(si, mi, 1)
                        .unwrap_or_else(|e| panic!("{} {}: {e:#}", si, exp.methods[mi].key));
                }
            }
        }
    }
}
