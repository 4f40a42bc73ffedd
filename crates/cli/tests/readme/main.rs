//! The README and `docs/*.md` as written: their quick shell blocks run, every
//! other `fedcluster` command parses, their links resolve, and every
//! algorithm, data kind, model kind, reproduction and benchmark is documented.
//!
//! - A block fenced as ```` ```sh checked ```` runs with `bash -euo pipefail`
//!   in a fresh temporary directory holding a copy of `configs/` and nothing
//!   else (no `../shared` beside it), with the `fedcluster` this test build made
//!   first on `PATH` and `FEDCLUSTER_DATA` at a data root where the test wrote
//!   a small made-up MNIST in the files `fedcluster data fetch mnist` writes
//!   (the fetch itself needs the internet: it stands in a block of its own,
//!   which is parsed only). Its trailing `# expect: TEXT` lines must each
//!   appear in what the block printed (standard output and error together).
//! - Every other `fedcluster ...` command, in a shell block or an inline code
//!   span, is parsed without running it: the binary with the command's words
//!   and `--help` appended must exit 0, which clap allows only when the
//!   subcommands exist and every flag before `--help` is known, with a value
//!   that parses. A `configs/...` file it names must exist, and for `run` and
//!   `serve` its `--set` values are applied and validated as `run` would.
//!   Written with placeholders (`CONFIG`, `<name>`, `[--threads N]`, `a|b`),
//!   it gets the weaker check: the subcommand exists and each `--flag` is in
//!   the subcommand's `--help`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use fedcluster_run::config::{AlgorithmConfig, DEFAULT_CONFIG, DataConfig, ModelConfig, RunConfig};

#[path = "../common.rs"]
mod common;
mod fixture;
mod markdown;
mod shell;

use fixture::{copy_dir, run_block, write_small_mnist};
use markdown::{Block, anchors, code_spans, code_words, docs, split_fences};
use shell::{Token, is_placeholder, shell_commands, shell_tokens};

const ROOT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");
const BIN: &str = env!("CARGO_BIN_EXE_fedcluster");
/// A checked block that runs longer than this is killed and fails.
const BLOCK_TIMEOUT: Duration = Duration::from_secs(300);

fn root() -> PathBuf {
    PathBuf::from(ROOT)
}

/// Runs the binary with `args`; its exit status and output (stdout, stderr).
fn fedcluster(args: &[String]) -> (bool, String) {
    let out = Command::new(BIN)
        .args(args)
        .current_dir(root())
        .output()
        .expect("the binary runs");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), text)
}

/// Checks one `fedcluster` command (`words[0] == "fedcluster"`) without
/// running it; `None` when it is sound, else why not.
fn check_command(
    words: &[String],
    help_cache: &mut BTreeMap<Vec<String>, (bool, String)>,
) -> Option<String> {
    let args = &words[1..];
    let mut help = |prefix: &[String]| {
        let mut with_help = prefix.to_vec();
        with_help.push("--help".into());
        help_cache
            .entry(with_help.clone())
            .or_insert_with(|| fedcluster(&with_help))
            .clone()
    };
    if let Some(p) = args.iter().position(|w| is_placeholder(w)) {
        // The weaker check: the subcommand (the words before any flag or
        // placeholder) exists and lists each flag.
        let end = args
            .iter()
            .position(|w| w.starts_with('-'))
            .unwrap_or(args.len())
            .min(p);
        let (ok, text) = help(&args[..end]);
        if !ok {
            return Some(format!(
                "`fedcluster {} --help` fails: {text}",
                args[..end].join(" ")
            ));
        }
        let listed: BTreeSet<&str> = text
            .split(|c: char| !(c.is_ascii_alphanumeric() || c == '-' || c == '_'))
            .collect();
        for w in args {
            let flag = w.trim_start_matches('[').trim_end_matches(']');
            let flag = flag.split('=').next().unwrap_or(flag);
            if flag.starts_with("--") && !listed.contains(flag) {
                return Some(format!(
                    "`{flag}` is not in `fedcluster {} --help`",
                    args[..end].join(" ")
                ));
            }
        }
        return None;
    }
    let (ok, text) = help(args);
    if !ok {
        return Some(format!(
            "clap refuses it: {}",
            text.lines().next().unwrap_or("")
        ));
    }
    for w in args.iter().filter(|w| w.starts_with("configs/")) {
        if !root().join(w).is_file() {
            return Some(format!("no file {w}"));
        }
    }
    if matches!(args.first().map(String::as_str), Some("run" | "serve")) {
        let sets: Vec<String> = args
            .windows(2)
            .filter(|pair| pair[0] == "--set")
            .map(|pair| pair[1].clone())
            .collect();
        let config = args.iter().find(|w| w.ends_with(".toml"));
        let parsed = match config {
            Some(path) => RunConfig::load(&root().join(path), &sets),
            None => RunConfig::parse(DEFAULT_CONFIG, &sets, "the embedded default"),
        };
        if let Err(e) = parsed {
            return Some(format!("its config does not parse: {e:#}"));
        }
    }
    None
}

#[test]
fn the_readme_stays_under_300_lines() {
    let lines = std::fs::read_to_string(root().join("README.md"))
        .unwrap()
        .lines()
        .count();
    assert!(
        lines < 300,
        "README.md has {lines} lines: move detail into docs/"
    );
}

#[test]
fn every_fedcluster_command_of_the_docs_parses() {
    let mut failures = Vec::new();
    let mut cache = BTreeMap::new();
    let mut checked = 0;
    for doc in docs() {
        let (blocks, prose) = split_fences(&doc.text);
        let mut commands: Vec<(usize, Vec<String>)> = Vec::new();
        for block in blocks.iter().filter(|b| b.is_shell()) {
            commands.extend(shell_commands(block));
        }
        for (line, span, _) in code_spans(&prose) {
            if span == "fedcluster" || span.starts_with("fedcluster ") {
                let words = shell_tokens(&span, &BTreeMap::new(), true)
                    .into_iter()
                    .filter_map(|t| match t {
                        Token::Word(w) => Some(w),
                        Token::Op(_) => None,
                    })
                    .collect();
                commands.push((line, words));
            }
        }
        for (line, words) in commands {
            if words.first().map(String::as_str) != Some("fedcluster") {
                continue;
            }
            checked += 1;
            if let Some(why) = check_command(&words, &mut cache) {
                failures.push(format!("{}:{line}: `{}`: {why}", doc.name, words.join(" ")));
            }
        }
    }
    assert!(
        checked >= 20,
        "only {checked} fedcluster commands found in the docs"
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn every_link_of_the_docs_resolves() {
    let mut failures = Vec::new();
    for doc in docs() {
        let (_, prose) = split_fences(&doc.text);
        // Links in prose, inline code spans blanked first.
        let mut plain = prose.clone().into_bytes();
        for (_, _, range) in code_spans(&prose) {
            plain[range].fill(b' ');
        }
        let plain = String::from_utf8(plain).expect("blanking whole spans keeps UTF-8");
        let dir = root().join(&doc.name).parent().unwrap().to_path_buf();
        for (k, _) in plain.match_indices("](") {
            let rest = &plain[k + 2..];
            let Some(end) = rest.find(')') else { continue };
            let target = &rest[..end];
            if target.contains("://") || target.starts_with("mailto:") || target.contains(' ') {
                continue;
            }
            let (path, anchor) = target.split_once('#').unwrap_or((target, ""));
            let file = if path.is_empty() {
                root().join(&doc.name)
            } else {
                dir.join(path)
            };
            if !file.exists() {
                failures.push(format!(
                    "{}: link to `{target}`: no {}",
                    doc.name,
                    file.display()
                ));
                continue;
            }
            if !anchor.is_empty() {
                let text = std::fs::read_to_string(&file).unwrap_or_default();
                if !anchors(&text).contains(anchor) {
                    failures.push(format!("{}: link to `{target}`: no such heading", doc.name));
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn every_algorithm_kind_reproduction_and_benchmark_is_documented() {
    let all = docs();
    let page = |name: &str| {
        all.iter()
            .find(|d| d.name == name)
            .unwrap_or_else(|| panic!("no {name}"))
    };
    let (_, list) = fedcluster(&["list".into()]);
    let mut section = "";
    let (mut reproductions, mut benchmarks) = (Vec::new(), Vec::new());
    for line in list.lines() {
        if !line.starts_with(' ') {
            section = if line.starts_with("reproductions") {
                "r"
            } else {
                "b"
            };
        } else if let Some(name) = line.split_whitespace().next() {
            if section == "r" {
                reproductions.push(name.to_string());
            } else {
                benchmarks.push(name.to_string());
            }
        }
    }
    assert!(
        !reproductions.is_empty() && !benchmarks.is_empty(),
        "{list}"
    );
    let expect = [
        (
            "docs/algorithms.md: the algorithm",
            vec![page("docs/algorithms.md")],
            AlgorithmConfig::NAMES
                .iter()
                .map(|s| s.to_string())
                .collect::<Vec<_>>(),
        ),
        (
            "docs/configs.md or docs/data.md: the [data] kind",
            vec![page("docs/configs.md"), page("docs/data.md")],
            DataConfig::NAMES.iter().map(|s| s.to_string()).collect(),
        ),
        (
            "docs/configs.md: the [model] kind",
            vec![page("docs/configs.md")],
            ModelConfig::NAMES.iter().map(|s| s.to_string()).collect(),
        ),
        (
            "docs/reproductions.md: the reproduction",
            vec![page("docs/reproductions.md")],
            reproductions,
        ),
        (
            "docs/performance.md: the benchmark",
            vec![page("docs/performance.md")],
            benchmarks,
        ),
    ];
    let mut failures = Vec::new();
    for (what, pages, names) in expect {
        let words = code_words(&pages);
        for name in names {
            if !words.contains(&name) {
                failures.push(format!("{what} `{name}` is not in a code span there"));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

// The checked blocks.

#[test]
fn the_checked_blocks_run_as_written() {
    let mut blocks = Vec::new();
    for doc in docs() {
        let (found, _) = split_fences(&doc.text);
        for block in found.into_iter().filter(Block::is_checked) {
            blocks.push((doc.name.clone(), block));
        }
    }
    assert!(
        blocks
            .iter()
            .filter(|(name, _)| name == "README.md")
            .count()
            >= 3,
        "README.md has fewer than 3 `sh checked` blocks: the first runs and the help and list commands"
    );

    let scratch = std::env::temp_dir().join(format!("fedcluster-readme-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&scratch);
    let data_root = scratch.join("data-root");
    write_small_mnist(&data_root.join("mnist"), 5_000, 1_000);
    let bin_dir = Path::new(BIN).parent().unwrap().to_path_buf();
    let path = format!(
        "{}:{}",
        bin_dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let env = [
        ("PATH", path),
        ("FEDCLUSTER_DATA", data_root.display().to_string()),
    ];

    let failures: Vec<String> = std::thread::scope(|s| {
        let handles: Vec<_> = blocks
            .iter()
            .enumerate()
            .map(|(i, (name, block))| {
                let dir = scratch.join("work").join(format!("block-{i}"));
                let env = &env;
                s.spawn(move || {
                    copy_dir(&root().join("configs"), &dir.join("configs"));
                    assert!(!dir.join("../shared").exists());
                    let expects: Vec<&str> = block
                        .lines
                        .iter()
                        .filter_map(|l| l.trim().strip_prefix("# expect:"))
                        .map(str::trim)
                        .collect();
                    let at = format!("{name}:{}", block.first_line);
                    if expects.is_empty() {
                        return Some(format!("{at}: a checked block without `# expect:` lines"));
                    }
                    let script = block.lines.join("\n");
                    let (ok, output) = run_block(&script, &dir, env);
                    let missing: Vec<&&str> =
                        expects.iter().filter(|e| !output.contains(**e)).collect();
                    if ok && missing.is_empty() {
                        return None;
                    }
                    Some(format!(
                        "{at}: {}{missing:?} not printed by\n{script}\n--- output:\n{output}",
                        if ok { "" } else { "failed; " }
                    ))
                })
            })
            .collect();
        handles
            .into_iter()
            .filter_map(|h| h.join().unwrap())
            .collect()
    });
    if failures.is_empty() {
        let _ = std::fs::remove_dir_all(&scratch);
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

#[test]
fn the_shell_splitter_reads_quotes_variables_and_operators() {
    let vars = BTreeMap::from([("T".to_string(), "a=[1, 2]".to_string())]);
    let words = |line: &str| -> Vec<String> {
        shell_tokens(line, &vars, false)
            .into_iter()
            .map(|t| match t {
                Token::Word(w) => w,
                Token::Op(o) => format!("<{o}>"),
            })
            .collect()
    };
    assert_eq!(
        words(r#"fedcluster run --set "$T" --set 'eval_at=[]' x\ y # comment"#),
        [
            "fedcluster",
            "run",
            "--set",
            "a=[1, 2]",
            "--set",
            "eval_at=[]",
            "x y"
        ]
    );
    assert_eq!(
        words("a && b > f; c | d &"),
        ["a", "<&&>", "b", "<>>", "f", "<;>", "c", "<|>", "d", "<&>"]
    );
    assert_eq!(
        words("echo $UNKNOWN ${T}"),
        ["echo", "$UNKNOWN", "a=[1, 2]"]
    );
    assert!(is_placeholder("CONFIG") && is_placeholder("<same>") && is_placeholder("[--threads"));
    assert!(
        !is_placeholder("rounds=20") && !is_placeholder("configs/x.toml") && !is_placeholder("-q")
    );
}
