//! Shared helpers of the integration tests: small seeded configs and one runner.

#![allow(dead_code)]

use fedcluster_run::config::RunConfig;
use fedcluster_run::experiment::{build_data, execute};
use fedcluster_run::outcome::Outcome;

/// A small IFCA-synthetic problem that is easy when the clustering is right:
/// (m, n, d, k) = (20, 100, 20, 2), σ = 0.1, R = 1.
pub fn small(algorithm: &str, rounds: usize) -> String {
    format!(
        r#"
seed = 7
rounds = {rounds}
[data]
kind = "ifca-synthetic"
clients = 20
points_per_client = 100
test_points_per_client = 50
dim = 20
clusters = 2
noise_std = 0.1
separation = 1.0
[model]
kind = "linear"
[algorithm]
{algorithm}
"#
    )
}

/// Parses `text` with `overrides`, runs it and returns the outcome.
pub fn check(text: &str, overrides: &[&str]) -> Outcome {
    let overrides: Vec<String> = overrides.iter().map(|s| s.to_string()).collect();
    let config = RunConfig::parse(text, &overrides, "test config").expect("valid config");
    let data = build_data(&config).expect("data");
    execute(&config, &data.view(), &mut |_| {}).expect("run")
}

/// The selected replica's last record, unwrapped.
pub fn last(o: &Outcome) -> fedcluster_sim::record::RoundRecord {
    o.final_record().expect("at least one round").clone()
}

/// The real MNIST, `$FEDCLUSTER_DATA/mnist`, or `None` (the test `test`
/// skipped, saying so; failing instead where `$FEDCLUSTER_REQUIRE_DATA`
/// lists `mnist`): see [`fedcluster_testkit::real_data`].
pub fn mnist_dir(test: &str) -> Option<std::path::PathBuf> {
    real_data_dir("mnist", "MNIST", test)
}

/// `$FEDCLUSTER_DATA/{dir_name}` (a data set of the data-set table, named by
/// its `Files::dir_name`), or `None` with `test` skipped (see
/// [`fedcluster_testkit::real_data`]).
pub fn real_data_dir(dir_name: &str, title: &str, test: &str) -> Option<std::path::PathBuf> {
    fedcluster_testkit::real_data(dir_name, title, test)
}

/// Two small plays in Project Gutenberg's layout (title, then speaker lines
/// such as `ALPHA.` before each speech) with five speaking roles, and a poem
/// that is no play: every role but `SOOTHSAYER` speaks enough for LEAF's
/// split to give it test windows.
pub fn write_toy_plays(dir: &std::path::Path) {
    let speech = |who: &str, lines: usize, seed: usize| {
        (0..lines)
            .map(|i| {
                let word = ["thee", "crown", "night", "sword", "love", "ghost"][(i + seed) % 6];
                format!("{who}.\nLine {i}: the {word} of {who} speaks, and {seed} more,\nthen stops; [Exit.] once again.\n")
            })
            .collect::<Vec<_>>()
            .join("\n")
    };
    let play = |title: &str, roles: &[(&str, usize)]| {
        let speeches: Vec<String> = roles
            .iter()
            .enumerate()
            .map(|(i, (who, lines))| speech(who, *lines, i))
            .collect();
        format!(
            "{title}\n\nby William Shakespeare\n\nACT I.\n\nSCENE I. A heath.\n\n{}\n",
            speeches.join("\n")
        )
    };
    std::fs::create_dir_all(dir).expect("a play directory");
    let write = |name: &str, text: String| std::fs::write(dir.join(name), text).expect("a play");
    write(
        "toy_tragedy_gut.txt",
        play(
            "THE TOY TRAGEDY",
            &[("ALPHA", 14), ("BETA", 9), ("SOOTHSAYER", 1)],
        ),
    );
    write(
        "toy_comedy_gut.txt",
        play(
            "THE TOY COMEDY",
            &[("GAMMA", 8), ("DELTA", 11), ("EPSILON", 10)],
        ),
    );
    write(
        "sonnet_gut.txt",
        "A SONNET\n\nby William Shakespeare\n\nShall I compare thee\n".into(),
    );
}

/// Runs the `fedcluster` binary with `args` in `dir`, without
/// `$FEDCLUSTER_DATA` (a data set is where the test says: `--data-dir`, the
/// config, or `dir/data/<name>`).
pub fn fedcluster(args: &[&str], dir: &std::path::Path) -> std::process::Output {
    command(args, dir).output().expect("the binary runs")
}

/// The `fedcluster` command with `args`, run in `dir` without
/// `$FEDCLUSTER_DATA`.
pub fn command(args: &[&str], dir: &std::path::Path) -> std::process::Command {
    let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_fedcluster"));
    command
        .args(args)
        .current_dir(dir)
        .env_remove(fedcluster_testkit::DATA_ROOT_VAR);
    command
}

/// A new, empty scratch directory for the test `name` (of this process).
pub fn scratch(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("fedcluster-test-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// The two-phase method on Su, Xu, Yang's mixed regression (110 clients of
/// unequal sizes, 3 clusters), Phase 1 by orthogonal iteration.
pub fn two_phase_mixed(rounds: usize) -> String {
    format!(
        r#"
seed = 3
rounds = {rounds}
[data]
kind = "mixed-regression"
dim = 10
clusters = 3
probs = [0.2, 0.3, 0.5]
client_sizes = [{{ count = 100, points = 10 }}, {{ count = 10, points = 40 }}]
test_points_per_client = 5
[model]
kind = "linear"
[algorithm]
name = "twophase"
clusters = 3
lr = 0.02
participation = 0.5
init = {{ kind = "gaussian", std = 0.6 }}
[algorithm.phase1]
alpha = 2.0
beta = 2.0
separation = 1.5
subspace = {{ kind = "orthogonal", steps = 4 }}
subspace_clients = 40
"#
    )
}

/// A small run on two concepts of synthetic images (6 clients of 12 4x4
/// images, 3 classes): `model` and `algorithm` are the bodies of its
/// `[model]` and `[algorithm]` tables.
fn small_images(model: &str, algorithm: &str, rounds: usize) -> String {
    format!(
        r#"
seed = 7
rounds = {rounds}
[data]
kind = "synthetic-images"
clients = 6
points_per_client = 12
test_points_per_client = 4
clusters = 2
classes = 3
height = 4
width = 4
channels = 1
[model]
{model}
[algorithm]
{algorithm}
"#
    )
}

/// The MLP of the small image runs.
const SMALL_MLP: &str = "kind = \"mlp\"\nhidden = 8";

/// IFCA with `pretrain_rounds = 2` and a frozen trunk, MLP on small synthetic
/// images, `rounds` rounds.
pub fn ifca_pretrained(rounds: usize) -> String {
    let algorithm = r#"name = "ifca"
clusters = 2
aggregation = "model"
lr = 0.05
local_steps = 2
pretrain_rounds = 2
freeze_trunk = true"#;
    small_images(SMALL_MLP, algorithm, rounds)
}

/// PACFL with one subspace per class (`per_class = true`) on small
/// synthetic images, `rounds` rounds.
pub fn pacfl_per_class(rounds: usize) -> String {
    let algorithm = r#"name = "pacfl"
basis = 2
per_class = true
cut = { kind = "clusters", value = 2 }
proximity = "min-pairwise"
lr = 0.05
local_steps = 2
participation = 0.5"#;
    small_images(SMALL_MLP, algorithm, rounds)
}

/// A small labelled run of `algorithm` (an `[algorithm]` table): two
/// concepts of synthetic images (6 clients, 3 classes), a logistic model.
pub fn labelled(algorithm: &str, rounds: usize) -> String {
    small_images("kind = \"logistic\"", algorithm, rounds)
}

/// Small runs of the algorithm `name` (config texts, a few rounds each), one
/// per option that changes its messages (restarts, stable identity, model
/// averaging, ...); empty for a name it does not know. The tests that cover
/// every algorithm (`wire`, `fuzz`) iterate `AlgorithmConfig::NAMES` and fail
/// on a name without a run here: add one with each new algorithm.
pub fn small_runs(name: &str) -> Vec<String> {
    let tables: &[&str] = match name {
        "cflmgd" => &[
            "name = \"cflmgd\"\nclusters = 2\nlr = 0.1\nmomentum = 0.5",
            "name = \"cflmgd\"\nclusters = 2\nlr = 0.05\nlocal_steps = 3\noptimizer = { kind = \"sgd\", batch_size = 16, lr_decay = 0.9 }",
        ],
        "oneshot" => &[
            "name = \"oneshot\"\nclusters = 2\nerm_steps = 20\nerm_lr = 0.1\nlr = 0.1\naggregation = \"model\"\nlocal_steps = 2",
        ],
        "local-kmeans" => {
            &["name = \"local-kmeans\"\nclusters = 2\nerm_steps = 20\nerm_lr = 0.1\nlr = 0.1"]
        }
        "global" => &[
            "name = \"global\"\nlr = 0.1",
            "name = \"global\"\nlr = 0.1\nparticipation = 0.1\nclients = \"sequential\"\nweighting = \"uniform\"",
        ],
        "oracle" => &["name = \"oracle\"\nlr = 0.1"],
        "local" => &["name = \"local\"\nlr = 0.1"],
        "fedavgm" => &["name = \"fedavgm\"\nlr = 0.1"],
        "fesem" => &[
            "name = \"fesem\"\nclusters = 2\nlr = 0.1\nlocal_steps = 3",
            "name = \"fesem\"\nclusters = 2\nlr = 0.1\nlocal_steps = 3\nseeding = \"random\"\nparticipation = 0.5",
        ],
        "flhc" => &[
            "name = \"flhc\"\nlr = 0.1\nlocal_steps = 3\ncluster_round = 2\ncut = { kind = \"clusters\", value = 2 }",
        ],
        // One subspace per client on the regression mixture, and one per
        // class on labelled images.
        "pacfl" => {
            return vec![
                small(
                    "name = \"pacfl\"\nbasis = 2\ncut = { kind = \"distance\", value = 30.0 }\nlr = 0.1\nlocal_steps = 3",
                    8,
                ),
                pacfl_per_class(8),
            ];
        }
        "fedprox" => &["name = \"fedprox\"\nlr = 0.1"],
        "cfl" => &[
            "name = \"cfl\"\nlr = 0.05\nlocal_steps = 3\neps1 = 0.05\neps2 = 0.1\nwarmup_rounds = 3",
            "name = \"cfl\"\nlr = 0.05\nlocal_steps = 3\neps1 = 0.05\neps2 = 0.1\nwarmup_rounds = 3\nclients_per_round = 4",
        ],
        "fedsoft" => &["name = \"fedsoft\"\nclusters = 2\nlr = 0.05\nlocal_steps = 3"],
        "fedem" => &[
            "name = \"fedem\"\nclusters = 2\nlr = 0.05\nlocal_steps = 3",
            "name = \"fedem\"\nclusters = 2\nlr = 0.05\nlocal_steps = 3\nparticipation = 0.5\noptimizer = { kind = \"adam\", batch_size = 16 }",
        ],
        // Class labels: its label priors need them.
        "fedrc" => {
            return vec![labelled(
                "name = \"fedrc\"\nclusters = 2\nlr = 0.1\nlocal_steps = 2\nparticipation = 0.5",
                8,
            )];
        }
        "srfca" => &[
            "name = \"srfca\"\nthreshold = { kind = \"quantile\", value = 0.3 }\nlocal_steps = 10\nlocal_lr = 0.05\nrefine_rounds = 3\nlr = 0.1",
            "name = \"srfca\"\nthreshold = { kind = \"quantile\", value = 0.3 }\nlocal_steps = 10\nlocal_lr = 0.05\nrefine_rounds = 3\nlr = 0.1\nclients_per_round = 3",
        ],
        // Its own data (anchor clients), and rounds enough for Phase 2.
        "twophase" => return vec![two_phase_mixed(30)],
        // Pretraining needs a model with a trunk: an MLP on image data.
        "ifca" => {
            let mut runs: Vec<String> = [
                "name = \"ifca\"\nclusters = 2\nlr = 0.1\nrestarts = 3",
                "name = \"ifca\"\nclusters = 2\nlr = 0.1\nstable_rounds = 2",
                "name = \"ifca\"\nclusters = 2\naggregation = \"model\"\nlr = 0.05\nlocal_steps = 2\noptimizer = { kind = \"adam\", batch_size = 16 }",
            ]
            .iter()
            .map(|table| small(table, 8))
            .collect();
            runs.push(ifca_pretrained(5));
            return runs;
        }
        _ => &[],
    };
    tables.iter().map(|table| small(table, 8)).collect()
}

/// An IDX images file (magic 0x0803) of `count` `side x side` images, pixel
/// `p` of image `i` being `pixel(i, p)`.
pub fn idx_images(count: u32, side: u32, pixel: impl Fn(u32, u32) -> u8) -> Vec<u8> {
    let mut out = Vec::new();
    for w in [0x0000_0803u32, count, side, side] {
        out.extend(w.to_be_bytes());
    }
    for i in 0..count {
        out.extend((0..side * side).map(|p| pixel(i, p)));
    }
    out
}

/// An IDX labels file (magic 0x0801) of `count` labels `i % 10`.
pub fn idx_labels(count: u32) -> Vec<u8> {
    let mut out = Vec::new();
    for w in [0x0000_0801u32, count] {
        out.extend(w.to_be_bytes());
    }
    out.extend((0..count).map(|i| (i % 10) as u8));
    out
}
