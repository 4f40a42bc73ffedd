//! PACFL: subspaces and angles against hand-made answers, the clusters of a
//! federation whose clusters' data lie in different subspaces, and the same
//! bits on one or two threads.

use rand::Rng as _;
use rand_distr::{Distribution, StandardNormal};

use fedcluster_core::{Batch, Purpose, RoundCtx, ServerHalf, Targets, stream};
use fedcluster_metrics::clustering::adjusted_rand_index;
use fedcluster_models::LinearRegression;
use fedcluster_sim::{InProcess, run};

use super::subspace::{class_bases, data_basis, min_pairwise_angle, orthonormal, smallest_angle};
use super::{Basis, Config, Pacfl, Proximity, Up};
use crate::common::agglomerative::{Cut, Linkage};
use crate::common::checked::Checked;
use crate::common::init::InitScheme;
use crate::table::{Algorithm, Setup};

const E1: [f32; 4] = [1.0, 0.0, 0.0, 0.0];
const E2: [f32; 4] = [0.0, 1.0, 0.0, 0.0];
const E3: [f32; 4] = [0.0, 0.0, 1.0, 0.0];

fn angle(a: &[f32], b: &[f32]) -> f64 {
    smallest_angle(&orthonormal(a, 4), &orthonormal(b, 4))
}

#[test]
fn the_data_basis_spans_the_datas_plane_from_either_gram_matrix() {
    // Points in the plane of e1 and e2 (more variance along e1), in R^4.
    let rows = |n: usize| -> Vec<f32> {
        (0..n)
            .flat_map(|i| {
                let (a, b) = ((i as f32 - 2.5) * 3.0, ((i * 7) % 5) as f32 - 2.0);
                [a, b, 0.0, 0.0]
            })
            .collect()
    };
    for n in [3, 20] {
        let basis = data_basis(&rows(n), 4, 3);
        assert_eq!(basis.len(), 8, "rank 2 gives two columns ({n} points)");
        assert!(angle(&basis, &[E1, E2].concat()) < 1e-3);
        assert!((basis[0].abs() - 1.0).abs() < 0.05, "e1 first: {basis:?}");
        let norm: f32 = basis[4..].iter().map(|v| v * v).sum();
        assert!((norm - 1.0).abs() < 1e-5);
    }
    assert!(data_basis(&[], 4, 2).is_empty());
}

#[test]
fn per_class_bases_are_each_classs_own_direction() {
    let x = [E1, [2.0, 0.0, 0.0, 0.0], E3, [0.0, 0.0, -3.0, 0.0]].concat();
    let y = [4u32, 4, 1, 1];
    let batch = Batch::new(&x, Targets::Class(&y), 4).unwrap();
    let columns = class_bases(&batch, 2).unwrap();
    assert_eq!(columns.len(), 8, "one column per class (rank 1 each)");
    // Class 1 first: ±e3, then class 4: ±e1.
    assert_eq!(columns[2].abs(), 1.0);
    assert_eq!(columns[4].abs(), 1.0);
    let real = [0.0f32; 4];
    let regression = Batch::new(&x, Targets::Real(&real), 4).unwrap();
    assert!(class_bases(&regression, 2).is_none());
}

#[test]
fn angles_between_subspaces_are_hand_computed() {
    let diagonal = [0.5f32.sqrt(), 0.5f32.sqrt(), 0.0, 0.0];
    assert!((angle(&E1, &diagonal) - 45.0).abs() < 1e-4);
    assert!((min_pairwise_angle(&E1, &diagonal, 4) - 45.0).abs() < 1e-4);
    let (e12, e23) = ([E1, E2].concat(), [E2, E3].concat());
    assert!(angle(&e12, &e23) < 1e-4, "they share e2");
    assert!(min_pairwise_angle(&e12, &[E3, E2].concat(), 4) < 1e-4);
    assert!((angle(&e12, &E3) - 90.0).abs() < 1e-9);
    let minus_e2 = [0.0, -1.0, 0.0, 0.0];
    assert_eq!(min_pairwise_angle(&e12, &minus_e2, 4), 0.0, "sign-free");
    assert_eq!(angle(&[], &E1), 90.0);
}

fn config(proximity: Proximity, cut: Cut, participation: f64) -> Checked<Config> {
    Checked::new(Config {
        basis: 3,
        per_class: false,
        proximity,
        cut,
        linkage: Linkage::Weighted,
        lr: 0.05,
        local_steps: 3,
        participation,
        init: InitScheme::Zeros,
        optimizer: Default::default(),
    })
    .unwrap()
}

/// 12 clients in 3 clusters; cluster `c`'s points lie in its own random
/// 3-dimensional subspace of R^12 (standard deviations 3, 2, 1 along it) plus
/// noise 0.01, with linear targets. Client `i` is in cluster `i % 3`.
fn subspace_federation(seed: u64) -> Vec<(Vec<f32>, Vec<f32>)> {
    let (d, n) = (12, 40);
    let mut rng = stream(seed, Purpose::ClientData, 0, 0);
    let gauss = |rng: &mut fedcluster_core::Rng| -> f32 { StandardNormal.sample(rng) };
    let bases: Vec<Vec<f32>> = (0..3)
        .map(|_| (0..3 * d).map(|_| gauss(&mut rng)).collect())
        .collect();
    (0..12)
        .map(|i| {
            let b = &bases[i % 3];
            let mut x = Vec::with_capacity(n * d);
            let mut y = Vec::with_capacity(n);
            for _ in 0..n {
                let z = [
                    3.0 * gauss(&mut rng),
                    2.0 * gauss(&mut rng),
                    gauss(&mut rng),
                ];
                let point: Vec<f32> = (0..d)
                    .map(|r| {
                        (0..3).map(|c| z[c] * b[c * d + r]).sum::<f32>() + 0.01 * gauss(&mut rng)
                    })
                    .collect();
                y.push(point.iter().sum::<f32>() * (1 + i % 3) as f32 + rng.random::<f32>() * 0.01);
                x.extend(point);
            }
            (x, y)
        })
        .collect()
}

/// PACFL over the engine: the final assignment and models' bits.
fn pacfl_run(config: Checked<Config>, rounds: usize, threads: usize) -> (Vec<usize>, Vec<u32>) {
    let data = subspace_federation(3);
    let batches: Vec<Batch<'_>> = data
        .iter()
        .map(|(x, y)| Batch::new(x, Targets::Real(y), 12).unwrap())
        .collect();
    let model = LinearRegression::new(12).unwrap();
    let client = Pacfl::client(&config);
    let mut server = Pacfl::server(config, &Setup::new(&model, batches.len(), 4)).unwrap();
    let mut transport =
        InProcess::new(vec![client; batches.len()], &batches, &model, 4, threads).unwrap();
    run(&mut server, &mut transport, rounds, 4, |_| Ok(())).unwrap();
    let snap = server.snapshot();
    let labels = snap.replicas[0]
        .assignment
        .iter()
        .map(|a| a.unwrap())
        .collect();
    let bits = snap.replicas[0]
        .models
        .concat()
        .iter()
        .map(|v| v.to_bits())
        .collect();
    (labels, bits)
}

#[test]
fn either_proximity_recovers_clusters_whose_data_lie_in_different_subspaces() {
    let truth: Vec<usize> = (0..12).map(|i| i % 3).collect();
    // Within a cluster: 0.1° between the subspaces, up to 17° between their
    // closest principal vectors; across clusters at least 37° and 49°.
    for (proximity, beta) in [
        (Proximity::SmallestAngle, 5.0),
        (Proximity::MinPairwise, 25.0),
    ] {
        let (labels, _) = pacfl_run(config(proximity, Cut::Distance { value: beta }, 1.0), 3, 0);
        assert_eq!(
            adjusted_rand_index(&labels, &truth),
            1.0,
            "{proximity:?}: {labels:?}"
        );
    }
    let (labels, bits) = pacfl_run(
        config(Proximity::SmallestAngle, Cut::Clusters { value: 3 }, 1.0),
        1,
        0,
    );
    assert_eq!(adjusted_rand_index(&labels, &truth), 1.0);
    assert_eq!(
        bits.len(),
        3 * 12,
        "three clusters of one linear model each"
    );
}

#[test]
fn one_and_two_threads_give_the_same_bits() {
    let c = || config(Proximity::SmallestAngle, Cut::Distance { value: 5.0 }, 0.5);
    assert_eq!(pacfl_run(c(), 8, 1), pacfl_run(c(), 8, 2));
}

#[test]
fn a_basis_of_another_dimension_or_phase_is_refused() {
    let model = LinearRegression::new(4).unwrap();
    let c = config(Proximity::SmallestAngle, Cut::Clusters { value: 1 }, 1.0);
    let mut s = Pacfl::server(c, &Setup::new(&model, 3, 1)).unwrap();
    let ctx = RoundCtx {
        round: 0,
        rounds: 2,
        num_clients: 3,
    };
    s.plan(&ctx, &mut stream(1, Purpose::Server, 0, 0)).unwrap();
    let basis = |dim: u32, columns: Vec<f32>| Up::Basis(Basis { dim, columns });
    s.receive(&ctx, 0, basis(4, E1.to_vec())).unwrap();
    assert!(s.receive(&ctx, 1, basis(3, vec![1.0, 0.0, 0.0])).is_err());
    assert!(s.receive(&ctx, 1, basis(4, vec![1.0, 0.0])).is_err());
    let reply = crate::common::messages::ModelReply::new(vec![0.0; 4], Some(0.0), 1);
    assert!(s.receive(&ctx, 1, Up::Train(reply)).is_err());
    let err = s.finish(&ctx).unwrap_err().to_string();
    assert!(err.contains("every client's subspace"), "{err}");
}
