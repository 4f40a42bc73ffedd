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

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use fedcluster_core::ClientId;

use crate::{NetError, codec};

/// The replies one round collected, in client-id order.
pub type RoundReplies = Vec<(ClientId, Vec<u8>)>;

const CONFIG: &str = "config.toml";

/// A directory of per-round reply files.
#[derive(Debug, Clone)]
pub struct ReplyLog {
    dir: PathBuf,
}

fn io(path: &Path, what: &str, e: std::io::Error) -> NetError {
    NetError::Io(format!("checkpoint {}: cannot {what}: {e}", path.display()))
}

impl ReplyLog {
    /// A new log in `dir` for the run `config_toml`; refuses a directory that
    /// already holds rounds (an unfinished run to `--resume`).
    pub fn create(dir: &Path, config_toml: &str) -> Result<Self, NetError> {
        let log = Self {
            dir: dir.to_path_buf(),
        };
        if log.rounds()? > 0 {
            return Err(NetError::Config(format!(
                "{} holds the checkpoint of an unfinished run: pass --resume to continue it, or remove the directory",
                dir.display()
            )));
        }
        fs::create_dir_all(dir).map_err(|e| io(dir, "create it", e))?;
        log.write_atomically(&dir.join(CONFIG), config_toml.as_bytes())?;
        Ok(log)
    }

    /// Opens the log in `dir` of the same run and reads its rounds.
    pub fn resume(dir: &Path, config_toml: &str) -> Result<(Self, Vec<RoundReplies>), NetError> {
        let path = dir.join(CONFIG);
        let saved = fs::read_to_string(&path).map_err(|e| io(&path, "read the run's config", e))?;
        if saved != config_toml {
            return Err(NetError::Config(format!(
                "{} was written for another config: resume with the same config and overrides",
                dir.display()
            )));
        }
        let log = Self {
            dir: dir.to_path_buf(),
        };
        let rounds = (0..log.rounds()?)
            .map(|r| {
                let path = log.round_path(r);
                let bytes = fs::read(&path).map_err(|e| io(&path, "read", e))?;
                codec::decode(&bytes)
                    .map_err(|e| NetError::Codec(format!("checkpoint {}: {e}", path.display())))
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok((log, rounds))
    }

    /// Number of consecutive rounds from 0 on disk.
    fn rounds(&self) -> Result<usize, NetError> {
        let mut r = 0;
        while self.round_path(r).exists() {
            r += 1;
        }
        Ok(r)
    }

    fn round_path(&self, round: usize) -> PathBuf {
        self.dir.join(format!("round-{round:06}.bin"))
    }

    /// Stores round `round`'s replies.
    pub fn append(&self, round: usize, replies: &RoundReplies) -> Result<(), NetError> {
        let bytes = codec::encode(replies)?;
        self.write_atomically(&self.round_path(round), &bytes)
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
        let (_, rounds) = ReplyLog::resume(&dir, "rounds = 3").unwrap();
        assert_eq!(rounds, vec![r0, r1]);
        assert!(ReplyLog::resume(&dir, "rounds = 4").is_err());
        let again = ReplyLog::create(&dir, "rounds = 3")
            .unwrap_err()
            .to_string();
        assert!(again.contains("--resume"), "{again}");
        log.remove().unwrap();
        assert!(!dir.exists());
    }
}
