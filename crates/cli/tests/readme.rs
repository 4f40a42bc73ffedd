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
use std::time::{Duration, Instant};

use fedcluster_run::config::{AlgorithmConfig, DEFAULT_CONFIG, DataConfig, ModelConfig, RunConfig};

const ROOT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");
const BIN: &str = env!("CARGO_BIN_EXE_fedcluster");
/// A checked block that runs longer than this is killed and fails.
const BLOCK_TIMEOUT: Duration = Duration::from_secs(300);

fn root() -> PathBuf {
    PathBuf::from(ROOT)
}

/// A Markdown file of the documentation, read once.
struct Doc {
    /// Relative to the repository's root, e.g. `docs/data.md`.
    name: String,
    text: String,
}

/// `README.md` and every `docs/*.md`, in name order.
fn docs() -> Vec<Doc> {
    let mut names = vec!["README.md".to_string()];
    let mut more: Vec<String> = std::fs::read_dir(root().join("docs"))
        .expect("docs/ is readable")
        .map(|e| {
            e.expect("a directory entry")
                .file_name()
                .to_string_lossy()
                .into_owned()
        })
        .filter(|n| n.ends_with(".md"))
        .map(|n| format!("docs/{n}"))
        .collect();
    more.sort();
    names.extend(more);
    names
        .into_iter()
        .map(|name| {
            let text = std::fs::read_to_string(root().join(&name)).expect("a readable page");
            Doc { name, text }
        })
        .collect()
}

/// A fenced code block: its info string, its lines (less the fence's
/// indentation) and the line number (from 1) of its first content line.
struct Block {
    info: String,
    lines: Vec<String>,
    first_line: usize,
}

impl Block {
    fn is_checked(&self) -> bool {
        self.info.split_whitespace().collect::<Vec<_>>() == ["sh", "checked"]
    }

    fn is_shell(&self) -> bool {
        matches!(
            self.info.split_whitespace().next(),
            None | Some("sh" | "bash" | "shell" | "console")
        )
    }
}

/// The fenced blocks of `text`, and `text` with every fenced line blanked
/// (for the inline code spans and the links of the prose).
fn split_fences(text: &str) -> (Vec<Block>, String) {
    let mut blocks = Vec::new();
    let mut prose = String::new();
    let mut open: Option<(usize, usize, Block)> = None; // (indent, fence length, block)
    for (i, line) in text.lines().enumerate() {
        let indent = line.len() - line.trim_start().len();
        let fence = line.trim_start().chars().take_while(|&c| c == '`').count();
        match &mut open {
            None if fence >= 3 => {
                let info = line.trim_start()[fence..].trim().to_string();
                let block = Block {
                    info,
                    lines: Vec::new(),
                    first_line: i + 2,
                };
                open = Some((indent, fence, block));
                prose.push('\n');
            }
            None => {
                prose.push_str(line);
                prose.push('\n');
            }
            Some((_, len, _)) if fence >= *len && line.trim().chars().all(|c| c == '`') => {
                blocks.push(open.take().expect("an open block").2);
                prose.push('\n');
            }
            Some((indent, _, block)) => {
                let cut = line.len() - line.trim_start().len();
                block.lines.push(line[cut.min(*indent)..].to_string());
                prose.push('\n');
            }
        }
    }
    assert!(open.is_none(), "a code fence is never closed");
    (blocks, prose)
}

/// The inline code spans of `prose` (fences already blanked), each with its
/// line number, its content with whitespace collapsed as Markdown renders
/// it, and its byte range (backticks included).
fn code_spans(prose: &str) -> Vec<(usize, String, std::ops::Range<usize>)> {
    let bytes = prose.as_bytes();
    let mut spans = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] != b'`' {
            i += 1;
            continue;
        }
        let run = bytes[i..].iter().take_while(|&&b| b == b'`').count();
        let start = i + run;
        let mut j = start;
        let mut close = None;
        while j < bytes.len() {
            if bytes[j] == b'`' {
                let r = bytes[j..].iter().take_while(|&&b| b == b'`').count();
                if r == run {
                    close = Some(j);
                    break;
                }
                j += r;
            } else {
                j += 1;
            }
        }
        match close {
            Some(end) => {
                let line = prose[..i].matches('\n').count() + 1;
                let content = prose[start..end]
                    .split_whitespace()
                    .collect::<Vec<_>>()
                    .join(" ");
                spans.push((line, content, i..end + run));
                i = end + run;
            }
            None => i = start,
        }
    }
    spans
}

/// A shell word or an operator (`&&`, `|`, `;`, `&`, `>`, ...).
#[derive(Debug, PartialEq)]
enum Token {
    Word(String),
    Op(String),
}

/// Splits one logical shell line into words and operators as bash would:
/// quotes, backslashes, `$NAME`/`${NAME}` from `vars` (unknown ones kept as
/// written), a `#` starting a word opens a comment. `prose`: a command
/// quoted in the text, where `<name>` and `a|b` are placeholders, not
/// redirections and pipes.
fn shell_tokens(line: &str, vars: &BTreeMap<String, String>, prose: bool) -> Vec<Token> {
    let mut tokens = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let chars: Vec<char> = line.chars().collect();
    let mut i = 0;
    let expand = |i: &mut usize, out: &mut String| {
        // at chars[*i] == '$'
        let braced = chars.get(*i + 1) == Some(&'{');
        let from = *i + 1 + usize::from(braced);
        let mut to = from;
        while to < chars.len() && (chars[to].is_ascii_alphanumeric() || chars[to] == '_') {
            to += 1;
        }
        let name: String = chars[from..to].iter().collect();
        let end = if braced && chars.get(to) == Some(&'}') {
            to + 1
        } else {
            to
        };
        match vars.get(&name) {
            Some(value) if !name.is_empty() => out.push_str(value),
            _ => out.extend(&chars[*i..end]),
        }
        *i = end;
    };
    while i < chars.len() {
        let c = chars[i];
        match c {
            ' ' | '\t' => {
                if in_word {
                    tokens.push(Token::Word(std::mem::take(&mut word)));
                    in_word = false;
                }
                i += 1;
            }
            '#' if !in_word => break,
            '\'' => {
                in_word = true;
                i += 1;
                while i < chars.len() && chars[i] != '\'' {
                    word.push(chars[i]);
                    i += 1;
                }
                i += 1;
            }
            '"' => {
                in_word = true;
                i += 1;
                while i < chars.len() && chars[i] != '"' {
                    if chars[i] == '\\' && matches!(chars.get(i + 1), Some('"' | '\\' | '$')) {
                        word.push(chars[i + 1]);
                        i += 2;
                    } else if chars[i] == '$' {
                        expand(&mut i, &mut word);
                    } else {
                        word.push(chars[i]);
                        i += 1;
                    }
                }
                i += 1;
            }
            '\\' => {
                in_word = true;
                if let Some(&next) = chars.get(i + 1) {
                    word.push(next);
                }
                i += 2;
            }
            '$' => {
                in_word = true;
                expand(&mut i, &mut word);
            }
            '&' | '|' | ';' | '>' | '<' if !prose => {
                if in_word {
                    tokens.push(Token::Word(std::mem::take(&mut word)));
                    in_word = false;
                }
                let mut op = c.to_string();
                if matches!(chars.get(i + 1), Some(&n) if n == c) {
                    op.push(c);
                    i += 1;
                }
                tokens.push(Token::Op(op));
                i += 1;
            }
            _ => {
                in_word = true;
                word.push(c);
                i += 1;
            }
        }
    }
    if in_word {
        tokens.push(Token::Word(word));
    }
    tokens
}

/// The simple commands of a shell block (continuation lines joined,
/// redirections dropped), each with the line it starts on; `NAME=value`
/// lines become variables for the lines after them.
fn shell_commands(block: &Block) -> Vec<(usize, Vec<String>)> {
    let mut vars = BTreeMap::new();
    let mut commands = Vec::new();
    let mut logical = String::new();
    let mut start = None;
    for (k, line) in block.lines.iter().enumerate() {
        start.get_or_insert(block.first_line + k);
        if let Some(head) = line.strip_suffix('\\') {
            logical.push_str(head);
            logical.push(' ');
            continue;
        }
        logical.push_str(line);
        let at = start.take().expect("a start line");
        let tokens = shell_tokens(&std::mem::take(&mut logical), &vars, false);
        let mut current: Vec<String> = Vec::new();
        let mut redirect = false;
        let mut flush = |current: &mut Vec<String>| {
            if !current.is_empty() {
                commands.push((at, std::mem::take(current)));
            }
        };
        for token in tokens {
            match token {
                Token::Word(_) if redirect => redirect = false,
                Token::Word(w) => current.push(w),
                Token::Op(op) if op.starts_with('>') || op.starts_with('<') => redirect = true,
                Token::Op(_) => flush(&mut current),
            }
        }
        // `NAME=value` alone on its line: a variable, not a command.
        if let [only] = current.as_slice()
            && let Some((name, value)) = only.split_once('=')
            && !name.is_empty()
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        {
            vars.insert(name.to_string(), value.to_string());
            current.clear();
        }
        flush(&mut current);
    }
    commands
}

/// A word that stands for a value to fill in: `CONFIG`, `N`, `<name>`,
/// `[--threads`, `b|c|d`, `...` (never a `key=value`).
fn is_placeholder(word: &str) -> bool {
    if word.contains('=') {
        return false;
    }
    let upper = word.chars().any(|c| c.is_ascii_uppercase())
        && word
            .chars()
            .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_');
    upper || word.contains("...") || word.chars().any(|c| "<>[]|".contains(c))
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

/// GitHub's anchor of a heading: lower case, only letters, digits, `-` and
/// `_` kept, spaces to `-`; a repeated anchor gets `-1`, `-2`, ...
fn anchors(text: &str) -> BTreeSet<String> {
    let (_, prose) = split_fences(text);
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    let mut out = BTreeSet::new();
    for line in prose.lines() {
        let Some(title) = line.strip_prefix('#') else {
            continue;
        };
        let title = title.trim_start_matches('#');
        if !title.starts_with(' ') {
            continue;
        }
        let slug: String = title
            .trim()
            .to_lowercase()
            .chars()
            .filter(|c| c.is_alphanumeric() || matches!(c, ' ' | '-' | '_'))
            .map(|c| if c == ' ' { '-' } else { c })
            .collect();
        let n = seen.entry(slug.clone()).or_insert(0);
        out.insert(if *n == 0 {
            slug.clone()
        } else {
            format!("{slug}-{n}")
        });
        *n += 1;
    }
    out
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

/// The words of every code span and code block of `pages` (split at
/// anything but letters, digits, `-` and `_`).
fn code_words(pages: &[&Doc]) -> BTreeSet<String> {
    let mut words = BTreeSet::new();
    for doc in pages {
        let (blocks, prose) = split_fences(&doc.text);
        let mut texts: Vec<String> = code_spans(&prose).into_iter().map(|(_, s, _)| s).collect();
        texts.extend(blocks.iter().map(|b| b.lines.join("\n")));
        for t in texts {
            words.extend(
                t.split(|c: char| !(c.is_ascii_alphanumeric() || c == '-' || c == '_'))
                    .filter(|w| !w.is_empty())
                    .map(str::to_string),
            );
        }
    }
    words
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

/// The CRC-32 of gzip (ISO 3309), bit by bit: the data here is a few MB.
fn crc32(data: &[u8]) -> u32 {
    let mut table = [0u32; 256];
    for (n, entry) in table.iter_mut().enumerate() {
        let mut c = n as u32;
        for _ in 0..8 {
            c = if c & 1 == 1 {
                0xEDB8_8320 ^ (c >> 1)
            } else {
                c >> 1
            };
        }
        *entry = c;
    }
    !data.iter().fold(!0u32, |c, &b| {
        table[((c ^ u32::from(b)) & 0xFF) as usize] ^ (c >> 8)
    })
}

/// `data` as a gzip file of stored (uncompressed) deflate blocks: what any
/// gzip reader reads, without a compression crate.
fn gzip_stored(data: &[u8]) -> Vec<u8> {
    let mut out = vec![0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff];
    let chunks: Vec<&[u8]> = if data.is_empty() {
        vec![&[]]
    } else {
        data.chunks(65_535).collect()
    };
    for (i, chunk) in chunks.iter().enumerate() {
        out.push(u8::from(i + 1 == chunks.len()));
        let len = chunk.len() as u16;
        out.extend(len.to_le_bytes());
        out.extend((!len).to_le_bytes());
        out.extend(*chunk);
    }
    out.extend(crc32(data).to_le_bytes());
    out.extend((data.len() as u32).to_le_bytes());
    out
}

/// A made-up MNIST in the four gzipped IDX files `fedcluster data fetch
/// mnist` writes: `train` and `test` 28x28 images, labels `i % 10`, each
/// class a stroke of its own, so that the README's MNIST block has the
/// images its `--set`s ask for (200 clients of 100 images over 4 clusters:
/// 5,000; 40 test clients: 1,000).
fn write_small_mnist(dir: &Path, train: u32, test: u32) {
    std::fs::create_dir_all(dir).unwrap();
    let images = |count: u32, salt: u32| {
        let mut out = Vec::new();
        for w in [0x0000_0803u32, count, 28, 28] {
            out.extend(w.to_be_bytes());
        }
        for i in 0..count {
            let class = i % 10;
            for p in 0..784u32 {
                let (y, x) = (p / 28, p % 28);
                let stroke = (x + class * 2) % 28 == y || x == 4 + 2 * class;
                let noise = (i.wrapping_mul(2_654_435_761) ^ p.wrapping_mul(40_503) ^ salt) % 40;
                out.push(if stroke {
                    215 + noise as u8
                } else {
                    noise as u8
                });
            }
        }
        out
    };
    let labels = |count: u32| {
        let mut out = Vec::new();
        for w in [0x0000_0801u32, count] {
            out.extend(w.to_be_bytes());
        }
        out.extend((0..count).map(|i| (i % 10) as u8));
        out
    };
    for (name, bytes) in [
        ("train-images-idx3-ubyte.gz", images(train, 1)),
        ("train-labels-idx1-ubyte.gz", labels(train)),
        ("t10k-images-idx3-ubyte.gz", images(test, 2)),
        ("t10k-labels-idx1-ubyte.gz", labels(test)),
    ] {
        std::fs::write(dir.join(name), gzip_stored(&bytes)).unwrap();
    }
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

/// Runs `script` with `bash -euo pipefail` in `dir` under `env`; its success
/// and output (stdout then stderr), killed (its process group) after
/// [`BLOCK_TIMEOUT`].
fn run_block(script: &str, dir: &Path, env: &[(&str, String)]) -> (bool, String) {
    use std::os::unix::process::CommandExt as _;
    let (out, err) = (dir.join(".stdout"), dir.join(".stderr"));
    let mut command = Command::new("bash");
    command
        .args(["-euo", "pipefail", "-c", script])
        .current_dir(dir)
        .stdin(std::process::Stdio::null())
        .stdout(std::fs::File::create(&out).unwrap())
        .stderr(std::fs::File::create(&err).unwrap())
        .process_group(0);
    for var in ["FEDCLUSTER_DATA", "FEDCLUSTER_TOKEN", "CARGO_TARGET_DIR"] {
        command.env_remove(var);
    }
    for (k, v) in env {
        command.env(k, v);
    }
    let mut child = command.spawn().expect("bash runs");
    let start = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break Some(status);
        }
        if start.elapsed() > BLOCK_TIMEOUT {
            let _ = Command::new("kill")
                .arg("-KILL")
                .arg(format!("-{}", child.id()))
                .status();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let text = format!(
        "{}{}",
        std::fs::read_to_string(&out).unwrap_or_default(),
        std::fs::read_to_string(&err).unwrap_or_default()
    );
    match status {
        Some(s) => (s.success(), text),
        None => (false, format!("{text}\n(killed after {BLOCK_TIMEOUT:?})")),
    }
}

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
    let mnist = gzip_stored(b"hello");
    assert_eq!(crc32(b"123456789"), 0xCBF4_3926);
    assert_eq!(&mnist[mnist.len() - 4..], &5u32.to_le_bytes());
}
