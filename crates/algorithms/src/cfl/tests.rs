//! CFL on a seeded two-cluster linear mixture: one cluster until FedAvg
//! stalls, then a split along the clients' disagreeing updates.

use fedcluster_core::{Batch, ServerHalf};
use fedcluster_data::synthetic::{IfcaSyntheticSpec, TruthScale, ifca_synthetic};
use fedcluster_metrics::clustering::{adjusted_rand_index, param_error};
use fedcluster_models::LinearRegression;
use fedcluster_sim::{InProcess, run};

use super::*;
use crate::common::aggregate::Aggregation;
use crate::common::checked::Checked;
use crate::common::init::InitScheme;

#[test]
fn cfl_splits_a_two_cluster_federation_exactly() {
    let spec = IfcaSyntheticSpec {
        clients: 20,
        points_per_client: 100,
        test_points_per_client: 10,
        dim: 10,
        clusters: 2,
        noise_std: 0.1,
        separation: 2.0,
        truth_scale: TruthScale::Norm,
    };
    let data = ifca_synthetic(&spec, 3).unwrap();
    let model = LinearRegression::new(data.dim).unwrap();
    let config = Config {
        lr: 0.05,
        local_steps: 5,
        eps1: 0.05,
        eps2: 0.1,
        warmup_rounds: 10,
        min_split_size: 2,
        init: InitScheme::Zeros,
        optimizer: Default::default(),
    };
    let batches: Vec<Batch<'_>> = data.train.iter().map(|c| c.batch(data.dim)).collect();
    let mut server = CflServer::new(
        Checked::new(config.clone()).unwrap(),
        &model,
        batches.len(),
        3,
    );
    let client = CflClient::new(Aggregation::Model, config.lr, config.local_steps);
    let mut transport = InProcess::new(vec![client; batches.len()], &batches, &model, 3, 0).unwrap();
    run(&mut server, &mut transport, 200, 3, |_| Ok(())).unwrap();
    assert_eq!(server.clusters(), 2, "splits: {:?}", server.splits);
    assert_eq!(server.splits.len(), 1);
    assert!(server.splits[0].0 >= 10, "no split during the warm-up");
    let snap = server.snapshot();
    let found: Vec<usize> = snap.replicas[0]
        .assignment
        .iter()
        .map(|a| a.unwrap())
        .collect();
    assert_eq!(adjusted_rand_index(&found, &data.truth.train_labels), 1.0);
    let err = param_error(
        &snap.replicas[0].models,
        data.truth.params.as_ref().unwrap(),
    )
    .unwrap();
    assert!(err < 0.05, "parameter error {err}");
}

#[test]
fn bad_thresholds_name_their_field() {
    let c = Config {
        lr: 0.1,
        local_steps: 1,
        eps1: 0.0,
        eps2: 1.0,
        warmup_rounds: 0,
        min_split_size: 2,
        init: InitScheme::Zeros,
        optimizer: Default::default(),
    };
    assert_eq!(Checked::new(c).unwrap_err().field, "eps1");
}
