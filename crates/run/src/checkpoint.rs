//! The checkpoint of an in-process run (`fedcluster run --resume`): after a
//! round, the server half, every client half that holds state, the records so
//! far and the next round, written into `DIR.partial/checkpoint.bin`
//! atomically (a temporary file, synced, then renamed). Random streams are
//! keyed by (seed, purpose, round, client), so nothing else is needed: a run
//! resumed from a checkpoint computes exactly what the uninterrupted run
//! computed after that round, and writes the same `metrics.csv`.
//!
//! The file is sealed ([`fedcluster_state::seal`]): MessagePack
//! (self-describing, as the configs' tagged enums need; floats kept bit for
//! bit) of the resolved config (with `threads` cleared, since results do not
//! depend on it), the next round, the records so far, the server and the
//! clients' `(id, half)` pairs, bound to the identity `fedcluster run
//! checkpoint v2; config <SHA-256 of that config>` under a SHA-256 over both.
//! Before a byte of it is decoded the whole file is checked in one streaming
//! pass: a damaged checkpoint (a flipped bit, cut short, extended), one of
//! another config, or a FIFO, directory or device in its place is refused
//! naming the file, never resumed into a different result.
//!
//! A long round may also be checkpointed between its parts
//! ([`WithinRounds`], [`fedcluster_sim::parts`], `mid_round`): the
//! checkpoint of the round's start as above (`next_round` the round), and
//! beside it `checkpoint.part.bin` ([`Schedule::save_part`]): the server after the
//! part, the client halves of that moment and the clients exchanged, sealed
//! with the config and the round. A resumed run reads the part file only when
//! its round is the checkpoint's `next_round`; a fedcluster that predates it
//! ignores it and runs the round again from its start, the same result.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use fedcluster_core::ClientId;

use crate::config::RunConfig;
use crate::outcome::SoFar;

/// The checkpoint's name in `DIR.partial`.
pub const CHECKPOINT_FILE: &str = "checkpoint.bin";
/// Its temporary name while being written.
pub const CHECKPOINT_TMP: &str = "checkpoint.bin.tmp";
/// The checkpoint of a round interrupted between parts, beside it.
pub const PART_FILE: &str = "checkpoint.part.bin";
/// Its temporary name while being written.
pub const PART_TMP: &str = "checkpoint.part.bin.tmp";
/// The largest checkpoint read back (64 GiB: above the state of the largest
/// data set and models that `core::limits` allows).
pub const MAX_CHECKPOINT_BYTES: u64 = 1 << 36;

/// When a run checkpoints.
#[derive(Debug, Clone)]
pub struct Policy {
    /// The checkpoint file.
    pub path: PathBuf,
    /// Every this many rounds; 0: whenever `every` has passed since the last.
    pub every_rounds: usize,
    /// The time between checkpoints when `every_rounds` is 0.
    pub every: Duration,
    /// Continue from the checkpoint at `path` (if there is one).
    pub resume: bool,
    /// Whether to checkpoint between the clients of a round too.
    pub within_rounds: WithinRounds,
    /// Without a checkpoint of its own to resume, start from another
    /// config's checkpoint.
    pub fork: Option<Fork>,
}

/// Where a fork starts ([`crate::fork`]).
#[derive(Debug, Clone)]
pub struct Fork {
    /// The other run's checkpoint file (`checkpoint.bin`).
    pub checkpoint: PathBuf,
    /// The config it was written under.
    pub config: RunConfig,
}

/// Whether a run also checkpoints between the clients of a round (the
/// round exchanged in parts, [`fedcluster_sim::parts`]; the results are the
/// same either way).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WithinRounds {
    /// Between rounds only.
    Never,
    /// A round that follows one of at least [`Policy::every`] is exchanged
    /// a few clients per worker thread at a time and checkpointed between
    /// those parts once `every` has passed since the last checkpoint (and 20
    /// times as long as that one took to write): a run killed in a round of
    /// hours loses a part of it, not the round.
    LongRounds,
    /// Every round, after each client (one a worker thread at a time, so a
    /// killed run redoes at most a client a thread): for rounds that must
    /// never be redone (and for tests); each checkpoint writes the state.
    EveryClient,
}

impl WithinRounds {
    /// What the commands' flags ask for: `--checkpoint-within-rounds` after
    /// each client; else long rounds split where checkpoints follow the
    /// clock (`--checkpoint-every 0`), never where they count rounds.
    pub fn from_flags(every_client: bool, every_rounds: usize) -> Self {
        match (every_client, every_rounds) {
            (true, _) => Self::EveryClient,
            (false, 0) => Self::LongRounds,
            (false, _) => Self::Never,
        }
    }
}

/// A round interrupted between its parts, as [`load_part`] reads it back.
#[derive(Deserialize)]
pub struct Part<S, C> {
    config: String,
    round: usize,
    /// The server after the part.
    pub server: S,
    /// The client halves that hold state at that moment, with their ids.
    pub clients: Vec<(ClientId, C)>,
    /// Planned clients exchanged (a prefix of the round's plan).
    pub done: usize,
    /// The clients that replied, in order.
    pub replied: Vec<ClientId>,
    /// Bytes their replies took.
    pub bytes_up: u64,
    /// Seconds the round had taken.
    pub seconds: f64,
}

/// [`Part`], borrowed for writing ([`Schedule::save_part`]).
#[derive(Serialize)]
pub struct PartRef<'a, S, C> {
    /// The config ([`config_key`]).
    pub config: &'a str,
    /// The interrupted round.
    pub round: usize,
    /// The server after the part.
    pub server: &'a S,
    /// The client halves that hold state, with their ids.
    pub clients: Vec<(ClientId, &'a C)>,
    /// Planned clients exchanged.
    pub done: usize,
    /// The clients that replied, in order.
    pub replied: &'a [ClientId],
    /// Bytes their replies took.
    pub bytes_up: u64,
    /// Seconds the round had taken.
    pub seconds: f64,
}

/// What a checkpoint holds, borrowed for writing.
#[derive(Serialize)]
struct SavedRef<'a, S, C> {
    config: &'a str,
    next_round: usize,
    so_far: &'a SoFar,
    server: &'a S,
    clients: Vec<(ClientId, &'a C)>,
}

/// What a checkpoint holds, read back.
#[derive(Deserialize)]
pub struct Saved<S, C> {
    config: String,
    /// The first round still to run.
    pub next_round: usize,
    /// The records (and final models) of the rounds before it.
    pub so_far: SoFar,
    /// The server half after them.
    pub server: S,
    /// The client halves that hold state, with their ids.
    pub clients: Vec<(ClientId, C)>,
}

/// The config as a checkpoint records it: resolved, `threads` cleared.
pub fn config_key(config: &RunConfig) -> Result<String> {
    let mut config = config.clone();
    config.threads = 0;
    config.to_toml()
}

/// Decides after each round whether to checkpoint.
pub struct Schedule {
    policy: Policy,
    last: Instant,
    /// How long the last checkpoint took to write.
    cost: Duration,
    /// The `next_round` of the checkpoint on disk, when known.
    saved_round: Option<usize>,
}

impl Schedule {
    /// Starts the clock.
    pub fn new(policy: Policy) -> Self {
        Self {
            policy,
            last: Instant::now(),
            cost: Duration::ZERO,
            saved_round: None,
        }
    }

    /// Whether to checkpoint after `round` (from 0) of `rounds`: always after
    /// the last (so a run killed while writing its directory resumes there);
    /// by time, once `every` has passed and at least 20 times as long as the
    /// last checkpoint took, so writing a large state costs at most 5%.
    pub fn due(&self, round: usize, rounds: usize) -> bool {
        round + 1 == rounds
            || match self.policy.every_rounds {
                0 => self.last.elapsed() >= self.policy.every.max(20 * self.cost),
                n => (round + 1).is_multiple_of(n),
            }
    }

    /// Whether to checkpoint after a part of a split round: always with
    /// [`WithinRounds::EveryClient`], else by time as [`Schedule::due`].
    pub fn due_within(&self) -> bool {
        self.policy.within_rounds == WithinRounds::EveryClient
            || self.last.elapsed() >= self.policy.every.max(20 * self.cost)
    }

    /// The policy.
    pub fn policy(&self) -> &Policy {
        &self.policy
    }

    /// Writes the checkpoint before round `next_round` atomically, removes
    /// the part file beside it (which belongs to an earlier round), and times
    /// the write for the next decision.
    pub fn save<S: Serialize, C: Serialize>(
        &mut self,
        config: &str,
        next_round: usize,
        so_far: &SoFar,
        server: &S,
        clients: Vec<(ClientId, &C)>,
    ) -> Result<()> {
        let started = Instant::now();
        let saved = SavedRef {
            config,
            next_round,
            so_far,
            server,
            clients,
        };
        let path = &self.policy.path;
        write_sealed(path, CHECKPOINT_TMP, &identity(config), &saved)?;
        let part = path.with_file_name(PART_FILE);
        if let Err(e) = std::fs::remove_file(&part)
            && e.kind() != std::io::ErrorKind::NotFound
        {
            return Err(e).with_context(|| format!("cannot remove {}", part.display()));
        }
        self.written(started);
        self.saved_before(next_round);
        Ok(())
    }

    /// Writes the part file beside the checkpoint atomically: where round
    /// `part.round`, the checkpoint's `next_round`, stands after a part;
    /// timed as [`Schedule::save`].
    pub fn save_part<S: Serialize, C: Serialize>(
        &mut self,
        part: &PartRef<'_, S, C>,
    ) -> Result<()> {
        let started = Instant::now();
        let identity = part_identity(part.config, part.round);
        let path = self.policy.path.with_file_name(PART_FILE);
        write_sealed(&path, PART_TMP, &identity, part)?;
        self.written(started);
        Ok(())
    }

    /// Records that the checkpoint on disk (read back by a resumed run) is
    /// the one before round `next_round`.
    pub fn saved_before(&mut self, next_round: usize) {
        self.saved_round = Some(next_round);
    }

    fn written(&mut self, started: Instant) {
        self.cost = started.elapsed();
        self.last = Instant::now();
    }

    /// Whether the checkpoint on disk is the one before round `round`.
    pub fn holds_the_start_of(&self, round: usize) -> bool {
        self.saved_round == Some(round)
    }

    /// The checkpoint file.
    pub fn path(&self) -> &Path {
        &self.policy.path
    }
}

/// The identity a checkpoint of the config `config` ([`config_key`]) is
/// sealed with.
fn identity(config: &str) -> String {
    format!(
        "fedcluster run checkpoint v2; config {}",
        fedcluster_state::digest_hex(config.as_bytes())
    )
}

/// Streams `value` sealed with `identity` into `tmp` beside `path`, synced,
/// then renamed to `path`.
fn write_sealed<T: Serialize>(path: &Path, tmp: &str, identity: &str, value: &T) -> Result<()> {
    let tmp = path.with_file_name(tmp);
    let context = || format!("cannot write the checkpoint {}", tmp.display());
    let file = std::fs::File::create(&tmp).with_context(context)?;
    // Streamed: the state is never held twice in memory.
    let out = std::io::BufWriter::with_capacity(1 << 20, file);
    let mut out = fedcluster_state::SealWriter::new(out, identity).with_context(context)?;
    rmp_serde::encode::write_named(&mut out, value).with_context(context)?;
    out.flush().with_context(context)?;
    let file = out
        .finish()
        .with_context(context)?
        .into_inner()
        .map_err(|e| e.into_error())
        .with_context(context)?;
    file.sync_all().with_context(context)?;
    std::fs::rename(&tmp, path)
        .with_context(|| format!("cannot write the checkpoint {}", path.display()))
}

/// The identity a part file of the config `config` within round `round` is
/// sealed with.
fn part_identity(config: &str, round: usize) -> String {
    format!(
        "fedcluster run checkpoint part v1; round {round}; config {}",
        fedcluster_state::digest_hex(config.as_bytes())
    )
}

/// Whose checkpoint a run reads: its own (a resume: a part file of another
/// round, left by a run killed as it moved on, is removed) or another run's
/// (a fork's source: nothing there is removed).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Whose {
    /// The run's own.
    Own,
    /// Another run's, forked from.
    Other,
}

impl Whose {
    /// What to do about a checkpoint of another config, and about a damaged one.
    fn advice(self) -> (&'static str, &'static str) {
        match self {
            Whose::Own => (
                "resume with the same config and --set values, or pass --overwrite to start over",
                "pass --overwrite to start over",
            ),
            Whose::Other => (
                "not the checkpoint of the method forked from",
                "not a checkpoint to fork from",
            ),
        }
    }
}

/// Reads the part file beside the checkpoint at `checkpoint` if it holds
/// round `round` of the config `config`; `None` when there is none, or one
/// of another round (then removed when it is the run's own).
pub fn load_part<S: DeserializeOwned, C: DeserializeOwned>(
    checkpoint: &Path,
    config: &str,
    round: usize,
    whose: Whose,
) -> Result<Option<Part<S, C>>> {
    let path = checkpoint.with_file_name(PART_FILE);
    let identity = part_identity(config, round);
    let (file, len) = match fedcluster_state::verify_sealed_file(
        &path,
        "checkpoint",
        &identity,
        MAX_CHECKPOINT_BYTES,
    ) {
        Ok(opened) => opened,
        Err(e) if e.is_missing() => return Ok(None),
        Err(fedcluster_state::StateError::OtherIdentity { .. }) => {
            if whose == Whose::Own {
                std::fs::remove_file(&path)
                    .with_context(|| format!("cannot remove {}", path.display()))?;
            }
            return Ok(None);
        }
        Err(e) => bail!("{e}; {}", whose.advice().1),
    };
    let part: Part<S, C> = decode(&path, file, len)?;
    if part.config != config || part.round != round {
        bail!(
            "{}: damaged checkpoint: not of this run's round {round}",
            path.display()
        );
    }
    Ok(Some(part))
}

/// Reads the checkpoint at `path`, written by a run of the config `config`
/// ([`config_key`]), `whose` it is; `None` when there is none. Checked whole
/// before it is decoded (see the module docs).
pub fn load<S: DeserializeOwned, C: DeserializeOwned>(
    path: &Path,
    config: &str,
    whose: Whose,
) -> Result<Option<Saved<S, C>>> {
    let (other_config, damaged) = whose.advice();
    let (file, len) = match fedcluster_state::verify_sealed_file(
        path,
        "checkpoint",
        &identity(config),
        MAX_CHECKPOINT_BYTES,
    ) {
        Ok(opened) => opened,
        Err(e) if e.is_missing() => return Ok(None),
        Err(fedcluster_state::StateError::OtherIdentity { .. }) => bail!(
            "{}: the checkpoint was written by another config; {other_config}",
            path.display()
        ),
        Err(e) => bail!("{e}; {damaged}"),
    };
    let saved: Saved<S, C> = decode(path, file, len)?;
    if saved.config != config {
        bail!(
            "{}: the checkpoint was written by another config; {other_config}",
            path.display()
        );
    }
    Ok(Some(saved))
}

/// The `len` bytes of sealed content `file` (of `path`, checked whole) is
/// open at, decoded.
fn decode<T: DeserializeOwned>(path: &Path, file: std::fs::File, len: u64) -> Result<T> {
    use std::io::Read as _;
    let input = std::io::BufReader::with_capacity(1 << 20, file.take(len));
    rmp_serde::decode::from_read(input)
        .map_err(|e| anyhow::anyhow!("{}: damaged checkpoint: {e}", path.display()))
}
