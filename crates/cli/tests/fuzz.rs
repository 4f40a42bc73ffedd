//! Property-based fuzzing (bounded: a fixed number of cases each) of what a
//! user or a peer hands fedcluster: config text and `--set` overrides, and
//! the wire decoder of every algorithm's messages (random bytes, and real
//! messages of every algorithm of the table with bytes changed). Whatever
//! the bytes, the answer is a value or a one-line error, never a panic.

mod common;

use std::sync::OnceLock;

use proptest::prelude::*;

use fedcluster_algorithms::{Algorithm, AlgorithmConfig, VisitType};
use fedcluster_core::RoundCtx;
use fedcluster_net::codec;
use fedcluster_run::bridge::Hosted;
use fedcluster_run::config::RunConfig;
use fedcluster_run::hosted_client::HostedClient;

use common::small_runs;

/// Every config the repository ships and a small run of every algorithm of
/// the table (`common::small_runs`), as text.
fn configs() -> &'static [String] {
    static CONFIGS: OnceLock<Vec<String>> = OnceLock::new();
    CONFIGS.get_or_init(|| {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../configs");
        let mut texts: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .filter_map(|e| {
                let path = e.ok()?.path();
                (path.extension()? == "toml").then(|| std::fs::read_to_string(path).unwrap())
            })
            .collect();
        texts.sort();
        texts.extend(
            AlgorithmConfig::NAMES
                .iter()
                .flat_map(|name| small_runs(name)),
        );
        texts
    })
}

/// A real message of an algorithm: its name, a server-to-client message and
/// the client's reply, as the wire carries them.
struct RealMessage {
    algorithm: &'static str,
    down: Vec<u8>,
    up: Vec<u8>,
}

/// Every round's first message and reply of every small run of every
/// algorithm of the table, run through the halves a host carries messages
/// for (as the Python package and Flower do).
fn real_messages() -> &'static [RealMessage] {
    static MESSAGES: OnceLock<Vec<RealMessage>> = OnceLock::new();
    MESSAGES.get_or_init(|| {
        let mut out = Vec::new();
        for &algorithm in AlgorithmConfig::NAMES {
            for text in small_runs(algorithm) {
                let config = RunConfig::parse(&text, &[], "fuzz.toml").unwrap();
                let mut server = Hosted::start(config.clone()).unwrap();
                let ids: Vec<usize> = (0..server.num_clients()).collect();
                let mut clients = HostedClient::from_config_many(&config, &ids).unwrap();
                while let Some(planned) = server.plan().unwrap() {
                    let ctx = RoundCtx {
                        round: planned.round,
                        rounds: planned.rounds,
                        num_clients: planned.num_clients,
                    };
                    for (i, (id, down)) in planned.messages.into_iter().enumerate() {
                        let up = clients[id].handle(ctx, &down).unwrap();
                        if i == 0 {
                            out.push(RealMessage {
                                algorithm,
                                down: down.clone(),
                                up: up.clone(),
                            });
                        }
                        server.receive(id, up).unwrap();
                    }
                    server.finish(false).unwrap();
                }
            }
        }
        out
    })
}

/// `text` with a few of its characters replaced, cut or duplicated.
fn mutate(text: &str, edits: &[(usize, char, u8)]) -> String {
    let mut chars: Vec<char> = text.chars().collect();
    for &(at, c, kind) in edits {
        if chars.is_empty() {
            chars.push(c);
            continue;
        }
        let at = at % chars.len();
        match kind % 3 {
            0 => chars[at] = c,
            1 => chars.truncate(at),
            _ => {
                let copy: Vec<char> = chars[at..].iter().take(20).copied().collect();
                chars.splice(at..at, copy);
            }
        }
    }
    chars.into_iter().collect()
}

fn one_line_error(result: anyhow::Result<RunConfig>) -> Result<(), TestCaseError> {
    if let Err(e) = result {
        let message = format!("{e:#}");
        prop_assert!(!message.is_empty());
        prop_assert!(!message.contains('\n'), "not one line: {message}");
    }
    Ok(())
}

/// `bytes` with a few bytes replaced, cut, duplicated or flipped.
fn mutate_bytes(bytes: &[u8], edits: &[(usize, u8, u8)]) -> Vec<u8> {
    let mut bytes = bytes.to_vec();
    for &(at, b, kind) in edits {
        if bytes.is_empty() {
            bytes.push(b);
            continue;
        }
        let at = at % bytes.len();
        match kind % 4 {
            0 => bytes[at] = b,
            1 => bytes.truncate(at),
            2 => {
                let copy: Vec<u8> = bytes[at..].iter().take(8).copied().collect();
                bytes.splice(at..at, copy);
            }
            _ => bytes[at] ^= 1 << (b % 8),
        }
    }
    bytes
}

/// Decodes bytes as an algorithm's two message types; says which decoded.
struct Decode<'a>(&'a [u8]);

impl VisitType for Decode<'_> {
    type Output = (bool, bool);
    fn visit<A: Algorithm>(self) -> (bool, bool) {
        // What decodes was all of the input and encodes again in at most
        // as many bytes (the canonical encoding is the shortest).
        let down = codec::decode::<A::Down>(self.0).map(|down| {
            assert!(codec::encode(&down).unwrap().len() <= self.0.len());
        });
        let up = codec::decode::<A::Up>(self.0).map(|up| {
            assert!(codec::encode(&up).unwrap().len() <= self.0.len());
        });
        (down.is_ok(), up.is_ok())
    }
}

#[test]
fn every_algorithm_has_configs_and_real_messages_to_fuzz() {
    let configured: Vec<&str> = configs()
        .iter()
        .filter_map(|text| RunConfig::parse(text, &[], "fuzz.toml").ok())
        .map(|config| config.algorithm.name())
        .collect();
    let messages = real_messages();
    for &name in AlgorithmConfig::NAMES {
        assert!(
            configured.contains(&name),
            "no config of `{name}` to mutate"
        );
        let real: Vec<&RealMessage> = messages.iter().filter(|m| m.algorithm == name).collect();
        assert!(!real.is_empty(), "no real message of `{name}`");
        for m in real {
            assert!(
                AlgorithmConfig::visit_named(name, Decode(&m.down))
                    .unwrap()
                    .0
            );
            assert!(AlgorithmConfig::visit_named(name, Decode(&m.up)).unwrap().1);
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

    #[test]
    fn mutated_configs_parse_or_fail_on_one_line(
        which in any::<prop::sample::Index>(),
        edits in proptest::collection::vec((any::<usize>(), any::<char>(), any::<u8>()), 1..5),
    ) {
        let text = mutate(which.get::<String>(configs()), &edits);
        one_line_error(RunConfig::parse(&text, &[], "fuzz.toml"))?;
    }

    #[test]
    fn random_overrides_apply_or_fail_on_one_line(
        which in any::<prop::sample::Index>(),
        key in "(seed|rounds|threads|eval_at|data|algorithm|model)(\\.[a-z_]{1,12}){0,2}\\??",
        value in "[ -~]{0,24}",
    ) {
        let set = vec![format!("{key}={value}")];
        one_line_error(RunConfig::parse(which.get::<String>(configs()), &set, "fuzz.toml"))?;
    }

    #[test]
    fn random_text_is_no_config(text in "\\PC{0,200}") {
        one_line_error(RunConfig::parse(&text, &[], "fuzz.toml"))?;
    }

    #[test]
    fn the_wire_decoder_takes_any_bytes(bytes in proptest::collection::vec(any::<u8>(), 0..256)) {
        for name in AlgorithmConfig::NAMES {
            AlgorithmConfig::visit_named(name, Decode(&bytes)).unwrap();
        }
    }

    #[test]
    fn the_wire_decoder_takes_real_messages_with_bytes_changed(
        which in any::<prop::sample::Index>(),
        edits in proptest::collection::vec((any::<usize>(), any::<u8>(), any::<u8>()), 1..4),
    ) {
        let real = which.get(real_messages());
        for bytes in [&real.down, &real.up] {
            let changed = mutate_bytes(bytes, &edits);
            // Read as every algorithm's messages, its own included.
            for name in AlgorithmConfig::NAMES {
                AlgorithmConfig::visit_named(name, Decode(&changed)).unwrap();
            }
        }
    }
}
