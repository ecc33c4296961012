//! What the driver asks of the host around the store: where the store is, the host's store lock, and
//! its log. In the component these are `agmsg_guest_sdk`'s (the preopened `/store`, `StoreLock`,
//! `log`). A native build (the unit tests, the fuzz checks) has no host, and any host call aborts it (the
//! bindings' import stubs are `unreachable!()`), so there they are stand-ins: the store is a directory the
//! test chose for its thread (or, in a crash test's child process, `AGMSG_SYNC_CRASH_DB`), the host's
//! lock is none (agmsg's `events.jsonl.lock/` still excludes every other op), and a warning goes to
//! stderr (nowhere in the fuzz build). The shipped component compiles only the first halves.

#[cfg(not(any(test, fuzzing)))]
pub use component::*;
#[cfg(any(test, fuzzing))]
pub use native::*;

#[cfg(not(any(test, fuzzing)))]
mod component {
    use agmsg_guest_sdk::storage::{DriverError, StoreLock};

    /// The store directory the host preopened.
    pub fn store_dir() -> &'static str {
        agmsg_guest_sdk::STORE_DIR
    }

    pub type HostLock = StoreLock;

    /// The host's store lock, waited for up to [`crate::LOCK_WAIT`].
    pub fn lock() -> Result<HostLock, DriverError> {
        Ok(StoreLock::acquire(crate::LOCK_WAIT)?)
    }

    pub fn debug(message: &str) {
        agmsg_guest_sdk::log::debug(message);
    }

    pub fn info(message: &str) {
        agmsg_guest_sdk::log::info(message);
    }

    pub fn warn(message: &str) {
        agmsg_guest_sdk::log::warn(message);
    }
}

#[cfg(any(test, fuzzing))]
mod native {
    use std::cell::RefCell;
    use std::path::{Path, PathBuf};

    use agmsg_guest_sdk::storage::DriverError;

    thread_local! {
        static STORE: RefCell<Option<PathBuf>> = const { RefCell::new(None) };
    }

    /// Make `dir` this thread's store (each test runs on a thread of its own).
    pub fn set_store_dir(dir: &Path) {
        STORE.with(|s| *s.borrow_mut() = Some(dir.to_owned()));
    }

    /// This thread's store: the one set by [`set_store_dir`], else a crash child's `AGMSG_SYNC_CRASH_DB`.
    pub fn store_dir() -> String {
        STORE.with(|s| {
            let mut s = s.borrow_mut();
            if s.is_none() {
                *s = std::env::var_os("AGMSG_SYNC_CRASH_DB").map(PathBuf::from);
            }
            s.as_ref().expect("a native test sets its store directory first").to_str().expect("a UTF-8 path").to_owned()
        })
    }

    /// No host lock in a native test.
    pub struct HostLock;

    pub fn lock() -> Result<HostLock, DriverError> {
        Ok(HostLock)
    }

    pub fn debug(message: &str) {
        say("debug", message);
    }

    pub fn info(message: &str) {
        say("info", message);
    }

    pub fn warn(message: &str) {
        say("warn", message);
    }

    /// To stderr in a test; nowhere in the fuzz build, which runs millions of ops.
    fn say(level: &str, message: &str) {
        if !cfg!(fuzzing) {
            eprintln!("jsonl {level}: {message}");
        }
    }
}
