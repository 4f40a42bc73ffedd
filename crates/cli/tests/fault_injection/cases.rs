//! The faults of the fault-injection suite, applied to one file, and the
//! tally of what each case ended in.

use std::path::Path;

/// One way to damage a state file.
#[derive(Debug, Clone)]
pub enum Fault {
    /// One bit flipped at a byte.
    Flip { at: u64, bit: u8 },
    /// Cut to this many bytes.
    Truncate(u64),
    /// One byte appended.
    Extend,
    /// Replaced by another file of the same kind.
    Swap,
    /// Replaced by a FIFO that no one writes.
    Fifo,
    /// Replaced by a directory.
    Directory,
    /// Removed.
    Remove,
}

/// Every fault for a file of `len` bytes: 12 bit flips (first byte, last
/// byte and 10 seeded positions), 3 truncations and the others.
pub fn faults(len: u64, seed: u64) -> Vec<Fault> {
    let mut state = seed;
    let mut next = move || {
        state = state
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        state >> 33
    };
    let mut out = vec![
        Fault::Flip { at: 0, bit: 0 },
        Fault::Flip {
            at: len.saturating_sub(1),
            bit: 7,
        },
    ];
    for _ in 0..10 {
        let at = next() % len.max(1);
        out.push(Fault::Flip {
            at,
            bit: (next() % 8) as u8,
        });
    }
    out.extend([
        Fault::Truncate(0),
        Fault::Truncate(len / 2),
        Fault::Truncate(len.saturating_sub(1)),
        Fault::Extend,
        Fault::Swap,
        Fault::Fifo,
        Fault::Directory,
        Fault::Remove,
    ]);
    out
}

/// Applies `fault` to `path`; `Swap` copies `other` over it.
pub fn damage(path: &Path, fault: &Fault, other: &Path) {
    let bytes = std::fs::read(path).unwrap_or_default();
    let write = |b: &[u8]| std::fs::write(path, b).unwrap();
    match fault {
        Fault::Flip { at, bit } => {
            let mut b = bytes.clone();
            if let Some(byte) = b.get_mut(*at as usize) {
                *byte ^= 1 << bit;
            }
            write(&b);
        }
        Fault::Truncate(len) => write(&bytes[..(*len as usize).min(bytes.len())]),
        Fault::Extend => write(&[bytes.as_slice(), &[0]].concat()),
        Fault::Swap => write(&std::fs::read(other).unwrap()),
        Fault::Fifo => {
            std::fs::remove_file(path).unwrap();
            let made = std::process::Command::new("mkfifo").arg(path).status();
            assert!(made.unwrap().success(), "mkfifo");
        }
        Fault::Directory => {
            std::fs::remove_file(path).unwrap();
            std::fs::create_dir(path).unwrap();
        }
        Fault::Remove => std::fs::remove_file(path).unwrap(),
    }
}

/// Copies the directory tree `from` to `to` (regular files and folders).
pub fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let kind = entry.file_type().unwrap();
        let target = to.join(entry.file_name());
        if kind.is_dir() {
            copy_dir(&entry.path(), &target);
        } else if kind.is_file() {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

/// `results.csv` in `out` without its `seconds` column (wall-clock time,
/// which a run that is run again changes).
pub fn results_without_seconds(out: &Path) -> String {
    let text = std::fs::read_to_string(out.join("results.csv")).unwrap();
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let keep: Vec<bool> = header.iter().map(|h| *h != "seconds").collect();
    text.lines()
        .map(|l| {
            l.split(',')
                .zip(&keep)
                .filter(|(_, k)| **k)
                .map(|(v, _)| v)
                .collect::<Vec<_>>()
                .join(",")
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// What the cases of one kind of file ended in.
#[derive(Default)]
pub struct Counts {
    tried: usize,
    refused: usize,
    identical: usize,
    different: Vec<String>,
}

impl Counts {
    /// One case: `None` refused (with `message`, which must name
    /// `names`), `Some(true)` the uninterrupted result, `Some(false)` another.
    pub fn record(&mut self, case: &str, same: Option<bool>, message: &str, names: &str) {
        self.tried += 1;
        match same {
            None => {
                assert!(
                    message.contains(names),
                    "{case}: the refusal does not name {names}: {message}"
                );
                self.refused += 1;
            }
            Some(true) => self.identical += 1,
            Some(false) => self.different.push(case.to_string()),
        }
    }

    /// Prints the counts and fails on any different result.
    pub fn report(&self, kind: &str) {
        eprintln!(
            "fault injection, {kind}: {} cases tried, {} refused, {} identical, {} different",
            self.tried,
            self.refused,
            self.identical,
            self.different.len()
        );
        assert!(
            self.different.is_empty(),
            "{kind}: different results in {:?}",
            self.different
        );
        assert!(self.refused > 0, "{kind}: no case was refused");
    }
}
