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
//!
//! The settings are the five of the benchmark and, when their files are
//! given, rotated CIFAR-10 and FEMNIST ([`Lineup`]); each runs through both
//! grids one setting at a time, with the families that run there (the oracle
//! needs known clusters, which FEMNIST lacks) and on its own split (FEMNIST's
//! writers hold fewer samples).

use anyhow::Result;

use super::Protocol;
use super::clustered_benchmark_choice::Choice;
use super::clustered_benchmark_lineup::Lineup;
pub use super::clustered_benchmark_lineup::OptionalData;
use super::clustered_benchmark_methods::{Family, families};
use super::clustered_benchmark_report as report;
use super::clustered_benchmark_settings::{ACCURACY, SEARCH_SEED_OFFSET, Sizes, TEST_SEEDS};
use crate::reproduce::harness::{
    self, Column, Experiment, Field, HeldOut, Metric, POINTS, RunOptions, Table,
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

/// Which grid.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Phase {
    Search,
    Test,
}

impl Phase {
    /// The held-out split of `sizes` this grid scores on.
    fn held_out(self, sizes: Sizes) -> HeldOut {
        match self {
            Phase::Search => sizes.search,
            Phase::Test => sizes.test,
        }
    }
}

/// A grid over every candidate of every family and `lineup`'s settings,
/// scored on `held_out` (the harness splits every setting alike: a setting
/// of other sizes runs through a grid of its own split, which differs in
/// nothing else, so the grids share their directories and indices).
fn grid(p: &Protocol, lineup: &Lineup, phase: Phase, held_out: HeldOut) -> Experiment {
    let sizes = Sizes::of(p);
    let search = phase == Phase::Search;
    let (name, offset, seeds) = if search {
        ("search", SEARCH_SEED_OFFSET, 1)
    } else {
        ("test", 0, p.seeds.unwrap_or(TEST_SEEDS).max(1))
    };
    let own = sizes_of_others(p, lineup, phase);
    Experiment {
        name: "clustered-benchmark",
        title: format!("Clustered benchmark, {name} grid"),
        protocol: format!(
            "The {name} grid of `fedcluster reproduce clustered-benchmark`: each client's first \
             {} samples train and its next {} score it ({}){own}; the benchmark's report is \
             ../report.md.",
            phase.held_out(sizes).train,
            phase.held_out(sizes).test,
            if search {
                "validation"
            } else {
                "test, never seen by the search"
            }
        ),
        settings: lineup
            .included
            .iter()
            .map(|i| {
                let sizes = i.spec.sizes(p);
                i.spec.setting(i.data_dir.as_deref(), sizes, offset)
            })
            .collect(),
        methods: families().iter().flat_map(Family::methods).collect(),
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

/// The protocol's words for the settings split otherwise (FEMNIST's
/// writers): empty when there are none.
fn sizes_of_others(p: &Protocol, lineup: &Lineup, phase: Phase) -> String {
    let base = phase.held_out(Sizes::of(p));
    lineup
        .included
        .iter()
        .filter_map(|i| {
            let h = phase.held_out(i.spec.sizes(p));
            (h != base).then(|| {
                format!(
                    "; {}: the first {} and the next {}",
                    i.spec.key, h.train, h.test
                )
            })
        })
        .collect()
}

/// The search grid of the five settings.
pub fn search_grid(p: &Protocol) -> Experiment {
    grid(p, &Lineup::base(p), Phase::Search, Sizes::of(p).search)
}

/// The test grid of the five settings (every candidate declared; only the
/// chosen ones run).
pub fn test_grid(p: &Protocol) -> Experiment {
    grid(p, &Lineup::base(p), Phase::Test, Sizes::of(p).test)
}

/// Runs what is missing of the benchmark into `o.out` (the search, then the
/// chosen candidates on test) and writes its report; returns the report's
/// tables. The five settings always run; rotated CIFAR-10 and FEMNIST when
/// `data` or the data root gives their files ([`Lineup::resolve`]).
/// `o.only_methods` names families (`ifca`), `o.only_settings` settings;
/// `o.only_seeds` test seeds.
pub fn run(p: &Protocol, data: &OptionalData, o: &RunOptions) -> Result<String> {
    let lineup = Lineup::resolve(p, data, &fedcluster_run::config::data_root())?;
    run_lineup(p, &lineup, o)
}

/// [`run`] over the settings of `lineup`.
pub fn run_lineup(p: &Protocol, lineup: &Lineup, o: &RunOptions) -> Result<String> {
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
    lineup.check_only(&o.only_settings)?;
    let picked = |f: &&Family| {
        o.only_methods.is_empty() || o.only_methods.iter().any(|m| f.key.eq_ignore_ascii_case(m))
    };
    let chosen_families: Vec<&Family> = families.iter().filter(picked).collect();
    let wanted = |key: &str| {
        o.only_settings.is_empty() || o.only_settings.iter().any(|s| s.eq_ignore_ascii_case(key))
    };
    // The search, one setting at a time (in the grid's order), each on its
    // own split and with the families that run there.
    let search_out = o.out.join("search");
    for i in lineup.included.iter().filter(|i| wanted(i.spec.key)) {
        let variants: Vec<String> = chosen_families
            .iter()
            .filter(|f| i.spec.runs(f))
            .flat_map(|f| f.variants())
            .map(|v| v.key.to_string())
            .collect();
        if variants.is_empty() {
            continue;
        }
        let search = grid(p, lineup, Phase::Search, i.spec.sizes(p).search);
        let options = RunOptions {
            out: search_out.clone(),
            only_settings: vec![i.spec.key.into()],
            only_methods: variants,
            only_seeds: Vec::new(),
            ..o.clone()
        };
        harness::run(&search, &options)?;
    }
    let search = grid(p, lineup, Phase::Search, Sizes::of(p).search);
    let searched = harness::finished_runs(&search, &search_out)?;
    let choice = Choice::new(&search, &searched);
    let test_out = o.out.join("test");
    for (si, i) in lineup.included.iter().enumerate() {
        let winners: Vec<String> = chosen_families
            .iter()
            .filter(|f| i.spec.runs(f))
            .filter_map(|f| choice.winner(si, f.key))
            .map(|m| search.methods[m].key.to_string())
            .collect();
        if !wanted(i.spec.key) || winners.is_empty() {
            continue;
        }
        let test = grid(p, lineup, Phase::Test, i.spec.sizes(p).test);
        let options = RunOptions {
            out: test_out.clone(),
            only_settings: vec![i.spec.key.into()],
            only_methods: winners,
            ..o.clone()
        };
        harness::run(&test, &options)?;
    }
    let test = grid(p, lineup, Phase::Test, Sizes::of(p).test);
    let tested = harness::finished_runs(&test, &test_out)?;
    report::write(
        p, &o.out, lineup, &search, &searched, &choice, &test, &tested,
    )
}

#[cfg(test)]
mod tests {
    use super::super::clustered_benchmark_lineup::Included;
    use super::super::clustered_benchmark_settings::OPTIONAL;
    use super::*;

    #[test]
    fn every_cell_of_both_grids_parses() {
        let p = Protocol::default();
        let mut lineup = Lineup::base(&p);
        lineup.included.extend(OPTIONAL.iter().map(|spec| Included {
            spec,
            data_dir: Some("/nowhere".into()),
        }));
        let held_out = Sizes::of(&p).test;
        for exp in [
            search_grid(&p),
            test_grid(&p),
            grid(&p, &lineup, Phase::Test, held_out),
        ] {
            for si in 0..exp.settings.len() {
                for mi in 0..exp.methods.len() {
                    exp.run_config(si, mi, 1)
                        .unwrap_or_else(|e| panic!("{} {}: {e:#}", si, exp.methods[mi].key));
                }
            }
        }
    }
}
