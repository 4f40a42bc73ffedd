//! Tests of the synthetic generators: shapes, determinism, truth norms, labels,
//! noise level, cluster frequencies and spec validation.

use super::*;
use crate::Task;
use fedcluster_core::ShardBuf;
use fedcluster_core::params::norm;

fn ifca_spec() -> IfcaSyntheticSpec {
    IfcaSyntheticSpec {
        clients: 12,
        points_per_client: 7,
        test_points_per_client: 3,
        dim: 5,
        clusters: 3,
        noise_std: 0.5,
        separation: 2.5,
        truth_scale: Default::default(),
    }
}

fn mixed_spec() -> MixedRegressionSpec {
    MixedRegressionSpec {
        dim: 4,
        clusters: 3,
        probs: vec![0.2, 0.3, 0.5],
        client_sizes: vec![
            ClientGroup {
                count: 9,
                points: 10,
            },
            ClientGroup {
                count: 2,
                points: 50,
            },
        ],
        noise_std: 0.2,
        test_points_per_client: 6,
    }
}

/// Every feature, target and parameter as raw bits, for exact comparisons.
fn bits(d: &FederatedData) -> Vec<u32> {
    let mut out = Vec::new();
    for c in d.train.iter().chain(&d.test) {
        out.extend(c.x.iter().map(|v| v.to_bits()));
        if let TargetsOwned::Real(y) = &c.y {
            out.extend(y.iter().map(|v| v.to_bits()));
        }
    }
    for p in d.truth.params.iter().flatten() {
        out.extend(p.iter().map(|v| v.to_bits()));
    }
    out
}

fn real(c: &ClientData) -> &[f32] {
    match &c.y {
        TargetsOwned::Real(y) => y,
        TargetsOwned::Class(_) => panic!("expected real targets"),
    }
}

/// Residuals `y - <x, θ*>` of every training sample.
fn residuals(d: &FederatedData) -> Vec<f64> {
    let params = d.truth.params.as_ref().unwrap();
    let mut out = Vec::new();
    for (c, &j) in d.train.iter().zip(&d.truth.train_labels) {
        for (row, y) in c.x.chunks_exact(d.dim).zip(real(c)) {
            out.push(f64::from(*y) - dot(row, &params[j]));
        }
    }
    out
}

fn variance(v: &[f64]) -> f64 {
    let mean = v.iter().sum::<f64>() / v.len() as f64;
    v.iter().map(|r| (r - mean).powi(2)).sum::<f64>() / v.len() as f64
}

#[test]
fn ifca_shapes_labels_and_truth_norms() {
    let spec = ifca_spec();
    let d = ifca_synthetic(&spec, 7).unwrap();
    assert_eq!(d.validate(), Ok(()));
    assert_eq!(d.task, Task::Regression);
    assert_eq!(d.dim, 5);
    assert_eq!(d.train.len(), 12);
    assert_eq!(d.test.len(), 12);
    for c in &d.train {
        assert_eq!(c.len(), 7);
        assert_eq!(c.x.len(), 35);
    }
    for c in &d.test {
        assert_eq!(c.len(), 3);
        assert_eq!(c.x.len(), 15);
    }
    let blocks = vec![0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2];
    assert_eq!(d.truth.train_labels, blocks);
    assert_eq!(d.truth.test_labels, blocks);
    assert_eq!(d.truth.clusters, 3);
    let params = d.truth.params.as_ref().unwrap();
    assert_eq!(params.len(), 3);
    for p in params {
        assert_eq!(p.len(), 5);
        assert!((norm(p) - 2.5).abs() < 1e-5, "norm {}", norm(p));
        // Bernoulli support: every entry is 0 or the common rescaled value.
        let nz: Vec<f32> = p.iter().copied().filter(|v| *v != 0.0).collect();
        assert!(!nz.is_empty());
        assert!(nz.iter().all(|v| *v == nz[0]));
    }
}

#[test]
fn ifca_truth_norm_holds_in_high_and_tiny_dimension() {
    for (dim, r) in [(1000, 0.1), (1, 3.0), (2, 1e-3)] {
        let spec = IfcaSyntheticSpec {
            dim,
            separation: r,
            truth_scale: Default::default(),
            clients: 4,
            clusters: 4,
            ..ifca_spec()
        };
        let d = ifca_synthetic(&spec, 11).unwrap();
        for p in d.truth.params.as_ref().unwrap() {
            assert!((norm(p) - r).abs() < 1e-5 * r.max(1.0), "dim {dim}");
        }
    }
}

#[test]
fn generators_are_deterministic_in_the_seed() {
    let a = ifca_synthetic(&ifca_spec(), 42).unwrap();
    let b = ifca_synthetic(&ifca_spec(), 42).unwrap();
    let c = ifca_synthetic(&ifca_spec(), 43).unwrap();
    assert_eq!(bits(&a), bits(&b));
    assert_ne!(bits(&a), bits(&c));
    assert_ne!(a.train[0].x, c.train[0].x);

    let a = mixed_regression(&mixed_spec(), 42).unwrap();
    let b = mixed_regression(&mixed_spec(), 42).unwrap();
    let c = mixed_regression(&mixed_spec(), 43).unwrap();
    assert_eq!(bits(&a), bits(&b));
    assert_eq!(a.truth.train_labels, b.truth.train_labels);
    assert_ne!(bits(&a), bits(&c));
}

#[test]
fn train_and_test_streams_differ() {
    let spec = IfcaSyntheticSpec {
        test_points_per_client: 7,
        ..ifca_spec()
    };
    let d = ifca_synthetic(&spec, 1).unwrap();
    assert_ne!(d.train[0].x, d.test[0].x);
    assert_ne!(d.train[0].x, d.train[1].x);
}

#[test]
fn a_client_does_not_depend_on_the_other_clients() {
    let small = MixedRegressionSpec {
        client_sizes: vec![ClientGroup {
            count: 5,
            points: 10,
        }],
        ..mixed_spec()
    };
    let big = MixedRegressionSpec {
        client_sizes: vec![ClientGroup {
            count: 40,
            points: 10,
        }],
        ..mixed_spec()
    };
    let a = mixed_regression(&small, 9).unwrap();
    let b = mixed_regression(&big, 9).unwrap();
    assert_eq!(a.train[..], b.train[..5]);
    assert_eq!(a.test[..], b.test[..5]);
    assert_eq!(a.truth.train_labels[..], b.truth.train_labels[..5]);
}

#[test]
fn noise_variance_matches_sigma_squared() {
    let spec = IfcaSyntheticSpec {
        clients: 20,
        points_per_client: 1000,
        clusters: 4,
        noise_std: 0.7,
        ..ifca_spec()
    };
    let d = ifca_synthetic(&spec, 3).unwrap();
    let var = variance(&residuals(&d));
    assert!((var / 0.49 - 1.0).abs() < 0.1, "variance {var}");

    let spec = MixedRegressionSpec {
        client_sizes: vec![ClientGroup {
            count: 200,
            points: 100,
        }],
        ..mixed_spec()
    };
    let d = mixed_regression(&spec, 3).unwrap();
    let var = variance(&residuals(&d));
    assert!((var / 0.04 - 1.0).abs() < 0.1, "variance {var}");
}

#[test]
fn noiseless_targets_are_exact_inner_products() {
    let spec = IfcaSyntheticSpec {
        noise_std: 0.0,
        ..ifca_spec()
    };
    let d = ifca_synthetic(&spec, 5).unwrap();
    assert!(residuals(&d).iter().all(|r| r.abs() < 1e-5));
}

#[test]
fn mixed_regression_shapes_and_truth_scale() {
    let spec = MixedRegressionSpec {
        dim: 400,
        ..mixed_spec()
    };
    let d = mixed_regression(&spec, 5).unwrap();
    assert_eq!(d.validate(), Ok(()));
    assert_eq!(d.train.len(), 11);
    assert_eq!(d.test.len(), 11);
    assert!(d.train[..9].iter().all(|c| c.len() == 10));
    assert!(d.train[9..].iter().all(|c| c.len() == 50));
    assert!(d.test.iter().all(|c| c.len() == 6));
    assert_eq!(d.truth.train_labels, d.truth.test_labels);
    // (2/√d)·N(0, I_d) has squared norm 4·χ²_d/d ≈ 4 ± 4·√(2/d).
    for p in d.truth.params.as_ref().unwrap() {
        let n2 = norm(p).powi(2);
        assert!((n2 - 4.0).abs() < 1.5, "squared norm {n2}");
    }
}

#[test]
fn mixed_regression_cluster_frequencies_follow_probs() {
    let spec = MixedRegressionSpec {
        dim: 2,
        client_sizes: vec![ClientGroup {
            count: 6000,
            points: 1,
        }],
        test_points_per_client: 1,
        ..mixed_spec()
    };
    let d = mixed_regression(&spec, 21).unwrap();
    let mut counts = [0usize; 3];
    for l in &d.truth.train_labels {
        counts[*l] += 1;
    }
    for (c, p) in counts.iter().zip(&spec.probs) {
        let freq = *c as f64 / 6000.0;
        assert!((freq - p).abs() < 0.025, "freq {freq} vs {p}");
    }
}

#[test]
fn zero_probability_clusters_are_never_drawn() {
    let spec = MixedRegressionSpec {
        probs: vec![0.0, 1.0, 0.0],
        ..mixed_spec()
    };
    let d = mixed_regression(&spec, 2).unwrap();
    assert!(d.truth.train_labels.iter().all(|l| *l == 1));
}

fn ifca_field(spec: IfcaSyntheticSpec) -> String {
    ifca_synthetic(&spec, 0).unwrap_err().field().to_string()
}

fn mixed_field(spec: MixedRegressionSpec) -> String {
    mixed_regression(&spec, 0).unwrap_err().field().to_string()
}

#[test]
fn ifca_validation_names_the_field() {
    let err = ifca_synthetic(
        &IfcaSyntheticSpec {
            clients: 10,
            ..ifca_spec()
        },
        0,
    )
    .unwrap_err();
    assert_eq!(err.field(), "clients");
    assert!(err.to_string().contains("clusters"), "{err}");
    let s = ifca_spec;
    assert_eq!(
        ifca_field(IfcaSyntheticSpec { clusters: 0, ..s() }),
        "clusters"
    );
    assert_eq!(ifca_field(IfcaSyntheticSpec { dim: 0, ..s() }), "dim");
    assert_eq!(
        ifca_field(IfcaSyntheticSpec {
            points_per_client: 0,
            ..s()
        }),
        "points_per_client"
    );
    assert_eq!(
        ifca_field(IfcaSyntheticSpec {
            noise_std: f64::NAN,
            ..s()
        }),
        "noise_std"
    );
    assert_eq!(
        ifca_field(IfcaSyntheticSpec {
            separation: -1.0,
            truth_scale: Default::default(),
            ..s()
        }),
        "separation"
    );
    assert_eq!(
        ifca_field(IfcaSyntheticSpec {
            dim: usize::MAX,
            ..s()
        }),
        "points_per_client"
    );
}

#[test]
fn mixed_validation_names_the_field() {
    let s = mixed_spec;
    assert_eq!(
        mixed_field(MixedRegressionSpec {
            probs: vec![0.5, 0.5],
            ..s()
        }),
        "probs"
    );
    assert_eq!(
        mixed_field(MixedRegressionSpec {
            probs: vec![0.5, 0.5, 0.5],
            ..s()
        }),
        "probs"
    );
    assert_eq!(
        mixed_field(MixedRegressionSpec {
            probs: vec![1.2, -0.2, 0.0],
            ..s()
        }),
        "probs[1]"
    );
    let mut bad = s();
    bad.client_sizes[1].points = 0;
    assert_eq!(mixed_field(bad), "client_sizes[1].points");
    let mut bad = s();
    bad.client_sizes[0].count = 0;
    assert_eq!(mixed_field(bad), "client_sizes[0].count");
    assert_eq!(
        mixed_field(MixedRegressionSpec {
            client_sizes: vec![],
            ..s()
        }),
        "client_sizes"
    );
    assert_eq!(
        mixed_field(MixedRegressionSpec {
            noise_std: -0.1,
            ..s()
        }),
        "noise_std"
    );
    assert_eq!(
        mixed_field(MixedRegressionSpec {
            test_points_per_client: 0,
            ..s()
        }),
        "test_points_per_client"
    );
    // Probabilities that sum to 1 only up to rounding are accepted.
    let third = 1.0 / 3.0;
    let ok = MixedRegressionSpec {
        probs: vec![third, third, third],
        ..s()
    };
    assert!(mixed_regression(&ok, 0).is_ok());
}

/// Every client of `generated`'s view, produced into one reused buffer,
/// against the stored data set: the same samples, bit for bit.
fn assert_generated_matches_stored(generated: GeneratedData) {
    let stored = generated.clone().materialize();
    let view = generated.view();
    let bits = |x: &[f32]| x.iter().map(|v| v.to_bits()).collect::<Vec<_>>();
    let mut buf = ShardBuf::default();
    for (shards, clients) in [(&view.train, &stored.train), (&view.test, &stored.test)] {
        assert_eq!(shards.num_clients(), clients.len());
        // Backwards, so a client's samples cannot depend on the previous one.
        for i in (0..clients.len()).rev() {
            let batch = shards.batch(i, &mut buf);
            let want = clients[i].batch(stored.dim);
            assert_eq!(shards.samples(i), want.len(), "client {i}");
            assert_eq!(bits(batch.x), bits(want.x), "client {i}");
            match (batch.y, want.y) {
                (fedcluster_core::Targets::Real(a), fedcluster_core::Targets::Real(b)) => {
                    assert_eq!(bits(a), bits(b), "client {i}")
                }
                _ => panic!("regression targets expected"),
            }
        }
    }
    assert_eq!(view.truth, &stored.truth);
    assert_eq!(view.dim, stored.dim);
}

#[test]
fn clients_generated_on_demand_are_the_stored_clients() {
    assert_generated_matches_stored(ifca_synthetic_on_demand(&ifca_spec(), 5).unwrap());
    let mut spec = mixed_spec();
    spec.client_sizes = vec![
        ClientGroup {
            count: 4,
            points: 3,
        },
        ClientGroup {
            count: 3,
            points: 9,
        },
    ];
    let generated = mixed_regression_on_demand(&spec, 7).unwrap();
    assert_eq!(generated.view().train.samples(3), 3);
    assert_eq!(generated.view().train.samples(4), 9);
    assert_generated_matches_stored(generated);
    // The stored generators are the materialised on-demand ones.
    assert_eq!(
        mixed_regression(&spec, 7).unwrap(),
        mixed_regression_on_demand(&spec, 7).unwrap().materialize()
    );
}

#[test]
fn stored_bytes_count_train_and_test_samples_with_their_targets() {
    let spec = ifca_spec();
    let want = (spec.clients * (spec.points_per_client + spec.test_points_per_client))
        * (spec.dim + 1)
        * 4;
    let generated = ifca_synthetic_on_demand(&spec, 1).unwrap();
    assert_eq!(generated.stored_bytes(), want as u128);
}
