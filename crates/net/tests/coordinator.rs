//! The coordinator against hand-driven gRPC clients: tampered chunks and
//! NaN replies are rejected and counted, a silent client is dropped, a round
//! below `min_clients` fails, oversized messages and wrong tokens are refused
//! while the coordinator stays up.

use std::net::SocketAddr;
use std::sync::mpsc;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use fedcluster_core::{AlgoError, ClientId, Message, RoundCtx};
use fedcluster_net::chunk::{MAX_CHUNK, chunk, sha256};
use fedcluster_net::pb::federation_client::FederationClient;
use fedcluster_net::pb::pull_reply::Status as PullStatus;
use fedcluster_net::pb::{Chunk, PullRequest, PushRequest, RegisterRequest};
use fedcluster_net::{Coordinator, CoordinatorOptions, NetStats, PROTOCOL_VERSION, codec};
use fedcluster_sim::{EngineError, Transport};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct Vector(Vec<f32>);

impl Message for Vector {
    fn wire_bytes(&self) -> u64 {
        4 * self.0.len() as u64
    }
    fn is_finite(&self) -> bool {
        self.0.iter().all(|v| v.is_finite())
    }
}

const TOKEN: &str = "let-me-in";

fn start(num_clients: usize, min_clients: usize, round_timeout: Duration) -> Coordinator {
    Coordinator::start(CoordinatorOptions {
        listen: "127.0.0.1:0".parse().unwrap(),
        tls: None,
        token: Some(TOKEN.into()),
        config_toml: "rounds = 1".into(),
        num_clients,
        rounds: 1,
        round_timeout,
        min_clients,
        checkpoint: None,
        resume: false,
    })
    .unwrap()
}

/// What one round delivered (or its error), the counters after it, and the
/// coordinator itself: the test drops it once its clients are done, so a
/// reply in flight when the round closed is not cut off (broken pipe).
type RoundResult = (
    Result<Vec<(ClientId, Vector)>, String>,
    NetStats,
    Coordinator,
);

/// Runs one round of `plan` on a thread.
fn round_in_background(
    mut coordinator: Coordinator,
    plan: Vec<(ClientId, Vector)>,
) -> mpsc::Receiver<RoundResult> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        coordinator
            .wait_for_clients(Duration::from_secs(20))
            .unwrap();
        let ctx = RoundCtx {
            round: 0,
            rounds: 1,
            num_clients: 2,
        };
        let mut got = Vec::new();
        let result = Transport::<Vector, Vector>::exchange(
            &mut coordinator,
            &ctx,
            &plan,
            &mut |id, up: Vector| -> Result<(), EngineError> {
                // As a server does: a reply of the wrong length is refused
                // before anything changes.
                if up.0.len() != plan[0].1.0.len() {
                    return Err(EngineError::Server {
                        round: 0,
                        error: AlgoError::malformed(0, id),
                    });
                }
                got.push((id, up));
                Ok(())
            },
        )
        .map(|()| got)
        .map_err(|e| e.to_string());
        let stats = coordinator.stats();
        tx.send((result, stats, coordinator)).unwrap();
    });
    rx
}

type Rpc = FederationClient<
    tonic::service::interceptor::InterceptedService<
        tonic::transport::Channel,
        fedcluster_net::security::AttachToken,
    >,
>;

async fn connect(addr: SocketAddr, token: Option<&str>) -> Rpc {
    let channel = tonic::transport::Endpoint::from_shared(format!("http://{addr}"))
        .unwrap()
        .connect()
        .await
        .unwrap();
    let attach = fedcluster_net::security::AttachToken::new(token).unwrap();
    FederationClient::with_interceptor(channel, attach)
        .max_encoding_message_size(64 << 20)
        .max_decoding_message_size(64 << 20)
}

async fn register(rpc: &mut Rpc, id: u32) -> String {
    rpc.register(RegisterRequest {
        client_id: id,
        protocol: PROTOCOL_VERSION,
        fresh: true,
        client_id_64: 0,
    })
    .await
    .unwrap()
    .into_inner()
    .session
}

/// Pulls until the round's (single-chunk) message arrives.
async fn pull(rpc: &mut Rpc, session: &str) -> Vector {
    loop {
        let r = rpc
            .pull(PullRequest {
                session: session.into(),
                from_round: 0,
                chunk: 0,
            })
            .await
            .unwrap()
            .into_inner();
        if r.status == PullStatus::Work as i32 {
            return codec::decode(&r.chunk.unwrap().data).unwrap();
        }
    }
}

async fn push(rpc: &mut Rpc, session: &str, piece: Chunk) -> (bool, String) {
    let r = rpc
        .push(PushRequest {
            session: session.into(),
            round: 0,
            chunk: Some(piece),
        })
        .await
        .unwrap()
        .into_inner();
    (r.accepted, r.reason)
}

/// `values` as a one-chunk reply.
fn reply_chunk(values: Vec<f32>) -> Chunk {
    chunk(&codec::encode(&Vector(values)).unwrap(), 0).unwrap()
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

#[test]
fn tampered_chunks_nan_and_malformed_replies_are_rejected_and_never_delivered() {
    let coordinator = start(3, 1, Duration::from_secs(20));
    let addr = coordinator.local_addr();
    let plan = vec![
        (0, Vector(vec![1.0; 3])),
        (1, Vector(vec![2.0; 3])),
        (2, Vector(vec![3.0; 3])),
    ];
    let done = round_in_background(coordinator, plan);
    runtime().block_on(async {
        let mut rpc = connect(addr, Some(TOKEN)).await;
        let (s0, s1) = (register(&mut rpc, 0).await, register(&mut rpc, 1).await);
        let s2 = register(&mut rpc, 2).await;
        assert_eq!(pull(&mut rpc, &s0).await, Vector(vec![1.0; 3]));
        assert_eq!(pull(&mut rpc, &s1).await, Vector(vec![2.0; 3]));
        assert_eq!(pull(&mut rpc, &s2).await, Vector(vec![3.0; 3]));
        // Client 2: a reply of the wrong length.
        let short = reply_chunk(vec![1.0; 2]);
        assert!(push(&mut rpc, &s2, short).await.0);
        // Client 0: a chunk whose bytes changed after hashing.
        let mut tampered = reply_chunk(vec![5.0; 3]);
        let mut data = tampered.data.to_vec();
        data[0] ^= 0xff;
        tampered.data = data.into();
        let (accepted, reason) = push(&mut rpc, &s0, tampered).await;
        assert!(!accepted && reason.contains("SHA-256"), "{reason}");
        // Client 1: a well-formed reply holding NaN.
        let nan = reply_chunk(vec![f32::NAN; 3]);
        assert!(push(&mut rpc, &s1, nan).await.0);
        // Client 0 then sends its real reply.
        let good = reply_chunk(vec![5.0; 3]);
        assert!(push(&mut rpc, &s0, good).await.0);
    });
    let (delivered, stats, _coordinator) = done.recv_timeout(Duration::from_secs(30)).unwrap();
    assert_eq!(delivered.unwrap(), vec![(0, Vector(vec![5.0; 3]))]);
    assert_eq!(stats.rejected, 3, "{stats:?}");
    // Each rejection is recorded with its client and reason.
    let issues: Vec<(u32, &str)> = stats
        .issues
        .iter()
        .map(|i| (i.client as u32, i.outcome))
        .collect();
    assert_eq!(
        issues,
        [(0, "rejected"), (1, "rejected"), (2, "rejected")],
        "{stats:?}"
    );
    assert!(stats.issues[0].reason.contains("SHA-256"), "{stats:?}");
    assert!(stats.issues[1].reason.contains("non-finite"), "{stats:?}");
}

#[test]
fn a_silent_client_is_dropped_and_the_round_completes_with_min_clients() {
    let coordinator = start(2, 1, Duration::from_millis(1500));
    let addr = coordinator.local_addr();
    let done = round_in_background(
        coordinator,
        vec![(0, Vector(vec![1.0])), (1, Vector(vec![2.0]))],
    );
    runtime().block_on(async {
        let mut rpc = connect(addr, Some(TOKEN)).await;
        let (s0, _s1) = (register(&mut rpc, 0).await, register(&mut rpc, 1).await);
        pull(&mut rpc, &s0).await;
        let reply = reply_chunk(vec![3.0]);
        assert!(push(&mut rpc, &s0, reply).await.0);
    });
    let (delivered, stats, _coordinator) = done.recv_timeout(Duration::from_secs(30)).unwrap();
    assert_eq!(delivered.unwrap(), vec![(0, Vector(vec![3.0]))]);
    assert_eq!(stats.dropped, 1);
}

#[test]
fn a_round_below_min_clients_fails_with_a_clear_error() {
    let coordinator = start(2, 2, Duration::from_millis(800));
    let addr = coordinator.local_addr();
    let done = round_in_background(
        coordinator,
        vec![(0, Vector(vec![1.0])), (1, Vector(vec![2.0]))],
    );
    runtime().block_on(async {
        let mut rpc = connect(addr, Some(TOKEN)).await;
        register(&mut rpc, 0).await;
        register(&mut rpc, 1).await;
    });
    let (delivered, _, _coordinator) = done.recv_timeout(Duration::from_secs(30)).unwrap();
    let err = delivered.unwrap_err();
    assert!(
        err.contains("0 of 2 replies") && err.contains("min_clients = 2"),
        "{err}"
    );
}

#[test]
fn wrong_tokens_and_oversized_messages_are_refused_and_the_coordinator_stays_up() {
    let coordinator = start(2, 1, Duration::from_secs(5));
    let addr = coordinator.local_addr();
    runtime().block_on(async {
        let mut stranger = connect(addr, Some("guess")).await;
        let refused = stranger
            .register(RegisterRequest {
                client_id: 0,
                protocol: PROTOCOL_VERSION,
                fresh: true,
                client_id_64: 0,
            })
            .await
            .unwrap_err();
        assert_eq!(refused.code(), tonic::Code::Unauthenticated);
        let mut rpc = connect(addr, None).await;
        assert_eq!(
            rpc.register(RegisterRequest {
                client_id: 0,
                protocol: PROTOCOL_VERSION,
                fresh: true,
                client_id_64: 0,
            })
            .await
            .unwrap_err()
            .code(),
            tonic::Code::Unauthenticated
        );
        let mut rpc = connect(addr, Some(TOKEN)).await;
        // Client 2^32 is refused as itself, not wrapped onto client 0.
        let wide = rpc
            .register(RegisterRequest {
                client_id: u32::MAX,
                protocol: PROTOCOL_VERSION,
                fresh: true,
                client_id_64: 1 << 32,
            })
            .await
            .unwrap_err();
        assert_eq!(wide.code(), tonic::Code::InvalidArgument);
        assert!(
            wide.message().contains("client 4294967296"),
            "{}",
            wide.message()
        );
        let session = register(&mut rpc, 0).await;
        let big = vec![0u8; MAX_CHUNK + (1 << 20)];
        let oversized = rpc
            .push(PushRequest {
                session: session.clone(),
                round: 0,
                chunk: Some(Chunk {
                    index: 0,
                    total: 1,
                    sha256: sha256(&big),
                    data: big.into(),
                }),
            })
            .await
            .unwrap_err();
        assert!(
            matches!(
                oversized.code(),
                tonic::Code::OutOfRange | tonic::Code::ResourceExhausted
            ),
            "{oversized:?}"
        );
        // Still serving.
        assert!(!register(&mut rpc, 1).await.is_empty());
    });
    drop(coordinator);
}
