//! Speaking roles from the Project Gutenberg plays, as LEAF's Shakespeare
//! preprocessing splits its complete-works file into (play, role) texts.
//!
//! LEAF parses one file whose speaker lines read `"  NAME. speech"`; the
//! per-play Gutenberg files here put the label alone on its line and the
//! speech on the following lines, blank lines between speeches:
//!
//! ```text
//! BOATSWAIN.
//! Here, master: what cheer?
//! ```
//!
//! The parser:
//! 1. takes the title from the first non-blank line, and the play's body
//!    from its first heading (`ACT ...`, `PROLOGUE`, `THE PROLOGUE`,
//!    `INDUCTION`); a file with none is not a play (the poems) and yields
//!    `None`;
//! 2. splits the body into blocks at blank lines; a block whose first line is
//!    a speaker label starts that role's speech, any other block continues the
//!    current speaker's (a speech resumed after a stage direction), and a
//!    heading block ends it: an act or scene heading with its scene
//!    description, or `PROLOGUE`, `EPILOGUE`, `INDUCTION` alone on its block
//!    (followed by a speech, `PROLOGUE` is the Prologue speaking);
//! 3. drops stage directions: text in `[...]` (or `{...]`, a typo in several
//!    files), across lines of a block.
//!
//! A label is a line of one to five words, each a capitalised word, a number
//! or an abbreviation (`MRS.`, `P.`), or one of `and`, `of`, `the`, `de`,
//! `la`, `le`, `du` inside it, ending with a full stop and optionally followed
//! by a bracketed direction (`THALIARD. [Aside.]`). Labels are upper-cased,
//! as LEAF upper-cases its names. The exceptions the files need:
//! - labels in upper case may omit the full stop (`THESEUS` in A Midsummer
//!   Night's Dream) when the speech follows in the same block;
//! - mixed-case labels (`Ham.`, `Lady Capulet.` in Hamlet, Lear, Romeo and
//!   Juliet) count only when they start at least two blocks of the play, so a
//!   one-word sentence opening a resumed speech (`Away.`) is not a role;
//! - roman numerals (song stanzas), `SONG` and labels starting with `THE`
//!   (`THE ORDER OF THE CORONATION`) are headings, not roles.

use std::collections::HashMap;

/// A play's title and speaking roles, in order of first appearance.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Play {
    /// The title: the file's first non-blank line.
    pub title: String,
    /// The roles.
    pub roles: Vec<Role>,
}

/// One speaking role: its upper-cased label and its speech lines (trimmed,
/// stage directions removed, blank lines dropped).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Role {
    /// The label, upper-cased, single spaces.
    pub name: String,
    /// The speech, line by line.
    pub lines: Vec<String>,
}

/// Words allowed in lower case inside a label.
const CONNECTIVES: [&str; 7] = ["and", "of", "the", "de", "la", "le", "du"];

/// A candidate label: its name, whether it is in upper case, whether it ends
/// with a full stop, and the direction that follows it on its line.
struct Label<'a> {
    name: String,
    upper: bool,
    dotted: bool,
    rest: &'a str,
}

/// Parses one play file; `None` when it has no act, prologue or induction
/// heading (a poem).
pub fn parse_play(text: &str) -> Option<Play> {
    let lines: Vec<&str> = text.lines().collect();
    let title = lines
        .iter()
        .find(|l| !l.trim().is_empty())?
        .trim()
        .to_string();
    let start = lines.iter().position(|l| starts_body(l.trim()))?;
    let blocks = blocks(&lines[start..]);
    // How many blocks each candidate label opens (mixed-case labels must open
    // two).
    let mut opens: HashMap<String, usize> = HashMap::new();
    for block in blocks.iter().filter(|b| !is_heading(b)) {
        if let Some(label) = label(block[0]) {
            *opens.entry(label.name).or_default() += 1;
        }
    }
    let mut roles: Vec<Role> = Vec::new();
    let mut index: HashMap<String, usize> = HashMap::new();
    let mut speaker: Option<usize> = None;
    for block in &blocks {
        if is_heading(block) {
            speaker = None;
            continue;
        }
        let accepted = label(block[0]).filter(|l| {
            (l.upper || opens.get(&l.name).copied().unwrap_or(0) >= 2)
                && (l.dotted || block.len() > 1)
        });
        let speech: Vec<&str> = match &accepted {
            Some(l) => {
                let at = *index.entry(l.name.clone()).or_insert_with(|| {
                    roles.push(Role {
                        name: l.name.clone(),
                        lines: Vec::new(),
                    });
                    roles.len() - 1
                });
                speaker = Some(at);
                std::iter::once(l.rest)
                    .chain(block[1..].iter().copied())
                    .collect()
            }
            None => block.clone(),
        };
        if let Some(at) = speaker {
            roles[at].lines.extend(without_directions(&speech));
        }
    }
    Some(Play { title, roles })
}

/// Whether a trimmed line opens the play's body.
fn starts_body(line: &str) -> bool {
    let upper = line.to_ascii_uppercase();
    let bare = upper.trim_end_matches('.');
    upper.starts_with("ACT ") || ["PROLOGUE", "THE PROLOGUE", "INDUCTION"].contains(&bare)
}

/// Whether a block is a heading: an act or scene heading (with the scene's
/// description, which may run over several lines), or a prologue, epilogue or
/// induction heading alone on its block (`PROLOGUE` followed by a speech is
/// the Prologue speaking).
fn is_heading(block: &[&str]) -> bool {
    let upper = block[0].trim().to_ascii_uppercase();
    let first = upper.split([' ', '.', ':', ',']).next().unwrap_or("");
    let bare = upper.trim_end_matches('.');
    ["ACT", "SCENE"].contains(&first)
        || (block.len() == 1
            && [
                "PROLOGUE",
                "THE PROLOGUE",
                "EPILOGUE",
                "INDUCTION",
                "THE END",
            ]
            .contains(&bare))
}

/// The runs of non-blank lines.
fn blocks<'a>(lines: &[&'a str]) -> Vec<Vec<&'a str>> {
    let mut blocks = Vec::new();
    let mut current = Vec::new();
    for line in lines {
        if line.trim().is_empty() {
            if !current.is_empty() {
                blocks.push(std::mem::take(&mut current));
            }
        } else {
            current.push(*line);
        }
    }
    if !current.is_empty() {
        blocks.push(current);
    }
    blocks
}

/// `line` read as a speaker label, if it is one.
fn label(line: &str) -> Option<Label<'_>> {
    let line = line.trim();
    // A direction after the label: `NAME. [Aside.]`, `NAME.[To X]`.
    let (head, rest) = match line.find(['[', '{']) {
        Some(at) if at > 0 && line[..at].trim_end().ends_with('.') => {
            (line[..at].trim_end(), &line[at..])
        }
        _ => (line, ""),
    };
    let dotted = head.ends_with('.');
    let core = head.strip_suffix('.').unwrap_or(head);
    let words: Vec<&str> = core.split_whitespace().collect();
    if words.is_empty() || words.len() > 5 || core.len() > 40 {
        return None;
    }
    let word_ok = |w: &str| {
        CONNECTIVES.contains(&w) || {
            let mut chars = w.chars();
            chars
                .next()
                .is_some_and(|c| c.is_ascii_uppercase() || c.is_ascii_digit())
                && w.trim_end_matches('.')
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "'&-".contains(c))
        }
    };
    if !words.iter().all(|w| word_ok(w)) || CONNECTIVES.contains(&words[0]) {
        return None;
    }
    let name = words.join(" ").to_ascii_uppercase();
    let upper = core == core.to_ascii_uppercase();
    if !dotted && !upper {
        return None;
    }
    let heading =
        name.starts_with("THE ") || name == "SONG" || name.chars().all(|c| "IVXLC".contains(c));
    (!heading).then_some(Label {
        name,
        upper,
        dotted,
        rest,
    })
}

/// The lines with `[...]` (and `{...]`) removed, across lines; runs of
/// whitespace made one space, the empty lines dropped.
fn without_directions(lines: &[&str]) -> Vec<String> {
    let mut inside = false;
    let mut out = Vec::new();
    for line in lines {
        let mut kept = String::with_capacity(line.len());
        for c in line.chars() {
            match (inside, c) {
                (false, '[' | '{') => inside = true,
                (false, c) => kept.push(c),
                (true, ']') => inside = false,
                (true, _) => {}
            }
        }
        let kept = kept.split_whitespace().collect::<Vec<_>>().join(" ");
        if !kept.is_empty() {
            out.push(kept);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const PLAY: &str = "THE TEMPEST\n\nby William Shakespeare\n\nPersons represented.\n\nALONSO, King of Naples.\n\nACT I.\n\nSCENE I. On a ship at sea.\n\n[Enter a Shipmaster and a Boatswain.]\n\nMASTER.\nBoatswain!\n\nBOATSWAIN.\nHere, master: what cheer?\n\nMASTER. [Aside.]\nGood, speak to the mariners: fall to't yarely,\nor we run ourselves aground: bestir, bestir.\n\n[Exit.]\n\nAway with it, I say.\n\nMRS. PAGE.\nWhat, [Within.] have I\nscaped love-letters?\n\nSCENE II.\n\nStray words after a heading.\n";

    #[test]
    fn labels_directions_and_resumed_speeches() {
        let play = parse_play(PLAY).unwrap();
        assert_eq!(play.title, "THE TEMPEST");
        let names: Vec<&str> = play.roles.iter().map(|r| r.name.as_str()).collect();
        assert_eq!(names, ["MASTER", "BOATSWAIN", "MRS. PAGE"]);
        assert_eq!(
            play.roles[0].lines,
            [
                "Boatswain!",
                "Good, speak to the mariners: fall to't yarely,",
                "or we run ourselves aground: bestir, bestir.",
                "Away with it, I say."
            ]
        );
        assert_eq!(
            play.roles[2].lines,
            ["What, have I", "scaped love-letters?"]
        );
    }

    #[test]
    fn dotless_mixed_case_and_heading_labels() {
        let play = parse_play(
            "Title\n\nACT 1\n\nTHESEUS\nNow, fair Hippolyta.\n\nHam.\nWho's there?\n\nHam.\nStand.\n\nGo.\nThis is speech, not a role.\n\nSONG.\nNot a role.\n\nII.\nStanza.\n",
        )
        .unwrap();
        let names: Vec<&str> = play.roles.iter().map(|r| r.name.as_str()).collect();
        assert_eq!(names, ["THESEUS", "HAM"]);
        assert_eq!(
            play.roles[1].lines,
            [
                "Who's there?",
                "Stand.",
                "Go.",
                "This is speech, not a role.",
                "SONG.",
                "Not a role.",
                "II.",
                "Stanza."
            ]
        );
    }

    #[test]
    fn a_poem_is_not_a_play() {
        assert_eq!(
            parse_play("THE SONNETS\n\nby William Shakespeare\n\n1\nFrom fairest creatures\n"),
            None
        );
        assert_eq!(parse_play(""), None);
    }
}
