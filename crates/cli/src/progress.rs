//! Progress for whoever watches: indicatif's bars on a terminal, plain lines
//! at a steady pace anywhere else.
//!
//! indicatif draws only on a terminal. Under `nohup`, in CI or in a batch
//! job's log its bars are hidden, and an hours-long run or reproduction would
//! say nothing until it ends. There a [`LineLog`] writes a line when a run
//! starts, at most one every [`LOG_EVERY`] while it goes, and one when it ends.

use std::cell::{Cell, RefCell};
use std::fmt;
use std::io::{IsTerminal, Write};
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressStyle};

use fedcluster_run::experiment::Progress;

/// How often a run in progress is logged as a line.
pub const LOG_EVERY: Duration = Duration::from_secs(120);

/// Lines of progress written to `out`: a run's start, its round at most once
/// per interval, its end.
pub struct LineLog<W: Write> {
    out: RefCell<W>,
    every: Duration,
    started: Cell<Instant>,
    last: Cell<Instant>,
}

impl LineLog<std::io::Stderr> {
    /// Lines to standard error when it is not a terminal (on a terminal the
    /// bars show instead).
    pub fn unless_terminal() -> Option<Self> {
        let err = std::io::stderr();
        (!err.is_terminal()).then(|| Self::new(err, LOG_EVERY))
    }
}

impl<W: Write> LineLog<W> {
    /// Lines to `out`, a run's round at most once per `every`.
    pub fn new(out: W, every: Duration) -> Self {
        let now = Instant::now();
        Self {
            out: RefCell::new(out),
            every,
            started: Cell::new(now),
            last: Cell::new(now),
        }
    }

    /// `what` starts now.
    pub fn start(&self, what: &str) {
        let now = Instant::now();
        self.started.set(now);
        self.last.set(now);
        self.line(format_args!("{what}: started"));
    }

    /// `what` has finished round `round` (counted from 1) of `rounds`:
    /// written when `every` has passed since the last line.
    pub fn round(&self, what: &str, round: usize, rounds: usize) {
        let now = Instant::now();
        if now.duration_since(self.last.get()) >= self.every {
            self.last.set(now);
            let so_far = clock(now.duration_since(self.started.get()));
            self.line(format_args!(
                "{what}: round {round}/{rounds}, {so_far} so far"
            ));
        }
    }

    /// `what` has ended; `how` says how ("finished", "diverged"), `then`
    /// anything to add (", saved in DIR").
    pub fn end(&self, what: &str, how: &str, then: &str) {
        let took = clock(self.started.get().elapsed());
        self.line(format_args!("{what}: {how} after {took}{then}"));
    }

    /// A line of its own (`what: resuming from FILE`).
    pub fn note(&self, text: &str) {
        self.line(format_args!("{text}"));
    }

    /// The writer, for a caller that kept the lines.
    pub fn into_inner(self) -> W {
        self.out.into_inner()
    }

    fn line(&self, args: fmt::Arguments<'_>) {
        // Progress is best effort: a closed stderr must not stop a run.
        let _ = writeln!(self.out.borrow_mut(), "{args}");
    }
}

/// One run's progress over its rounds: a bar with the training loss on a
/// terminal, elsewhere a line every [`LOG_EVERY`] (the run's start and end
/// are the command's own output), nothing when `quiet`.
pub struct RoundProgress {
    bar: ProgressBar,
    lines: Option<LineLog<std::io::Stderr>>,
    what: String,
    rounds: usize,
}

impl RoundProgress {
    /// Progress of the run `what` over `rounds` rounds, from now.
    pub fn start(what: &str, rounds: usize, quiet: bool) -> Self {
        let bar = if quiet {
            ProgressBar::hidden()
        } else {
            ProgressBar::new(rounds as u64)
        };
        bar.set_style(
            ProgressStyle::with_template("{bar:40} round {pos}/{len} {msg} [{elapsed_precise}]")
                .expect("template"),
        );
        let lines = if quiet {
            None
        } else {
            LineLog::unless_terminal()
        };
        Self {
            bar,
            lines,
            what: what.to_owned(),
            rounds,
        }
    }

    /// Moves to the round `p` reports.
    pub fn show(&self, p: Progress) {
        self.bar.set_position(p.round as u64 + 1);
        if let Some(l) = p.train_loss {
            self.bar.set_message(format!("train loss {l:.4}"));
        }
        if let Some(lines) = &self.lines {
            lines.round(&self.what, p.round + 1, self.rounds);
        }
    }

    /// The run has ended.
    pub fn finish(&self) {
        self.bar.finish_and_clear();
    }
}

/// A download's bar on standard error (hidden when that is not a terminal):
/// bytes so far of `total` (a spinner when the server does not say), from
/// `start` (the bytes a resumed download already has), labelled `what`.
pub fn byte_bar(what: &str, total: Option<u64>, start: u64) -> ProgressBar {
    let (bar, template) = match total {
        Some(total) => (
            ProgressBar::new(total),
            "{msg} {bar:30} {bytes}/{total_bytes} {binary_bytes_per_sec} eta {eta}",
        ),
        None => (
            ProgressBar::no_length(),
            "{msg} {spinner} {bytes} {binary_bytes_per_sec}",
        ),
    };
    bar.set_style(ProgressStyle::with_template(template).expect("template"));
    bar.set_message(what.to_owned());
    bar.set_position(start);
    bar
}

/// A duration to the second: `1h 02m 03s`, `4m 05s`, `12s`.
pub fn clock(d: Duration) -> String {
    let s = d.as_secs();
    match (s / 3600, s / 60 % 60, s % 60) {
        (0, 0, sec) => format!("{sec}s"),
        (0, min, sec) => format!("{min}m {sec:02}s"),
        (h, min, sec) => format!("{h}h {min:02}m {sec:02}s"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(log: LineLog<Vec<u8>>) -> Vec<String> {
        let text = String::from_utf8(log.into_inner()).expect("utf-8");
        text.lines().map(str::to_owned).collect()
    }

    #[test]
    fn a_run_is_logged_when_it_starts_every_interval_and_when_it_ends() {
        let log = LineLog::new(Vec::new(), Duration::ZERO);
        log.start("run 1/2: a · b · seed 1");
        log.round("run 1/2: a · b · seed 1", 1, 3);
        log.round("run 1/2: a · b · seed 1", 2, 3);
        log.end("run 1/2: a · b · seed 1", "finished", ", saved in x");
        let lines = lines(log);
        assert_eq!(lines.len(), 4, "{lines:?}");
        assert_eq!(lines[0], "run 1/2: a · b · seed 1: started");
        assert!(lines[1].starts_with("run 1/2: a · b · seed 1: round 1/3, "));
        assert!(lines[2].contains("round 2/3, ") && lines[2].ends_with("s so far"));
        assert!(lines[3].starts_with("run 1/2: a · b · seed 1: finished after "));
        assert!(lines[3].ends_with("s, saved in x"), "{}", lines[3]);
    }

    #[test]
    fn rounds_within_the_interval_are_not_logged() {
        let log = LineLog::new(Vec::new(), Duration::from_secs(3600));
        log.start("run");
        for round in 1..=100 {
            log.round("run", round, 100);
        }
        log.end("run", "diverged", "");
        let lines = lines(log);
        assert_eq!(lines.len(), 2, "{lines:?}");
        assert!(lines[1].starts_with("run: diverged after "));
    }

    #[test]
    fn a_clock_reads_to_the_second() {
        assert_eq!(clock(Duration::from_millis(12_900)), "12s");
        assert_eq!(clock(Duration::from_secs(245)), "4m 05s");
        assert_eq!(clock(Duration::from_secs(3723)), "1h 02m 03s");
        assert_eq!(clock(Duration::from_secs(90_000)), "25h 00m 00s");
    }
}
