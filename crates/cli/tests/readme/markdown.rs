//! The documentation's Markdown as the README test reads it: the pages,
//! their fenced blocks, inline code spans, heading anchors and code words.

use std::collections::{BTreeMap, BTreeSet};

use super::root;

/// A Markdown file of the documentation, read once.
pub(crate) struct Doc {
    /// Relative to the repository's root, e.g. `docs/data.md`.
    pub(crate) name: String,
    pub(crate) text: String,
}

/// `README.md` and every `docs/*.md`, in name order.
pub(crate) fn docs() -> Vec<Doc> {
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
pub(crate) struct Block {
    pub(crate) info: String,
    pub(crate) lines: Vec<String>,
    pub(crate) first_line: usize,
}

impl Block {
    pub(crate) fn is_checked(&self) -> bool {
        self.info.split_whitespace().collect::<Vec<_>>() == ["sh", "checked"]
    }

    pub(crate) fn is_shell(&self) -> bool {
        matches!(
            self.info.split_whitespace().next(),
            None | Some("sh" | "bash" | "shell" | "console")
        )
    }
}

/// The fenced blocks of `text`, and `text` with every fenced line blanked
/// (for the inline code spans and the links of the prose).
pub(crate) fn split_fences(text: &str) -> (Vec<Block>, String) {
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
pub(crate) fn code_spans(prose: &str) -> Vec<(usize, String, std::ops::Range<usize>)> {
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

/// GitHub's anchor of a heading: lower case, only letters, digits, `-` and
/// `_` kept, spaces to `-`; a repeated anchor gets `-1`, `-2`, ...
pub(crate) fn anchors(text: &str) -> BTreeSet<String> {
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

/// The words of every code span and code block of `pages` (split at
/// anything but letters, digits, `-` and `_`).
pub(crate) fn code_words(pages: &[&Doc]) -> BTreeSet<String> {
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
