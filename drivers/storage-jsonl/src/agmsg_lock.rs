//! agmsg's own lock on the log: the directory `events.jsonl.lock` beside it, taken with `mkdir` and
//! released with `rmdir`, retried every 10 ms up to `AGMSG_JSONL_LOCK_TRIES` times (1000 by default).
//! agmsg's bash driver, its `rename.sh` and a second agmsg install on the same store know no other
//! lock, so every op here that reads or writes the log takes it too, inside the host's store lock:
//! then neither side can interleave with the other's read-fold-append.
//!
//! A trapped or killed component cannot `rmdir` it. So that such a leftover does not wedge the store,
//! the holder also writes a marker file, `events.jsonl.lock.agmsg-host`, after its `mkdir` succeeds
//! and removes it before its `rmdir`. Every component op holds the host's store lock while it looks,
//! so a marker it finds can only be a dead component's, and the directory beside it is that
//! component's lock, not a bash writer's: it is removed. A kill between `mkdir` and the marker (or
//! between the marker's removal and `rmdir`) leaves a plain stale directory, as a killed bash writer
//! does in agmsg: the op then waits out the tries and fails, naming the directory.

use std::time::Duration;

use agmsg_guest_sdk::storage::DriverError;

use crate::store_path;

pub const LOCK_DIR: &str = "events.jsonl.lock";
const OWNER_MARKER: &str = "events.jsonl.lock.agmsg-host";
const DEFAULT_TRIES: u64 = 1000;
const RETRY: Duration = Duration::from_millis(10);

/// Held while alive; dropping it releases the lock.
pub struct AgmsgLock {
    released: bool,
}

fn tries() -> u64 {
    std::env::var("AGMSG_JSONL_LOCK_TRIES").ok().and_then(|t| t.trim().parse::<u64>().ok()).filter(|&t| t > 0).unwrap_or(DEFAULT_TRIES)
}

impl AgmsgLock {
    /// Take the lock (the caller holds the host's store lock).
    pub fn acquire() -> Result<AgmsgLock, DriverError> {
        let (dir, marker) = (store_path(LOCK_DIR), store_path(OWNER_MARKER));
        if std::path::Path::new(&marker).exists() {
            // A dead component's lock (see the module comment): take it back.
            match std::fs::remove_dir(&dir) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                    return Err(DriverError::runtime(format!("jsonl: cannot remove the stale lock {LOCK_DIR}/ a killed op left: {e}")));
                }
                _ => {}
            }
            let _ = std::fs::remove_file(&marker);
        }
        let max = tries();
        let mut attempt = 0;
        loop {
            match std::fs::create_dir(&dir) {
                Ok(()) => break,
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                    attempt += 1;
                    if attempt >= max {
                        return Err(DriverError::runtime(format!(
                            "jsonl: the log is locked by another writer ({LOCK_DIR}/ exists; waited {attempt} x 10 ms): remove it if no agmsg process is running"
                        )));
                    }
                    std::thread::sleep(RETRY);
                }
                Err(e) => return Err(DriverError::runtime(format!("jsonl: cannot create the lock {LOCK_DIR}/: {e}"))),
            }
        }
        if let Err(e) = std::fs::write(&marker, b"") {
            let _ = std::fs::remove_dir(&dir);
            return Err(DriverError::runtime(format!("jsonl: cannot write {OWNER_MARKER}: {e}")));
        }
        Ok(AgmsgLock { released: false })
    }
}

impl Drop for AgmsgLock {
    fn drop(&mut self) {
        if !self.released {
            self.released = true;
            // The marker first: once it is gone, nobody takes the directory for a dead component's.
            let _ = std::fs::remove_file(store_path(OWNER_MARKER));
            let _ = std::fs::remove_dir(store_path(LOCK_DIR));
        }
    }
}
