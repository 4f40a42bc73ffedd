//! Shell lines as bash reads them, enough to find the `fedcluster` commands
//! of the documentation's blocks and spans: words, quotes, variables,
//! operators, continuation lines, and the placeholders of prose commands.

use std::collections::BTreeMap;

use super::markdown::Block;

/// A shell word or an operator (`&&`, `|`, `;`, `&`, `>`, ...).
#[derive(Debug, PartialEq)]
pub(crate) enum Token {
    Word(String),
    Op(String),
}

/// Splits one logical shell line into words and operators as bash would:
/// quotes, backslashes, `$NAME`/`${NAME}` from `vars` (unknown ones kept as
/// written), a `#` starting a word opens a comment. `prose`: a command
/// quoted in the text, where `<name>` and `a|b` are placeholders, not
/// redirections and pipes.
pub(crate) fn shell_tokens(line: &str, vars: &BTreeMap<String, String>, prose: bool) -> Vec<Token> {
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
pub(crate) fn shell_commands(block: &Block) -> Vec<(usize, Vec<String>)> {
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
pub(crate) fn is_placeholder(word: &str) -> bool {
    if word.contains('=') {
        return false;
    }
    let upper = word.chars().any(|c| c.is_ascii_uppercase())
        && word
            .chars()
            .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_');
    upper || word.contains("...") || word.chars().any(|c| "<>[]|".contains(c))
}
