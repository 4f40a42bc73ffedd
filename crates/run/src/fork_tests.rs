use std::path::{Path, PathBuf};
use std::time::Duration;

use super::Fork;
use crate::checkpoint::{CHECKPOINT_FILE, Policy, WithinRounds};
use crate::config::RunConfig;
use crate::experiment::{Control, build_data, build_model, execute_controlled};
use crate::outcome::Outcome;

/// SR-FCA with the cross-cluster loss on 20 clients of two clusters: ONE_SHOT
/// in 2 local rounds, the pairwise losses (round 3), one REFINE of 3 rounds
/// and its evaluation, then the final training (9 rounds in all).
const SRFCA: &str = "seed = 5\nrounds = 9\n[data]\nkind = \"ifca-synthetic\"\nclients = 20\n\
    points_per_client = 40\ntest_points_per_client = 20\ndim = 8\nclusters = 2\n\
    noise_std = 0.1\nseparation = 1.0\n[model]\nkind = \"linear\"\n[algorithm]\n\
    name = \"srfca\"\ndistance = \"cross-loss\"\nthreshold = { kind = \"quantile\", value = 0.3 }\n\
    local_steps = 20\nlocal_rounds = 2\nlocal_lr = 0.05\n\
    local_optimizer = { kind = \"sgd\", batch_size = 10 }\nrefine_steps = 1\nrefine_rounds = 3\n\
    lr = 0.1\noptimizer = { kind = \"sgd\", batch_size = 10 }\nrefine_local_steps = 4\n\
    clients_per_round = 6\ninit = { kind = \"zeros\" }";

/// ONE_SHOT-IFCA on the same ONE_SHOT: 3 rounds of it, then 4 of IFCA.
const ONE_SHOT_IFCA: [&str; 2] = [
    "rounds=7",
    "algorithm.then={ kind = \"ifca\", local_steps = 5 }",
];

fn config(overrides: &[&str]) -> RunConfig {
    let overrides: Vec<String> = overrides.iter().map(|o| o.to_string()).collect();
    RunConfig::parse(SRFCA, &overrides, "test").unwrap_or_else(|e| panic!("{overrides:?}: {e:#}"))
}

/// A fresh directory for the test `name`.
fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("fedcluster-fork-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Checkpointing every round into `dir`, resuming, forking from `fork`.
fn policy(dir: &Path, fork: Option<Fork>) -> Policy {
    Policy {
        path: dir.join(CHECKPOINT_FILE),
        every_rounds: 1,
        every: Duration::ZERO,
        resume: true,
        within_rounds: WithinRounds::Never,
        fork,
    }
}

fn run(config: &RunConfig, checkpoint: Option<Policy>) -> anyhow::Result<Outcome> {
    let data = build_data(config).unwrap();
    let view = data.view();
    let model = build_model(config, &view).unwrap();
    let control = Control {
        ready: &mut || Ok(()),
        progress: &mut |_| {},
        checkpoint,
    };
    execute_controlled(config, &view, model.as_ref(), control)
}

/// The checkpoint of SR-FCA's first `rounds` rounds in `dir`, and its config.
fn srfca_checkpoint(dir: &Path, rounds: usize) -> Fork {
    let config = config(&[&format!("rounds={rounds}")]);
    run(&config, Some(policy(dir, None))).unwrap();
    Fork {
        checkpoint: dir.join(CHECKPOINT_FILE),
        config,
    }
}

/// Records without their seconds, and the final models' bits.
fn results(o: &Outcome) -> (String, Vec<u32>) {
    let mut records = o.records.clone();
    records.iter_mut().for_each(|r| r.seconds = 0.0);
    let bits = o.models.iter().flatten().map(|x| x.to_bits()).collect();
    (format!("{records:?}"), bits)
}

/// Every file under `dir` with its bytes.
fn contents(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let path = e.unwrap().path();
            let bytes = std::fs::read(&path).unwrap();
            (path, bytes)
        })
        .collect();
    files.sort();
    files
}

/// ONE_SHOT-IFCA forked from SR-FCA's checkpoint within ONE_SHOT's local
/// training (after its first local round) or after it (the pairwise losses,
/// and the clustering at their end, to come) computes what ONE_SHOT-IFCA
/// computes from its first round, bit for bit; so does SR-FCA itself given
/// more rounds, and with every field a fork may change changed. The
/// checkpoint forked from is left as it was.
#[test]
fn a_fork_before_one_shots_clustering_is_the_run_from_its_first_round() {
    let one_shot_ifca = config(&ONE_SHOT_IFCA);
    let whole = results(&run(&one_shot_ifca, None).unwrap());
    let longer_srfca = config(&["rounds=10"]);
    let whole_srfca = results(&run(&longer_srfca, None).unwrap());
    // Every field SR-FCA lets a fork change, changed.
    let retuned = config(&[
        "rounds=10",
        "algorithm.threshold={ kind = \"quantile\", value = 0.4 }",
        "algorithm.min_size=3",
        "algorithm.clustering=\"correlation\"",
        "algorithm.trim=0.2",
        "algorithm.clients_per_round=4",
    ]);
    let whole_retuned = results(&run(&retuned, None).unwrap());
    assert_ne!(
        whole_retuned, whole_srfca,
        "the retuned fields change nothing here"
    );
    for rounds in [1, 2] {
        let source = scratch(&format!("source-{rounds}"));
        let fork = srfca_checkpoint(&source, rounds);
        let before = contents(&source);
        let targets = [
            (&one_shot_ifca, &whole),
            (&longer_srfca, &whole_srfca),
            (&retuned, &whole_retuned),
        ];
        for (to, expected) in targets {
            let dir = scratch(&format!("fork-{rounds}"));
            let forked = run(to, Some(policy(&dir, Some(fork.clone()))));
            let forked = forked.unwrap_or_else(|e| panic!("fork after {rounds} rounds: {e:#}"));
            assert_eq!(&results(&forked), expected, "fork after {rounds} rounds");
            let _ = std::fs::remove_dir_all(&dir);
        }
        assert_eq!(contents(&source), before, "the source checkpoint changed");
        let _ = std::fs::remove_dir_all(&source);
    }
}

/// The error of forking `to` from `fork`.
fn refusal(to: &RunConfig, fork: &Fork) -> String {
    let dir = scratch("refused");
    let error = match run(to, Some(policy(&dir, Some(fork.clone())))) {
        Ok(_) => panic!("the fork ran"),
        Err(e) => format!("{e:#}"),
    };
    let _ = std::fs::remove_dir_all(&dir);
    error
}

/// A fork that could compute something else than the run from its first
/// round is refused, naming why: another data set, model or seed; an
/// algorithm field the rounds so far read (ONE_SHOT's step size); a
/// checkpoint past ONE_SHOT's clustering; another algorithm; an algorithm
/// that takes no fork; a checkpoint that is not there.
#[test]
fn a_fork_that_could_compute_otherwise_is_refused_naming_why() {
    let source = scratch("refusals");
    let fork = srfca_checkpoint(&source, 2);
    let cases: [(&[&str], &str); 3] = [
        (
            &["data.clients=22"],
            "differs from this one in data.clients",
        ),
        (&["seed=6"], "differs from this one in seed"),
        (&["algorithm.local_lr=0.06"], "also changes local_lr"),
    ];
    for (overrides, expected) in cases {
        let mut overrides = overrides.to_vec();
        overrides.extend(ONE_SHOT_IFCA);
        let error = refusal(&config(&overrides), &fork);
        assert!(error.contains(expected), "{overrides:?}: {error}");
    }
    let past = scratch("past");
    let late = srfca_checkpoint(&past, 3);
    let error = refusal(&config(&ONE_SHOT_IFCA), &late);
    assert!(error.contains("past ONE_SHOT's clustering"), "{error}");
    let (run_fields, _) = SRFCA.split_once("[algorithm]").unwrap();
    let ifca = format!("{run_fields}[algorithm]\nname = \"ifca\"\nclusters = 2\nlr = 0.1");
    let other = RunConfig::parse(&ifca, &owned(&["rounds=7"]), "test").unwrap();
    let error = refusal(&other, &fork);
    assert!(
        error.contains("a checkpoint of srfca; this run is ifca"),
        "{error}"
    );
    let ifca_source = scratch("ifca-source");
    let ifca_fork = Fork {
        checkpoint: ifca_source.join(CHECKPOINT_FILE),
        config: RunConfig {
            rounds: 2,
            ..other.clone()
        },
    };
    run(&ifca_fork.config, Some(policy(&ifca_source, None))).unwrap();
    let error = refusal(&other, &ifca_fork);
    assert!(error.contains("ifca cannot fork"), "{error}");
    let missing = Fork {
        checkpoint: source.join("nowhere").join(CHECKPOINT_FILE),
        ..fork.clone()
    };
    let error = refusal(&config(&ONE_SHOT_IFCA), &missing);
    assert!(error.contains("no checkpoint there"), "{error}");
    for dir in [source, past, ifca_source] {
        let _ = std::fs::remove_dir_all(dir);
    }
}

fn owned(overrides: &[&str]) -> Vec<String> {
    overrides.iter().map(|o| o.to_string()).collect()
}

/// The fork note names the source file and config, and what ran there: whole
/// rounds, a part of the next, both, or nothing.
#[test]
fn the_fork_note_names_the_source_and_what_ran_there() {
    let dir = scratch("note");
    let fork = Fork {
        checkpoint: PathBuf::from("srfca.partial").join(CHECKPOINT_FILE),
        config: config(&[]),
    };
    let own = dir.join(CHECKPOINT_FILE);
    let note = |rounds, done| {
        super::record_origin(&own, &fork, rounds, done).unwrap();
        std::fs::read_to_string(dir.join(super::FORKED_FROM_FILE)).unwrap()
    };
    let first = note(7, Some(49));
    let source = format!("source: {}\n", fork.checkpoint.display());
    assert!(first.contains(&source), "{first}");
    assert!(first.contains(" (srfca)\nran there: "), "{first}");
    assert!(
        first.contains("ran there: rounds 0 to 6, and 49 of round 7's clients\n"),
        "{first}"
    );
    for (rounds, done, ran) in [
        (1, None, "round 0"),
        (0, Some(3), "3 of round 0's clients"),
        (0, None, "nothing"),
    ] {
        let text = note(rounds, done);
        assert!(text.contains(&format!("ran there: {ran}\n")), "{text}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}
