//! The memory a run may use (`--max-memory`, or what the machine has) and
//! the check of an [`Estimate`](super::Estimate) against it; sizes as
//! `--max-memory` takes them and as refusals print them; the memory this
//! process has used at most ([`peak_resident`]).

use anyhow::{Result, bail};

use super::Estimate;

/// The memory a run may use: `given` (`--max-memory`), else what the
/// machine has; `None` when neither is known.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Limit {
    /// Bytes.
    pub bytes: u128,
    /// Where the number comes from, as the refusal names it.
    pub source: &'static str,
}

impl Limit {
    /// `--max-memory` when given, else the smaller of `MemAvailable` and the
    /// cgroup's `memory.max` (Linux; `None` elsewhere).
    pub fn resolve(given: Option<u64>) -> Option<Limit> {
        if let Some(bytes) = given {
            return Some(Limit {
                bytes: bytes.into(),
                source: "--max-memory",
            });
        }
        let available = read_kib("/proc/meminfo", "MemAvailable:").map(|kib| Limit {
            bytes: kib * 1024,
            source: "MemAvailable",
        });
        let cgroup = std::fs::read_to_string("/sys/fs/cgroup/memory.max")
            .ok()
            .and_then(|s| s.trim().parse::<u128>().ok())
            .map(|bytes| Limit {
                bytes,
                source: "cgroup memory.max",
            });
        [available, cgroup]
            .into_iter()
            .flatten()
            .min_by_key(|l| l.bytes)
    }

    /// Fails with one line when `estimate` does not fit.
    pub fn check(&self, estimate: &Estimate) -> Result<()> {
        let total = estimate.total();
        if total <= self.bytes {
            return Ok(());
        }
        let biggest = estimate
            .biggest()
            .map_or(String::new(), |t| format!(" (biggest: {})", t.what));
        bail!(
            "run needs about {}{biggest}; {} available ({}); lower the config's sizes or give more with --max-memory",
            gib(total),
            gib(self.bytes),
            self.source
        )
    }
}

/// Checks `estimate` against `given` (`--max-memory`) or the machine.
pub fn check(estimate: &Estimate, given: Option<u64>) -> Result<()> {
    Limit::resolve(given).map_or(Ok(()), |limit| limit.check(estimate))
}

/// This process's peak resident memory so far (`VmHWM`), bytes; Linux only.
/// Read at the end of a run, it is the run's measured peak: a poll from
/// outside can miss a peak reached just before the process exits.
pub fn peak_resident() -> Option<u128> {
    read_kib("/proc/self/status", "VmHWM:").map(|kib| kib * 1024)
}

fn read_kib(path: &str, key: &str) -> Option<u128> {
    let text = std::fs::read_to_string(path).ok()?;
    let line = text.lines().find(|l| l.starts_with(key))?;
    line[key.len()..]
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()
}

/// `bytes` in GiB with one decimal (MiB below 1 GiB).
pub fn gib(bytes: u128) -> String {
    match bytes >= 1 << 30 {
        true => format!("{:.1} GiB", bytes as f64 / (1u64 << 30) as f64),
        false => format!("{:.1} MiB", bytes as f64 / (1u64 << 20) as f64),
    }
}

/// A size as `--max-memory` takes it: bytes, or a number with K, M, G or T
/// (powers of 1024; an optional trailing `B` or `iB`).
pub fn parse_size(text: &str) -> Result<u64> {
    let t = text.trim();
    let t = t
        .strip_suffix("iB")
        .or_else(|| t.strip_suffix('B'))
        .unwrap_or(t);
    let (number, shift) = match t.char_indices().last() {
        Some((i, c)) if c.is_ascii_alphabetic() => {
            let shift = match c.to_ascii_uppercase() {
                'K' => 10,
                'M' => 20,
                'G' => 30,
                'T' => 40,
                _ => bail!("`{text}`: a size is a number with K, M, G or T, e.g. 2G"),
            };
            (&t[..i], shift)
        }
        _ => (t, 0),
    };
    let value: f64 = match number.trim().parse() {
        Ok(v) => v,
        Err(_) => bail!("`{text}`: a size is a number with K, M, G or T, e.g. 2G"),
    };
    let bytes = value * (1u64 << shift) as f64;
    if !(bytes.is_finite() && bytes >= 1.0 && bytes < u64::MAX as f64) {
        bail!("`{text}`: a size must be at least 1 byte and finite");
    }
    Ok(bytes as u64)
}
