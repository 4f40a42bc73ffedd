//! The coordinator's checkpoint: the replies of every finished round, one
//! file per round, written atomically (temporary file, fsync, rename) before
//! the round's replies reach the server.
//!
//! The server half is deterministic given its replies (its random stream is
//! derived from the seed and the round), so replaying the log through it
//! rebuilds its state exactly: a coordinator restarted with `--resume` replays
//! the finished rounds, then carries on with the live clients and reaches the
//! same final models as an uninterrupted run. Only messages are stored, never
//! the algorithm's internal state. The log's size is the upload volume of the
//! rounds so far.
//!
//! Each round file is sealed ([`fedcluster_state::seal`]) with the identity
//! `fedcluster net round v1; config <SHA-256 of the run's config>; round R`,
//! so a round file with a byte changed, cut short, of another run, or put in
//! another round's place (two files swapped, one copied over the next) is
//! refused naming the file; so is a gap (a round file missing before the
//! last), more rounds than the run has, and anything but a regular file.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use fedcluster_core::ClientId;
use fedcluster_core::limits::MAX_CONFIG_BYTES;
use fedcluster_state::{StateError, digest_hex, read_bounded, read_string_bounded, seal, unseal};

use crate::{NetError, codec};

/// The replies one round collected, in client-id order.
pub type RoundReplies = Vec<(ClientId, Vec<u8>)>;

const CONFIG: &str = "config.toml";
/// The largest round file read back (64 GiB).
pub const MAX_ROUND_FILE_BYTES: u64 = 1 << 36;

/// A directory of per-round reply files.
#[derive(Debug, Clone)]
pub struct ReplyLog {
    dir: PathBuf,
    /// The SHA-256 of the run's config, in every round file's identity.
    config_digest: String,
}

fn io(path: &Path, what: &str, e: std::io::Error) -> NetError {
    NetError::Io(format!("checkpoint {}: cannot {what}: {e}", path.display()))
}

fn state(e: StateError) -> NetError {
    NetError::Config(format!("checkpoint {e}"))
}

impl ReplyLog {
    fn at(dir: &Path, config_toml: &str) -> Self {
        Self {
            dir: dir.to_path_buf(),
            config_digest: digest_hex(config_toml.as_bytes()),
        }
    }

    /// A new log in `dir` for the run `config_toml`; refuses a directory that
    /// already holds rounds (an unfinished run to `--resume`).
    pub fn create(dir: &Path, config_toml: &str) -> Result<Self, NetError> {
        let log = Self::at(dir, config_toml);
        if dir.exists() && log.rounds(usize::MAX)? > 0 {
            return Err(NetError::Config(format!(
                "{} holds the checkpoint of an unfinished run: pass --resume to continue it, or remove the directory",
                dir.display()
            )));
        }
        fs::create_dir_all(dir).map_err(|e| io(dir, "create it", e))?;
        log.write_atomically(&dir.join(CONFIG), config_toml.as_bytes())?;
        Ok(log)
    }

    /// Opens the log in `dir` of the same run (of `rounds` rounds) and reads
    /// its rounds, each checked (see the module docs).
    pub fn resume(
        dir: &Path,
        config_toml: &str,
        rounds: usize,
    ) -> Result<(Self, Vec<RoundReplies>), NetError> {
        let path = dir.join(CONFIG);
        let saved = read_string_bounded(&path, "run config", MAX_CONFIG_BYTES).map_err(state)?;
        if saved != config_toml {
            return Err(NetError::Config(format!(
                "{} was written for another config: resume with the same config and overrides",
                dir.display()
            )));
        }
        let log = Self::at(dir, config_toml);
        let rounds = (0..log.rounds(rounds)?)
            .map(|r| log.read_round(r))
            .collect::<Result<Vec<_>, _>>()?;
        Ok((log, rounds))
    }

    fn identity(&self, round: usize) -> String {
        format!(
            "fedcluster net round v1; config {}; round {round}",
            self.config_digest
        )
    }

    fn read_round(&self, round: usize) -> Result<RoundReplies, NetError> {
        let path = self.round_path(round);
        let bytes = read_bounded(&path, "round file", MAX_ROUND_FILE_BYTES).map_err(state)?;
        let body = unseal(&path, "round file", &self.identity(round), &bytes).map_err(state)?;
        codec::decode(body)
            .map_err(|e| NetError::Codec(format!("checkpoint {}: {e}", path.display())))
    }

    /// Number of rounds on disk, which must be rounds 0 to n - 1 with no gap
    /// and no more than `limit`.
    fn rounds(&self, limit: usize) -> Result<usize, NetError> {
        let entries = fs::read_dir(&self.dir).map_err(|e| io(&self.dir, "list", e))?;
        let mut found = Vec::new();
        for entry in entries {
            let name = entry.map_err(|e| io(&self.dir, "list", e))?.file_name();
            let round = name
                .to_str()
                .and_then(|n| n.strip_prefix("round-")?.strip_suffix(".bin"))
                .and_then(|r| r.parse::<usize>().ok());
            found.extend(round);
        }
        found.sort_unstable();
        for (expected, &round) in found.iter().enumerate() {
            if round != expected {
                return Err(NetError::Config(format!(
                    "checkpoint {}: missing (round {round} is there): the log is incomplete, \
                     so it cannot be replayed; remove {} to start over",
                    self.round_path(expected).display(),
                    self.dir.display()
                )));
            }
        }
        if found.len() > limit {
            return Err(NetError::Config(format!(
                "checkpoint {}: holds {} rounds, more than the run's {limit}",
                self.dir.display(),
                found.len()
            )));
        }
        Ok(found.len())
    }

    fn round_path(&self, round: usize) -> PathBuf {
        self.dir.join(format!("round-{round:06}.bin"))
    }

    /// Stores round `round`'s replies.
    pub fn append(&self, round: usize, replies: &RoundReplies) -> Result<(), NetError> {
        let bytes = codec::encode(replies)?;
        let sealed = seal(&self.identity(round), &bytes);
        self.write_atomically(&self.round_path(round), &sealed)
    }

    fn write_atomically(&self, path: &Path, bytes: &[u8]) -> Result<(), NetError> {
        let tmp = path.with_extension("tmp");
        let mut file = fs::File::create(&tmp).map_err(|e| io(&tmp, "create", e))?;
        file.write_all(bytes).map_err(|e| io(&tmp, "write", e))?;
        file.sync_all().map_err(|e| io(&tmp, "sync", e))?;
        fs::rename(&tmp, path).map_err(|e| io(path, "rename into place", e))
    }

    /// Deletes the log (the run finished and was written).
    pub fn remove(self) -> Result<(), NetError> {
        fs::remove_dir_all(&self.dir).map_err(|e| io(&self.dir, "remove", e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rounds_come_back_and_other_configs_are_refused() {
        let dir = std::env::temp_dir().join(format!("fedcluster-log-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        let log = ReplyLog::create(&dir, "rounds = 3").unwrap();
        let r0: RoundReplies = vec![(0, vec![1, 2]), (2, vec![3])];
        let r1: RoundReplies = vec![(1, vec![])];
        log.append(0, &r0).unwrap();
        log.append(1, &r1).unwrap();
        let (_, rounds) = ReplyLog::resume(&dir, "rounds = 3", 3).unwrap();
        assert_eq!(rounds, vec![r0, r1]);
        assert!(ReplyLog::resume(&dir, "rounds = 4", 3).is_err());
        let more = ReplyLog::resume(&dir, "rounds = 3", 1)
            .unwrap_err()
            .to_string();
        assert!(more.contains("more than the run's 1"), "{more}");
        let again = ReplyLog::create(&dir, "rounds = 3")
            .unwrap_err()
            .to_string();
        assert!(again.contains("--resume"), "{again}");
        log.remove().unwrap();
        assert!(!dir.exists());
    }

    #[test]
    fn a_damaged_swapped_or_missing_round_file_is_refused_by_name() {
        let dir = tempfile_dir("damaged");
        let log = ReplyLog::create(&dir, "rounds = 3").unwrap();
        for r in 0..3 {
            log.append(r, &vec![(r, vec![r as u8; 5])]).unwrap();
        }
        let path = |r: usize| dir.join(format!("round-{r:06}.bin"));
        let resume = || ReplyLog::resume(&dir, "rounds = 3", 3).map(|(_, r)| r);
        let good = fs::read(path(1)).unwrap();
        let mut flipped = good.clone();
        flipped[good.len() / 2] ^= 1;
        fs::write(path(1), &flipped).unwrap();
        let e = resume().unwrap_err().to_string();
        assert!(e.contains("round-000001.bin: damaged round file"), "{e}");
        fs::write(path(1), fs::read(path(2)).unwrap()).unwrap();
        let e = resume().unwrap_err().to_string();
        assert!(
            e.contains("belongs to") && e.contains("round 2`, not to"),
            "{e}"
        );
        fs::remove_file(path(1)).unwrap();
        let e = resume().unwrap_err().to_string();
        assert!(e.contains("round-000001.bin: missing"), "{e}");
        fs::create_dir(path(1)).unwrap();
        let e = resume().unwrap_err().to_string();
        assert!(e.contains("round-000001.bin: is a directory"), "{e}");
        fs::remove_dir_all(&dir).unwrap();
    }

    fn tempfile_dir(name: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("fedcluster-log-{name}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        dir
    }
}
