//! How often one sqlite op takes and drops SQLite's shared lock (issue 28 §3). Each time, SQLite looks
//! for a hot journal, and with the journal kept in PERSIST mode that is an open, a read and a close of
//! `messages.db-journal` (a dozen WASI calls from the component). The driver runs the schema check and
//! the op in one transaction, so a fresh process opens the journal at most twice for a read (the schema
//! load, the op) and once plus its own write for a send; before, each statement did (six for
//! list-unread, four for send). Counted from outside with inotify's open events on the journal.

mod common;

use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use common::Env;

/// Counts the opens of one file while it lives. Closes are watched too: inotify merges identical events
/// in a row, so only an open, close, open, close sequence counts every open.
struct Opens(libc::c_int);

impl Opens {
    fn watch(file: &Path) -> Opens {
        let path = CString::new(file.as_os_str().as_bytes()).unwrap();
        // SAFETY: plain syscalls on a descriptor we own; the path is NUL-terminated.
        unsafe {
            let fd = libc::inotify_init1(libc::IN_NONBLOCK | libc::IN_CLOEXEC);
            assert!(fd >= 0, "inotify_init1: {}", std::io::Error::last_os_error());
            assert!(
                libc::inotify_add_watch(fd, path.as_ptr(), libc::IN_OPEN | libc::IN_CLOSE) >= 0,
                "watch {}: {}",
                file.display(),
                std::io::Error::last_os_error()
            );
            Opens(fd)
        }
    }

    /// Opens since the last call (the events are queued by the time the watched process has exited).
    fn take(&self) -> usize {
        let mut count = 0;
        let mut buf = [0u8; 4096];
        loop {
            // SAFETY: reading into a buffer of the given size.
            let n = unsafe { libc::read(self.0, buf.as_mut_ptr().cast(), buf.len()) };
            if n <= 0 {
                return count;
            }
            let mut at = 0;
            while at < n as usize {
                // SAFETY: the kernel writes whole `inotify_event` records followed by `len` name bytes.
                let event = unsafe { std::ptr::read_unaligned(buf[at..].as_ptr().cast::<libc::inotify_event>()) };
                if event.mask & libc::IN_OPEN != 0 {
                    count += 1;
                }
                at += size_of::<libc::inotify_event>() + event.len as usize;
            }
        }
    }
}

impl Drop for Opens {
    fn drop(&mut self) {
        // SAFETY: our descriptor, closed once.
        unsafe { libc::close(self.0) };
    }
}

#[test]
fn one_op_checks_for_a_hot_journal_once_per_transaction() {
    // In-process, one op per process: through the resident server, the spare that warms for the next
    // op reads the store too, between the ops counted here.
    let env = Env::new().env("AGMSG_HOST_SERVER", "off");
    env.storage(&["init"]).ok();
    for i in 0..3 {
        env.storage(&["send", "t", "alice", "bob", &format!("m{i}")]).ok();
    }
    let journal = env.store.join("messages.db-journal");
    assert!(journal.is_file(), "a PERSIST journal stays after the first write");
    let opens = Opens::watch(&journal);

    let run = env.storage(&["list-unread", "t", "bob"]);
    run.ok();
    assert_eq!(run.lines().len(), 3, "the three messages: {:?}", run.lines());
    assert!(opens.take() <= 2, "list-unread: a journal check for the schema load and one for the op");

    let run = env.storage(&["history", "t", "--limit", "2"]);
    run.ok();
    assert_eq!(run.lines().len(), 2);
    assert!(opens.take() <= 2, "history: as list-unread");

    env.storage(&["send", "t", "alice", "bob", "m3"]).ok();
    // The check inside the write transaction and the journal's own open for writing.
    assert!(opens.take() <= 2, "send: one transaction from the schema check to the commit");
    assert_eq!(env.storage(&["list-unread", "t", "bob"]).lines().len(), 4);
}

/// A store agmsg's bash driver made (its schema, none of this driver's markers) gets them on its first
/// op, whether that op reads (the check leaves the read transaction to create them) or writes (they are
/// created inside the op's write transaction), with the same result as an `init` first.
#[test]
fn the_first_op_on_an_agmsg_store_creates_the_additions_in_either_transaction() {
    let mut answers = Vec::new();
    for first in ["init", "list-unread", "send"] {
        let env = Env::new();
        std::fs::create_dir_all(&env.store).unwrap();
        let db = rusqlite::Connection::open(env.db()).unwrap();
        db.execute_batch(include_str!("fixtures/agmsg-bash-schema.sql")).unwrap();
        db.execute("INSERT INTO messages(team, from_agent, to_agent, body) VALUES('t', 'alice', 'bob', 'legacy')", []).unwrap();
        drop(db);
        let args: &[&str] = match first {
            "init" => &["init"],
            "list-unread" => &["list-unread", "t", "bob"],
            _ => &["send", "t", "alice", "carol", "new"],
        };
        env.storage(args).ok();
        if first != "send" {
            env.storage(&["send", "t", "alice", "carol", "new"]).ok();
        }
        let db = rusqlite::Connection::open(env.db()).unwrap();
        let markers: i64 = db
            .query_row("SELECT count(*) FROM storage_metadata WHERE key IN ('agmsg_host_schema', 'read_cursor_v1')", [], |r| r.get(0))
            .unwrap();
        assert_eq!(markers, 2, "{first} first: the driver's marker and agmsg's migration marker");
        let bob = env.storage(&["list-unread", "t", "bob"]).ok().lines().len();
        let carol = env.storage(&["list-unread", "t", "carol"]).ok().lines().len();
        assert_eq!(carol, 1, "{first} first");
        answers.push((first, bob, env.storage(&["watch-tip", "t:bob"]).ok().stdout.clone()));
    }
    assert!(answers.iter().all(|(_, bob, tip)| (bob, tip) == (&answers[0].1, &answers[0].2)), "{answers:?}");
}
