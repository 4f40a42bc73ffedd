//! Property-based fuzzing (bounded: a fixed number of cases each) of what a
//! user or a peer hands fedcluster: config text and `--set` overrides, and
//! the wire decoder of every algorithm's messages. Whatever the bytes, the
//! answer is a value or a one-line error, never a panic.

use proptest::prelude::*;

use fedcluster_algorithms::{Algorithm, AlgorithmConfig, VisitType};
use fedcluster_cli::config::RunConfig;
use fedcluster_net::codec;

/// Every config the repository ships, as text.
fn shipped_configs() -> Vec<String> {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../configs");
    let mut texts: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| {
            let path = e.ok()?.path();
            (path.extension()? == "toml").then(|| std::fs::read_to_string(path).unwrap())
        })
        .collect();
    texts.sort();
    texts
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

/// Decodes bytes as an algorithm's two message types.
struct Decode<'a>(&'a [u8]);

impl VisitType for Decode<'_> {
    type Output = ();
    fn visit<A: Algorithm>(self) {
        // What decodes was all of the input and encodes again in at most
        // as many bytes (the canonical encoding is the shortest).
        if let Ok(down) = codec::decode::<A::Down>(self.0) {
            assert!(codec::encode(&down).unwrap().len() <= self.0.len());
        }
        if let Ok(up) = codec::decode::<A::Up>(self.0) {
            assert!(codec::encode(&up).unwrap().len() <= self.0.len());
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
        let configs = shipped_configs();
        let text = mutate(which.get::<String>(&configs), &edits);
        one_line_error(RunConfig::parse(&text, &[], "fuzz.toml"))?;
    }

    #[test]
    fn random_overrides_apply_or_fail_on_one_line(
        which in any::<prop::sample::Index>(),
        key in "(seed|rounds|threads|eval_at|data|algorithm|model)(\\.[a-z_]{1,12}){0,2}\\??",
        value in "[ -~]{0,24}",
    ) {
        let configs = shipped_configs();
        let set = vec![format!("{key}={value}")];
        one_line_error(RunConfig::parse(which.get::<String>(&configs), &set, "fuzz.toml"))?;
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
}
