//! What the metrics count as bytes on the wire is what the wire carries: every
//! message of every algorithm of the table, in real rounds, is encoded as the networked
//! transport encodes it (`net::codec`), and its length must equal the
//! message's `wire_bytes` within a fixed framing overhead (length prefixes,
//! enum tags, small integers). The encoded form is each message's explicit
//! per-client wire form: one cluster model for FedAvg-style messages, only
//! the own model under IFCA's stable identity, shared layers once.

mod common;

use fedcluster_algorithms::{Algorithm, AlgorithmConfig, Checked, Visit};
use fedcluster_core::{ClientId, Message, RoundCtx};
use fedcluster_net::codec;
use fedcluster_run::config::RunConfig;
use fedcluster_run::experiment::{build_data, build_model, client_sizes, setup};
use fedcluster_sim::{EngineError, InProcess, Transport, run};

use common::{small, small_runs, two_phase_mixed};

/// Bytes a message's encoding may differ from its `wire_bytes`.
const FRAMING: i64 = 64;

/// An in-process transport that encodes every message it carries and checks
/// its length.
struct Measured<'a, C> {
    inner: InProcess<'a, C>,
    checked: usize,
    worst: i64,
}

fn check<M: Message + serde::Serialize>(msg: &M, what: &str, worst: &mut i64) {
    let encoded = codec::encode(msg).unwrap().len() as i64;
    let counted = msg.wire_bytes() as i64;
    let gap = encoded - counted;
    assert!(
        gap.abs() <= FRAMING,
        "{what}: encoded {encoded} bytes, counted {counted}"
    );
    *worst = (*worst).max(gap.abs());
}

impl<'a, C, D, U> Transport<D, U> for Measured<'a, C>
where
    C: fedcluster_core::ClientHalf<Down = D, Up = U> + Clone,
    D: Message + serde::Serialize + Sync,
    U: Message + serde::Serialize + Send,
    InProcess<'a, C>: Transport<D, U>,
{
    fn exchange(
        &mut self,
        ctx: &RoundCtx,
        plan: &[(ClientId, D)],
        deliver: &mut dyn FnMut(ClientId, U) -> Result<(), EngineError>,
    ) -> Result<(), EngineError> {
        for (id, msg) in plan {
            check(
                msg,
                &format!("round {} down to {id}", ctx.round),
                &mut self.worst,
            );
            self.checked += 1;
        }
        let (worst, checked) = (&mut self.worst, &mut self.checked);
        self.inner.exchange(ctx, plan, &mut |id, up: U| {
            check(&up, &format!("round {} up from {id}", ctx.round), worst);
            *checked += 1;
            deliver(id, up)
        })
    }

    fn num_clients(&self) -> usize {
        Transport::<D, U>::num_clients(&self.inner)
    }
}

/// Runs the config's algorithm over a [`Measured`] transport; returns the
/// messages checked and the largest gap.
struct MeasuredRun<'a> {
    config: &'a RunConfig,
    text: &'a str,
}

impl Visit for MeasuredRun<'_> {
    type Output = (usize, i64);
    fn visit<A: Algorithm>(self, config: Checked<A::Config>) -> (usize, i64) {
        let data = build_data(self.config).unwrap();
        let view = data.view();
        let model = build_model(self.config, &view).unwrap();
        let sizes = client_sizes(&view);
        let setup = setup(self.config, &view, model.as_ref(), &sizes, None);
        let client = A::client(&config);
        let mut server = A::server(config, &setup).unwrap_or_else(|e| panic!("{}: {e}", self.text));
        let inner =
            InProcess::with_prototype(client, view.train.as_ref(), model.as_ref(), 1, 1).unwrap();
        let mut transport = Measured {
            inner,
            checked: 0,
            worst: 0,
        };
        run(&mut server, &mut transport, self.config.rounds, 1, |_| {
            Ok(())
        })
        .unwrap();
        (transport.checked, transport.worst)
    }
}

fn measure(algorithm: &str, rounds: usize, extra: &[&str]) {
    measure_config(&small(algorithm, rounds), algorithm, extra);
}

/// Measures `text`'s run; returns the name of the algorithm it ran.
fn measure_config(text: &str, algorithm: &str, extra: &[&str]) -> &'static str {
    let overrides: Vec<String> = extra.iter().map(|s| s.to_string()).collect();
    let config = RunConfig::parse(text, &overrides, "wire test").unwrap();
    let (checked, worst) = config
        .algorithm
        .clone()
        .visit(MeasuredRun {
            config: &config,
            text: algorithm,
        })
        .unwrap();
    assert!(checked > 0, "{algorithm}: no message");
    eprintln!("{checked} messages within {worst} bytes of their count: {algorithm} {extra:?}");
    config.algorithm.name()
}

/// Every algorithm of the table, from its small runs (`common::small_runs`).
#[test]
fn every_algorithms_messages_are_as_long_as_the_metrics_count() {
    for &name in AlgorithmConfig::NAMES {
        let runs = small_runs(name);
        assert!(
            !runs.is_empty(),
            "`{name}` has no small run in tests/common.rs (`small_runs`)"
        );
        for text in runs {
            assert_eq!(measure_config(&text, name, &[]), name);
        }
    }
}

/// Weight sharing on a two-layer model: the shared layers cross once.
#[test]
fn ifca_weight_sharing_sends_the_shared_layers_once() {
    let mlp = "name = \"ifca\"\nclusters = 2\nlr = 0.1\nweight_sharing = true";
    measure(
        mlp,
        3,
        &[
            "model.kind=\"mlp\"",
            "model.hidden=8",
            "data={ kind = \"synthetic-images\", clients = 8, points_per_client = 10, \
             test_points_per_client = 5, clusters = 2, classes = 3, height = 4, width = 4, \
             channels = 1 }",
        ],
    );
}

/// The two-phase method's Phase 1 (subspace exchanges, anchor steps) and
/// Phase 2, on its own data, with the SVD subspace (its small run, above,
/// has orthogonal iteration).
#[test]
fn two_phase_messages_with_the_svd_subspace_are_as_long_as_the_metrics_count() {
    measure_config(
        &two_phase_mixed(30),
        "twophase (svd)",
        &["algorithm.phase1.subspace={ kind = \"svd\" }"],
    );
}
