//! One-shot clustering (and Local-KMeans, the same algorithm) on a network
//! with a hidden layer: an all-zero ERM start is refused naming `erm_init`,
//! and `erm_start = "shared"` (one start sent to every client) lets k-means on
//! the local MLPs find the true clusters, where each client's own random
//! start does not.

mod common;

use common::{fedcluster, scratch};

/// The clustered benchmark's synthetic mixture, small: 4 clusters (label
/// permutations) of 8x8 images, 24 clients, an MLP.
fn mixture(algorithm: &str) -> String {
    format!(
        r#"
seed = 1
rounds = 4
[data]
kind = "synthetic-images"
clients = 24
points_per_client = 200
test_points_per_client = 50
clusters = 4
classes = 10
height = 8
width = 8
channels = 1
noise_std = 2.0
[model]
kind = "mlp"
hidden = 32
[algorithm]
name = "local-kmeans"
clusters = 4
erm_steps = 50
erm_lr = 0.3
lr = 0.3
local_steps = 5
optimizer = {{ kind = "sgd", batch_size = 50 }}
{algorithm}
"#
    )
}

/// Runs `config` and returns its final misclustering (the fraction of
/// clients k-means put with another cluster's).
fn misclustering(name: &str, config: &str) -> f64 {
    let dir = scratch(name);
    std::fs::write(dir.join("cfg.toml"), config).unwrap();
    let o = fedcluster(
        &["run", "cfg.toml", "--out", "out", "-q", "--threads", "1"],
        &dir,
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let summary = std::fs::read_to_string(dir.join("out/summary.json")).unwrap();
    let summary: serde_json::Value = serde_json::from_str(&summary).unwrap();
    let value = summary["final"]["misclustering"].as_f64();
    let _ = std::fs::remove_dir_all(&dir);
    value.unwrap_or_else(|| panic!("no misclustering in {summary}"))
}

#[test]
fn a_shared_start_lets_k_means_find_the_clusters_of_local_mlps() {
    let shared = misclustering(
        "oneshot-shared",
        &mixture("erm_init = { kind = \"model\" }\nerm_start = \"shared\""),
    );
    let own = misclustering("oneshot-own", &mixture("erm_init = { kind = \"model\" }"));
    assert_eq!(shared, 0.0, "shared start: misclustering {shared}");
    assert!(own > 0.25, "own starts: misclustering {own}");
}

#[test]
fn an_all_zero_start_of_an_mlp_is_refused_naming_erm_init() {
    let dir = scratch("oneshot-zeros");
    std::fs::write(dir.join("cfg.toml"), mixture("")).unwrap();
    let o = fedcluster(&["run", "cfg.toml", "--out", "out", "-q"], &dir);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success(), "{err}");
    assert!(err.contains("algorithm.erm_init"), "{err}");
    assert!(err.contains("erm_start = \"shared\""), "{err}");
    assert!(
        !dir.join("out").exists(),
        "a refused run wrote its directory"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
