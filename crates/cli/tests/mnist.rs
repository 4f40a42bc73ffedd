//! MNIST end to end: the real IDX files in $FEDCLUSTER_DATA/mnist, a small
//! rotated partition, IFCA with an MLP; where a run finds them.

mod common;
use std::path::Path;

use common::{check, last, mnist_dir};

fn config(data_dir: Option<&str>) -> String {
    let dir = data_dir
        .map(|d| format!("data_dir = {d:?}"))
        .unwrap_or_default();
    format!(
        r#"
seed = 1
rounds = 5
[data]
kind = "mnist"
transforms = ["identity", "rotate180"]
clients = 8
points_per_client = 100
test_clients = 4
{dir}
[model]
kind = "mlp"
hidden = 32
[algorithm]
name = "ifca"
clusters = 2
aggregation = "model"
lr = 0.1
local_steps = 5
"#
    )
}

#[test]
fn ifca_with_an_mlp_runs_on_rotated_mnist() {
    let Some(dir) = mnist_dir("ifca_with_an_mlp_runs_on_rotated_mnist") else {
        return;
    };
    let r = last(&check(&config(Some(&dir.display().to_string())), &[]));
    let acc = r.test_accuracy.expect("classification reports accuracy");
    assert!(acc > 0.2 && acc <= 1.0, "test accuracy {acc}");
    assert!(r.misclustering.is_some());
    let identity = r.test_misclustering.expect("test clients pick models");
    assert!((0.0..=1.0).contains(&identity));
    assert!(r.train_loss.unwrap().is_finite());
}

/// A config without `data_dir`: the missing data set is one line naming it,
/// the field, the flag, the variable and the fetch; `--data-dir`,
/// `$FEDCLUSTER_DATA` and `data/mnist` in the working directory each supply
/// it, the flag first.
#[test]
fn a_missing_data_dir_is_named_and_the_flag_or_the_variable_supplies_it() {
    let test = "a_missing_data_dir_is_named_and_the_flag_or_the_variable_supplies_it";
    let Some(mnist) = mnist_dir(test) else {
        return;
    };
    let dir = common::scratch("mnist-missing");
    std::fs::write(dir.join("m.toml"), config(None)).unwrap();
    let run = |extra: &[&str], root: Option<&std::path::Path>| {
        let mut command = common::command(&["run", "m.toml", "--quiet", "--overwrite"], &dir);
        command.args(extra);
        if let Some(root) = root {
            command.env(fedcluster_testkit::DATA_ROOT_VAR, root);
        }
        command.output().unwrap()
    };
    let out = run(&["--out", "run"], None);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{err}");
    assert_eq!(
        err.trim(),
        "error: MNIST: no data in data/mnist: set data.data_dir, pass --data-dir DIR, or set \
         FEDCLUSTER_DATA to a directory holding mnist/; `fedcluster data fetch mnist` \
         downloads it"
    );
    let out = run(&["--out", "run", "--data-dir", "/nonexistent/mnist"], None);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success()
            && err.contains("MNIST: no data in /nonexistent/mnist: set data.data_dir")
            && err.contains("`fedcluster data fetch mnist` downloads it into data/mnist"),
        "{err}"
    );
    // The flag, the variable and data/mnist give the same run.
    let root = mnist.parent().unwrap();
    let mnist_arg = mnist.display().to_string();
    let flag = run(&["--out", "flag", "--data-dir", &mnist_arg], None);
    let variable = run(&["--out", "variable"], Some(root));
    let flag_over_variable = run(
        &["--out", "both", "--data-dir", &mnist_arg],
        Some(Path::new("/nonexistent")),
    );
    std::os::unix::fs::symlink(root, dir.join("data")).unwrap();
    let cwd = run(&["--out", "cwd"], None);
    for (name, out) in [
        ("flag", &flag),
        ("variable", &variable),
        ("both", &flag_over_variable),
        ("cwd", &cwd),
    ] {
        assert!(
            out.status.success(),
            "{name}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let metrics = |run: &str| std::fs::read(dir.join(run).join("metrics.csv")).unwrap();
    for run in ["variable", "both", "cwd"] {
        assert_eq!(metrics(run), metrics("flag"), "{run}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn local_models_are_scored_on_their_clusters_test_data() {
    let Some(dir) = mnist_dir("local_models_are_scored_on_their_clusters_test_data") else {
        return;
    };
    let cfg = config(Some(&dir.display().to_string())).replace(
        "name = \"ifca\"\nclusters = 2\naggregation = \"model\"\nlr = 0.1\nlocal_steps = 5",
        "name = \"local\"\nlr = 0.1\nlocal_steps = 20",
    );
    let r = last(&check(&cfg, &[]));
    let acc = r.test_accuracy.expect("local reports accuracy");
    assert!(acc > 0.2 && acc <= 1.0, "local test accuracy {acc}");
    assert_eq!(r.test_misclustering, None);
}

#[test]
fn ifca_with_the_papers_cnn_runs_on_mnist() {
    let Some(dir) = mnist_dir("ifca_with_the_papers_cnn_runs_on_mnist") else {
        return;
    };
    let cfg = config(Some(&dir.display().to_string()))
        .replace("rounds = 5", "rounds = 2")
        .replace(
            "clients = 8\npoints_per_client = 100",
            "clients = 4\npoints_per_client = 20",
        )
        .replace("test_clients = 4", "test_clients = 2")
        .replace(
            "kind = \"mlp\"\nhidden = 32",
            "kind = \"cnn\"\nconv1 = 4\nconv2 = 8\nhidden = 16",
        )
        .replace("local_steps = 5", "local_steps = 2");
    let r = last(&check(&cfg, &[]));
    let acc = r.test_accuracy.expect("classification reports accuracy");
    assert!((0.0..=1.0).contains(&acc));
    assert!(r.train_loss.unwrap().is_finite());
}

/// Su, Xu, Yang's MNIST setting, k = 2: one anchor of 20 images per rotation and
/// 25,000 two-image clients, logistic regression on 14x14 images.
/// Phase 1 (5 iterations of the federated orthogonal iteration over 1,000
/// sampled clients) must leave each rotation's test set preferring its own
/// anchor's model.
#[test]
fn two_phase_runs_on_anchored_mnist_and_phase1_separates_the_rotations() {
    let test = "two_phase_runs_on_anchored_mnist_and_phase1_separates_the_rotations";
    let Some(dir) = mnist_dir(test) else {
        return;
    };
    let cfg = format!(
        r#"
seed = 1
rounds = 56
eval_every = 55
test_pick = "highest-accuracy"
[data]
kind = "mnist-anchored"
transforms = ["identity", "rotate90"]
anchor_points = 20
clients = 25000
points_per_client = 2
downsample = true
data_dir = {dir:?}
[model]
kind = "logistic"
[algorithm]
name = "twophase"
clusters = 2
lr = 0.1
participation = 0.0039992
[algorithm.phase1]
iterations = 5
anchors = 2
subspace_clients = 1000
subspace = {{ kind = "orthogonal", steps = 10 }}
alpha = 0.15
beta = 0.15
epsilon = 0.001
separation = 0.001
"#
    );
    let o = check(&cfg, &[]);
    // Phase 1 takes 5 x (10 + 1) rounds and ends at round 54.
    let after_phase1 = &o.records[54];
    assert_eq!(
        after_phase1.test_misclustering,
        Some(0.0),
        "{after_phase1:?}"
    );
    let acc = after_phase1.test_accuracy.unwrap();
    assert!(acc > 0.3, "accuracy after Phase 1: {acc}");
    // The Phase 2 rounds sample 100 of the 25,002 clients.
    assert_eq!(last(&o).participants, 100);
}

/// The partition's training clients produced on demand (what `fedcluster run`
/// uses) give the same metrics as every client stored.
#[test]
fn clients_produced_on_demand_give_the_stored_metrics() {
    let Some(dir) = mnist_dir("clients_produced_on_demand_give_the_stored_metrics") else {
        return;
    };
    let text = config(Some(&dir.display().to_string()));
    let config = fedcluster_run::config::RunConfig::parse(&text, &[], "test").unwrap();
    let run = |data: &fedcluster_data::DataView<'_>| {
        let outcome = fedcluster_run::experiment::execute(&config, data, &mut |_| {}).unwrap();
        fedcluster_run::rundir::metrics_csv(&outcome.records, true)
    };
    let produced = fedcluster_run::experiment::build_data_set(&config).unwrap();
    assert!(matches!(produced, fedcluster_data::DataSet::Images(_)));
    let stored = fedcluster_run::experiment::build_data(&config).unwrap();
    assert_eq!(run(&produced.view()), run(&stored.view()));
}
