//! SR-FCA's `loss_scale`: the cross-cluster loss on the public code's scale,
//! which the code's absolute `λ` values are read on.

use fedcluster_core::{Batch, ServerHalf, Targets};
use fedcluster_models::LinearRegression;

use super::option_tests::{loss_at, numbered_rows};
use super::tests::{config, data, drive};
use super::*;

#[test]
fn a_client_reports_its_loss_on_the_code_scale() {
    // 12 rows in minibatches of 5: ceil(12 / 5) = 3 minibatch means, each
    // the mean loss in expectation over the shuffle, summed over 12 samples.
    let model = LinearRegression::new(1).unwrap();
    let (x, y) = numbered_rows();
    let data = Batch::new(&x, Targets::Real(&y), 1).unwrap();
    let mut c = config(Distance::CrossLoss, Threshold::Quantile { value: 0.2 });
    let mean = loss_at(&mut SrFcaClient::new(&c), 0, data, &model);
    assert!(mean > 1.0, "a loss to scale: {mean}");
    c.loss_scale = LossScale::BatchSums { batch: 5 };
    let scaled = loss_at(&mut SrFcaClient::new(&c), 0, data, &model);
    assert_eq!(scaled, mean * (3.0 / 12.0));
    // Minibatches of one: the sum of the samples' losses over their number.
    c.loss_scale = LossScale::BatchSums { batch: 1 };
    assert_eq!(loss_at(&mut SrFcaClient::new(&c), 0, data, &model), mean);
}

/// The assignment and the number of clusters after ONE_SHOT and REFINE.
fn clustered(c: &Config) -> (Vec<Option<usize>>, usize) {
    let server = drive(c, &data(1), c.clustering_rounds(), 1);
    let snap = server.snapshot();
    (snap.replicas[0].assignment.to_vec(), server.clusters())
}

#[test]
fn an_absolute_lambda_is_read_on_the_code_scale() {
    // Every client has 40 training points: in minibatches of 40 the code's
    // scale is the mean loss over 40, and so must its λ be.
    let c = config(Distance::CrossLoss, Threshold::Quantile { value: 0.2 });
    let server = drive(&c, &data(1), c.clustering_rounds(), 1);
    let lambda = server.lambda.expect("ONE_SHOT ran") * (1.0 + 1e-9);
    let mut on_mean = c.clone();
    on_mean.threshold = Threshold::Absolute { value: lambda };
    let (want, clusters) = clustered(&on_mean);
    assert_eq!(clusters, 3);
    let mut on_code = c.clone();
    on_code.loss_scale = LossScale::BatchSums { batch: 40 };
    on_code.threshold = Threshold::Absolute {
        value: lambda / 40.0,
    };
    assert_eq!(clustered(&on_code), (want, 3));
}

#[test]
fn the_code_scale_names_its_field_where_it_cannot_apply() {
    let mut c = config(Distance::L2, Threshold::Quantile { value: 0.2 });
    c.loss_scale = LossScale::BatchSums { batch: 10 };
    let err = crate::common::checked::Checked::new(c.clone()).unwrap_err();
    assert_eq!(err.field, "loss_scale");
    c.distance = Distance::CrossLoss;
    c.loss_scale = LossScale::BatchSums { batch: 0 };
    let err = crate::common::checked::Checked::new(c).unwrap_err();
    assert_eq!(err.field, "loss_scale.batch");
}
