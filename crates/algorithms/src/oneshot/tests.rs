//! One-shot clustering: the ERM phase, k-means on the local models, then FedAvg.

use fedcluster_core::{Purpose, RoundCtx, ServerHalf, stream};

use super::{Config, Down, ErmStart, OneShotServer, Up};
use crate::common::aggregate::Aggregation;
use crate::common::checked::Checked;
use crate::common::init::InitScheme;
use crate::common::messages::ModelReply;

fn config() -> Checked<Config> {
    Checked::new(Config {
        clusters: 2,
        erm_steps: 10,
        erm_lr: 0.1,
        erm_init: InitScheme::Zeros,
        erm_start: ErmStart::Own,
        kmeans_restarts: 3,
        aggregation: Aggregation::Model,
        lr: 0.1,
        local_steps: 2,
        participation: 1.0,
        optimizer: Default::default(),
    })
    .unwrap()
}

fn ctx(round: usize) -> RoundCtx {
    RoundCtx {
        round,
        rounds: 5,
        num_clients: 4,
    }
}

fn erm(v: [f32; 2]) -> Up {
    Up::Erm(ModelReply::new(v.to_vec(), Some(0.0), 10))
}

#[test]
fn local_erms_are_clustered_and_centroids_start_fedavg() {
    let mut s = OneShotServer::new(config(), 4, 9);
    let mut rng = stream(9, Purpose::Server, 0, 0);
    let plan = s.plan(&ctx(0), &mut rng).unwrap();
    assert_eq!(plan.len(), 4);
    assert!(plan.iter().all(|(_, d)| matches!(d, Down::Erm(None))));
    let replies = vec![
        (0, erm([0.0, 0.0])),
        (1, erm([10.0, 10.0])),
        (2, erm([0.0, 2.0])),
        (3, erm([10.0, 12.0])),
    ];
    s.absorb(&ctx(0), replies).unwrap();
    let snap = s.snapshot();
    let a = snap.replicas[0].assignment;
    assert_eq!(a[0], a[2]);
    assert_eq!(a[1], a[3]);
    assert_ne!(a[0], a[1]);
    let c0 = snap.replicas[0].models[a[0].unwrap()];
    let c1 = snap.replicas[0].models[a[1].unwrap()];
    assert_eq!((c0, c1), (&[0.0, 1.0][..], &[10.0, 11.0][..]));
    let plan = s.plan(&ctx(1), &mut rng).unwrap();
    assert!(plan.iter().all(|(_, d)| matches!(d, Down::Train(_))));
}

#[test]
fn clustering_needs_every_clients_erm() {
    let mut s = OneShotServer::new(config(), 4, 9);
    s.plan(&ctx(0), &mut stream(9, Purpose::Server, 0, 0))
        .unwrap();
    let err = s
        .absorb(&ctx(0), vec![(0, erm([0.0, 0.0])), (1, erm([1.0, 1.0]))])
        .unwrap_err()
        .to_string();
    assert!(err.contains("every client's ERM"), "{err}");
}

#[test]
fn a_shared_start_is_sent_to_every_client_and_counted_on_the_wire() {
    use fedcluster_core::Message as _;
    let start = vec![0.5_f32, -1.5];
    let mut s = OneShotServer::new(config(), 4, 9).with_start(start.clone());
    let plan = s
        .plan(&ctx(0), &mut stream(9, Purpose::Server, 0, 0))
        .unwrap();
    assert_eq!(plan.len(), 4);
    for (_, down) in &plan {
        let Down::Erm(Some(sent)) = down else {
            panic!("no start in {down:?}");
        };
        assert_eq!(sent.model(), &start[..]);
        assert_eq!(
            down.wire_bytes(),
            Down::Erm(None).wire_bytes() + sent.wire_bytes()
        );
        assert!(sent.wire_bytes() >= 4 * start.len() as u64);
    }
}
