//! What a run produced: the whole [`Outcome`] of a finished run, and the
//! [`SoFar`] part of it a checkpoint carries between sessions.

use std::collections::BTreeMap;

use fedcluster_core::TensorSpec;
use fedcluster_data::DataView;
use fedcluster_sim::record::RoundRecord;
use serde::{Deserialize, Serialize};

/// Everything a run produced.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// One record per replica per round, round-major.
    pub records: Vec<RoundRecord>,
    /// The replica the algorithm selected at the end.
    pub selected: usize,
    /// Number of replicas.
    pub replicas: usize,
    /// Wall-clock seconds of the federated rounds.
    pub wall_seconds: f64,
    /// The selected replica's models after the last round (one per cluster,
    /// or per client for local training).
    pub models: Vec<Vec<f32>>,
    /// The model's name and tensors, to write `models` with.
    pub model: (&'static str, Vec<TensorSpec>),
    /// Worker threads that ran the client halves in this process (the
    /// in-process pool's size); `None` when they ran elsewhere (a networked
    /// run's coordinator, a run whose messages a host carries).
    pub threads: Option<usize>,
    /// The metrics the data set cannot give, each with why (see
    /// [`metrics_absent`]).
    pub metrics_absent: BTreeMap<String, String>,
}

/// The metrics `data` cannot give, each with why: the test metrics without
/// test clients, the clustering metrics without true clusters, the parameter
/// error without true parameters (a user's own data, `kind = "files"`,
/// without `test`, `cluster` or `truth_params`; LEAF and image sets have no
/// true parameters). They are left empty in `metrics.csv`, never computed on
/// other data; `summary.json` lists them under `metrics_absent`.
pub fn metrics_absent(data: &DataView<'_>) -> BTreeMap<String, String> {
    let mut absent = BTreeMap::new();
    let mut note = |metrics: &[&str], why: &str| {
        for m in metrics {
            absent
                .entry(m.to_string())
                .or_insert_with(|| why.to_string());
        }
    };
    if data.test.num_clients() == 0 {
        let test = ["test_loss", "test_accuracy", "test_misclustering"];
        note(&test, "the data set has no test clients");
    }
    if !data.truth.is_known() {
        let clustering = [
            "misclustering",
            "majority_misclustering",
            "round_misclustering",
            "test_misclustering",
            "ari",
            "nmi",
        ];
        note(&clustering, "the data set gives no true clusters");
    }
    if data.truth.params.is_none() {
        note(
            &["param_error"],
            "the data set gives no true cluster parameters",
        );
    }
    absent
}

/// What the rounds run so far recorded: the part of an [`Outcome`] a
/// checkpoint carries.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct SoFar {
    /// One record per replica per round, round-major.
    pub records: Vec<RoundRecord>,
    /// The replica the algorithm selected after the last round run.
    pub selected: usize,
    /// Number of replicas.
    pub replicas: usize,
    /// Wall-clock seconds of the rounds run (every session of a resumed run).
    pub wall_seconds: f64,
    /// The selected replica's models, once the last round has run.
    pub models: Vec<Vec<f32>>,
}

impl Outcome {
    /// The selected replica's record of the last round.
    pub fn final_record(&self) -> Option<&RoundRecord> {
        self.records
            .iter()
            .rev()
            .find(|r| r.replica == self.selected)
    }

    /// Every replica's record of the last round.
    pub fn final_records(&self) -> Vec<&RoundRecord> {
        let last = self.records.last().map_or(0, |r| r.round);
        self.records.iter().filter(|r| r.round == last).collect()
    }
}
