//! The clustered-benchmark report's prose sections: the protocol, the runs
//! spent, the search budget and what is not included.

use super::Protocol;
use super::clustered_benchmark_choice::Choice;
use super::clustered_benchmark_methods::{CANDIDATES, Family};
use super::clustered_benchmark_settings::{SEARCH_SEED_OFFSET, SettingSpec, Sizes, search_runs};
use crate::reproduce::harness::{Experiment, FinishedRun, Metric};
use crate::table::render;

/// The runs finished in each grid and the hours their rounds took.
pub fn spent(searched: &[FinishedRun], tested: &[FinishedRun]) -> String {
    let hours = |runs: &[FinishedRun]| {
        runs.iter()
            .filter_map(|r| r.run.value(Metric::Seconds))
            .sum::<f64>()
            / 3600.0
            + 0.0
    };
    let diverged = |runs: &[FinishedRun]| runs.iter().filter(|r| r.run.diverged()).count();
    format!(
        "Finished: {} search runs ({} diverged) and {} test runs ({} diverged); their rounds \
         took {:.2} and {:.2} hours of wall-clock time as the runs measured it.",
        searched.len(),
        diverged(searched),
        tested.len(),
        diverged(tested),
        hours(searched),
        hours(tested)
    )
}

/// The search's grid, runs and choices per method over `settings`.
pub fn budget(
    families: &[Family],
    settings: &[&SettingSpec],
    search: &Experiment,
    runs: &[FinishedRun],
    choice: &Choice,
) -> String {
    let mut body = Vec::new();
    for f in families {
        let members: Vec<usize> = f
            .variants()
            .iter()
            .filter_map(|v| search.methods.iter().position(|m| m.key == v.key))
            .collect();
        let done: Vec<&FinishedRun> = runs
            .iter()
            .filter(|r| members.contains(&r.method))
            .collect();
        if done.is_empty() {
            continue;
        }
        let seconds: f64 = done
            .iter()
            .filter_map(|r| r.run.value(Metric::Seconds))
            .sum();
        let picks: Vec<String> = settings
            .iter()
            .enumerate()
            .map(|(si, s)| {
                let pick = choice
                    .winner(si, f.key)
                    .and_then(|m| search.methods[m].tuned.as_ref());
                format!("{}: {}", s.key, pick.map_or("-", |t| t.value.as_str()))
            })
            .collect();
        body.push(vec![
            f.label.to_string(),
            f.grid(),
            CANDIDATES.to_string(),
            done.len().to_string(),
            format!("{seconds:.0}"),
            picks.join("; "),
        ]);
    }
    let header = [
        "method",
        "grid",
        "candidates",
        "search runs",
        "seconds",
        "chosen",
    ];
    format!(
        "Every method gets {CANDIDATES} candidate configurations (the same count), each run \
         once per setting on the search federation (seed {}), {} search runs in all for the \
         full grid; the candidate of highest validation accuracy after the last round is \
         chosen per setting.\n\n{}",
        SEARCH_SEED_OFFSET + 1,
        search_runs(families, settings),
        render(&header, &body)
    )
}

/// The protocol paragraph, with what each of `settings` adds to it.
pub fn protocol(p: &Protocol, s: Sizes, seeds: usize, settings: &[&SettingSpec]) -> String {
    let mut text = format!(
        "Each setting is a federation of {} clients of {} samples, MLP (one hidden layer of \
         100), plain SGD (minibatches of 50, 5 local steps a round where the method has local \
         steps), full participation, {} rounds for every method. Personalised evaluation \
         (`test_pick = \"personal\"`): every client is scored on its own held-out samples \
         with the model the method gives it (its cluster's, its mixture, its own; a client \
         never assigned, by the method's newcomer rule), the clients weighted equally. Search: \
         on a federation drawn with seed {} (not a test seed), each client trains on its \
         first {} samples and is validated on the next {}. Test: seeds 1 to {seeds}, each \
         client trains on its first {} samples and is tested on the last {}, which no search \
         run reads. Accuracy after the last round ranks; the best round's accuracy (over the \
         rounds evaluated, every 4th and the last) is shown beside it and is optimistic (it \
         picks a round on the test data). ARI and NMI score the clients' clustering against \
         the true clusters (settings with clusters only). Cost: rounds, megabytes sent down \
         and up as the runs measure them, and wall-clock seconds of the rounds (machine and \
         load dependent; `--threads 1` for one core). One-shot and Local-KMeans are one \
         algorithm (local models, k-means on them, FedAvg per cluster), run twice to show its \
         start rule: each client's own random start (the one-shot paper's, made for convex \
         losses, where the start does not matter) against one start shared by all \
         (`erm_start = \"shared\"`); the paper's default start, zeros, cannot train an MLP \
         and is refused.",
        s.clients,
        s.points,
        s.rounds,
        SEARCH_SEED_OFFSET + 1,
        s.search.train,
        s.search.test,
        s.test.train,
        s.test.test,
    );
    for setting in settings {
        if let Some(describe) = setting.describe {
            text.push(' ');
            text.push_str(&describe(setting.sizes(p)));
        }
    }
    text
}

/// What the benchmark leaves out, and why.
pub const NOT_INCLUDED: &str = "- The two-phase method (`twophase`): it is defined for mixed \
    linear regression (moments of residuals), not classification.\n\
    - FedProx and FedAvgM: one global model each, like FedAvg, which stands for them here.\n\
    - The papers' CNNs and ResNet9 on rotated CIFAR-10 and FEMNIST: those two settings run \
    (when their files are given: `--cifar-dir`, `--femnist-dir`) with the MLP of every other \
    setting; a CNN would take the grid far past an hour on one core.\n\
    - The papers' headline claims (FL+HC and PACFL on rotated or label-skewed MNIST, FedEM \
    and FedRC on their mixtures) are not checked here: their protocols (sizes, models, \
    rounds) differ from this benchmark's small equal-budget one.";
