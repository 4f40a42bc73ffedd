use std::time::Duration;

use super::splits;
use crate::checkpoint::{PART_FILE, Policy, WithinRounds};
use crate::config::RunConfig;
use crate::experiment::{Control, build_data, build_model, execute_controlled};
use crate::outcome::Outcome;

/// SR-FCA (its stages keep state in the server and the clients) on 20 clients.
const CONFIG: &str = "seed = 3\nrounds = 12\n[data]\nkind = \"ifca-synthetic\"\nclients = 20\n\
    points_per_client = 50\ntest_points_per_client = 20\ndim = 10\nclusters = 2\n\
    noise_std = 0.1\nseparation = 1.0\n[model]\nkind = \"linear\"\n[algorithm]\n\
    name = \"srfca\"\ndistance = \"l2\"\nthreshold = { kind = \"quantile\", value = 0.3 }\n\
    local_steps = 20\nlocal_lr = 0.05\nrefine_rounds = 5\nlr = 0.1\ninit = { kind = \"zeros\" }";

/// The run of `CONFIG` on `threads` threads with `checkpoint`.
fn run(threads: usize, checkpoint: Option<Policy>) -> Outcome {
    let config = RunConfig::parse(CONFIG, &[format!("threads={threads}")], "test").unwrap();
    let data = build_data(&config).unwrap();
    let view = data.view();
    let model = build_model(&config, &view).unwrap();
    let control = Control {
        ready: &mut || Ok(()),
        progress: &mut |_| {},
        checkpoint,
    };
    execute_controlled(&config, &view, model.as_ref(), control).unwrap()
}

#[test]
fn a_round_is_split_after_a_long_one_or_always_or_never() {
    let minute = Duration::from_secs(60);
    let long = WithinRounds::LongRounds;
    assert!(splits(long, minute, Some(60.0)));
    assert!(!splits(long, minute, Some(59.9)));
    assert!(
        !splits(long, minute, None),
        "the first round: nothing to time"
    );
    assert!(splits(WithinRounds::EveryClient, minute, None));
    assert!(!splits(WithinRounds::Never, minute, Some(1e9)));
}

/// Rounds split into parts of four clients a thread (`LongRounds` with a
/// zero interval: every round after the first follows a long enough one;
/// part files are written as the 5% rule lets them), on another thread
/// count, end where the run of whole rounds ends: the same records but their
/// seconds, the same models bit for bit; no part file is left once the
/// run's last checkpoint is written.
#[test]
fn long_rounds_split_into_parts_give_the_whole_rounds_results() {
    let dir = std::env::temp_dir().join(format!("fedcluster-mid-round-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let policy = Policy {
        path: dir.join("checkpoint.bin"),
        every_rounds: 0,
        every: Duration::ZERO,
        resume: false,
        within_rounds: WithinRounds::LongRounds,
        fork: None,
    };
    let whole = run(2, None);
    let split = run(1, Some(policy));
    let without_seconds = |o: &Outcome| {
        let mut records = o.records.clone();
        records.iter_mut().for_each(|r| r.seconds = 0.0);
        records
    };
    assert_eq!(without_seconds(&whole), without_seconds(&split));
    let bits =
        |o: &Outcome| -> Vec<u32> { o.models.iter().flatten().map(|x| x.to_bits()).collect() };
    assert_eq!(bits(&whole), bits(&split));
    assert!(!dir.join(PART_FILE).exists());
    let _ = std::fs::remove_dir_all(&dir);
}

/// A run resumed within a round counts the seconds that round's parts took
/// before (in the part file, not in the checkpoint of the round's start).
#[test]
fn a_start_within_a_round_counts_the_rounds_parts_so_far() {
    use crate::experiment::Start;
    use crate::outcome::SoFar;
    use fedcluster_sim::parts::Interrupted;

    let so_far = SoFar {
        wall_seconds: 120.0,
        ..SoFar::default()
    };
    let cut = Interrupted {
        server: (),
        done: 3,
        replied: vec![0, 1, 2],
        bytes_up: 0,
        seconds: 45.5,
    };
    let within = Start {
        first: 4,
        so_far: so_far.clone(),
        interrupted: Some(cut),
    };
    assert_eq!(within.seconds_before(), 165.5);
    let between = Start::<()> {
        first: 4,
        so_far,
        interrupted: None,
    };
    assert_eq!(between.seconds_before(), 120.0);
}
