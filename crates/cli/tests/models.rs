//! Every network end to end: IFCA with k = 2 on small synthetic image and text
//! data, each model through `fedcluster`'s config, bit-identical with 1 and 2
//! threads; and model keys that cannot work refused before the run.

mod common;
use common::check;
use fedcluster_run::config::RunConfig;
use fedcluster_run::experiment::{build_data, build_model};
use fedcluster_run::rundir::metrics_csv;

fn images(side: usize, channels: usize, model: &str) -> String {
    format!(
        r#"
seed = 4
rounds = 3
[data]
kind = "synthetic-images"
clients = 6
points_per_client = 12
test_points_per_client = 4
clusters = 2
classes = 3
height = {side}
width = {side}
channels = {channels}
[model]
{model}
[algorithm]
name = "ifca"
clusters = 2
aggregation = "model"
lr = 0.05
local_steps = 2
optimizer = {{ kind = "sgd", batch_size = 4, momentum = 0.9, weight_decay = 0.0005, lr_decay = 0.99 }}
"#
    )
}

fn text(model: &str) -> String {
    format!(
        r#"
seed = 5
rounds = 3
[data]
kind = "synthetic-text"
clients = 4
points_per_client = 10
test_points_per_client = 4
clusters = 2
vocab = 6
seq_len = 5
[model]
{model}
[algorithm]
name = "ifca"
clusters = 2
aggregation = "model"
lr = 0.01
local_steps = 2
optimizer = {{ kind = "adam", batch_size = 5 }}
"#
    )
}

fn identical_with_one_and_two_threads(config: &str) {
    let run = |threads: usize| {
        let o = check(config, &[&format!("threads={threads}")]);
        let last = o.final_record().expect("a round").clone();
        assert!(last.train_loss.is_some_and(f64::is_finite), "{config}");
        assert!(last.test_accuracy.is_some());
        metrics_csv(&o.records, true)
    };
    assert_eq!(run(1), run(2), "{config}");
}

#[test]
fn every_network_runs_ifca_and_is_thread_count_independent() {
    let augment = "augment = { crop_padding = 1, flip = true }";
    for config in [
        images(8, 3, &format!("kind = \"resnet9\"\nwidth = 2\n{augment}")),
        images(
            16,
            3,
            &format!("kind = \"cnn-cifar\"\nhidden = 8\nbackend = \"ndarray\"\n{augment}"),
        ),
        images(
            16,
            3,
            &format!("kind = \"cnn-cifar\"\nhidden = 8\n{augment}"),
        ),
        images(8, 1, "kind = \"cnn-femnist\"\nhidden = 8"),
        images(4, 2, "kind = \"mlp\"\nhidden = 6\nbackend = \"ndarray\""),
        text("kind = \"char-lstm\"\nembedding = 3\nhidden = 6"),
        text(
            "kind = \"char-lstm\"\nembedding = 3\nhidden = 6\nstate = \"carried\"\neval_batch = 3",
        ),
    ] {
        identical_with_one_and_two_threads(&config);
    }
}

/// The SR-FCA code's carried LSTM state, by the overrides the docs give.
#[test]
fn the_carried_lstm_state_changes_the_run() {
    let config = text("kind = \"char-lstm\"\nembedding = 3\nhidden = 6");
    let csv = |overrides: &[&str]| metrics_csv(&check(&config, overrides).records, true);
    let carried = csv(&["model.state=carried", "model.eval_batch=3"]);
    assert_ne!(csv(&[]), carried);
}

fn build_error(config: &str) -> String {
    let config = RunConfig::parse(config, &[], "cfg").expect("the config itself parses");
    let data = build_data(&config).expect("data");
    match build_model(&config, &data.view()) {
        Ok(m) => panic!("{} was built", m.name()),
        Err(e) => format!("{e:#}"),
    }
}

#[test]
fn model_keys_that_cannot_work_are_refused_with_the_key_named() {
    let cases = [
        (
            images(8, 3, "kind = \"resnet9\"\nwidth = 0"),
            "`model.width`",
        ),
        (images(12, 3, "kind = \"resnet9\""), "`model.channels`"),
        (images(8, 3, "kind = \"cnn-cifar\""), "`model.kernel`"),
        (
            images(8, 3, "kind = \"cnn-femnist\"\nchannels = 2"),
            "`model.channels`",
        ),
        (
            images(8, 1, "kind = \"mlp\"\nhidden = 0\nbackend = \"ndarray\""),
            "`model.hidden`",
        ),
        (
            images(8, 1, "kind = \"resnet9\"\nchannels = 1\nbackend = \"cuda\""),
            "`model.backend`",
        ),
        (text("kind = \"char-lstm\"\nlayers = 0"), "`model.layers`"),
        (
            text("kind = \"char-lstm\"\nembedding = 0"),
            "`model.embedding`",
        ),
        (
            text("kind = \"char-lstm\"\nstate = \"carried\"\nbackend = \"flex\""),
            "`model.state`",
        ),
        (
            text("kind = \"char-lstm\"\neval_batch = 512"),
            "`model.eval_batch`",
        ),
        (text("kind = \"linear\""), "`model.kind`"),
    ];
    for (config, field) in cases {
        let e = build_error(&config);
        assert!(e.contains(field), "expected {field}: {e}");
    }
    let e = format!(
        "{:#}",
        RunConfig::parse(&images(8, 3, "kind = \"resnet9\"\ndepth = 3"), &[], "cfg").unwrap_err()
    );
    assert!(e.contains("`model.depth`"), "{e}");
    let e = format!(
        "{:#}",
        RunConfig::parse(
            &images(8, 3, "kind = \"resnet9\"\naugment = { crop = 4 }"),
            &[],
            "cfg"
        )
        .unwrap_err()
    );
    assert!(e.contains("model.augment"), "{e}");
}
