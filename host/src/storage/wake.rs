//! Waking a local watcher when its store changes: the host watches the store directory it granted the
//! driver (inotify) for writes to the driver's store file, and a `watch` waiting between rounds reads as
//! soon as one lands instead of at the end of its interval.
//!
//! A wake is a hint, never the truth: the round after it reads from the cursor as any round does, and
//! rounds still come at least every interval, so a missed change only delays. Where a change may come
//! without a local event (the store on a network or FUSE file system, written by another machine) or
//! inotify is refused, the watch polls instead.
//!
//! Host-side only: the inotify descriptor is the host's (close-on-exec, never granted to a driver) and can
//! only report; it gives no access to any file.
//!
//! Why inotify through rustix rather than the `notify` crate: rustix is already the host's system-call
//! layer (no new dependency), and the watch loop waits on the descriptor itself with `poll`, so no thread
//! is needed, where `notify` runs a thread of its own and brings its own dependencies.

use std::ffi::CStr;
use std::mem::MaybeUninit;
use std::os::fd::OwnedFd;
use std::time::Duration;

use rustix::event::{PollFd, PollFlags, Timespec};
use rustix::fs::inotify::{self, CreateFlags, ReadFlags, WatchFlags};
use rustix::io::Errno;

use crate::runtime::sandbox::StoreDir;

/// The companions SQLite writes beside a database (its rollback journal, its write-ahead log): a commit
/// may touch only them. Names other drivers are unlikely to use for anything else.
const COMPANION_SUFFIXES: [&str; 2] = ["-journal", "-wal"];

/// At most this many reads of queued events per wait: a writer that never pauses cannot keep a drain
/// going forever (what is left is read at the next wait).
const MAX_READS_PER_DRAIN: usize = 64;

/// File systems on which a change can happen without a local inotify event (another machine, or a
/// user-space server, writes the store), by `statfs` `f_type` (linux/magic.h), with a name for the log.
const REMOTE_FILE_SYSTEMS: &[(u32, &str)] = &[
    (0x6969, "NFS"),
    (0xFF53_4D42, "CIFS"),
    (0xFE53_4D42, "SMB2"),
    (0x517B, "SMB"),
    (0x6573_5546, "FUSE"),
    (0x0102_1997, "9p"),
    (0x6A65_6A63, "virtiofs"),
    (0x00C3_6400, "Ceph"),
    (0x5346_414F, "AFS"),
    (0x6B41_4653, "kAFS"),
    (0x7375_7245, "Coda"),
    (0x0116_1970, "GFS2"),
    (0x7461_636F, "OCFS2"),
    (0x0BD0_0BD0, "Lustre"),
    (0x2003_0528, "OrangeFS"),
    (0x564C, "NCP"),
    (0x786F_4256, "vboxsf"),
];

/// The name of a file system on which inotify misses changes, by its `f_type`; `None` for a local one.
pub fn remote_file_system(f_type: u64) -> Option<&'static str> {
    REMOTE_FILE_SYSTEMS.iter().find(|(magic, _)| u64::from(*magic) == f_type).map(|(_, name)| *name)
}

/// A watch of one store directory for changes to the driver's store file and its companions.
pub struct StoreWake {
    inotify: OwnedFd,
    /// The file names whose changes wake: the store file, then its companions.
    names: Vec<Vec<u8>>,
    buffer: Box<[MaybeUninit<u8>]>,
}

/// What waiting on a [`StoreWake`] saw.
#[derive(Debug, PartialEq, Eq)]
pub enum Change {
    /// The store file (or a companion) changed, or so many events came that some were dropped.
    Changed,
    /// Nothing that concerns the store file, within the time.
    Quiet,
    /// The watch ended (the directory was removed, or its file system unmounted): no more wakes.
    Ended,
}

impl StoreWake {
    /// Watch `dir` for writes to `store_file` (a name directly in it, as the driver's `describe` says).
    /// `Err`: why the watch cannot be trusted to wake, and the watcher should poll.
    pub fn watch(dir: &StoreDir, store_file: &str) -> Result<StoreWake, String> {
        if store_file.is_empty() || store_file.contains('/') || store_file == "." || store_file == ".." {
            return Err(format!("the store file {store_file:?} is not a file directly in the store directory"));
        }
        // The directory the driver holds, by its descriptor's /proc entry where there is one: a path
        // swapped since cannot redirect the watch.
        let path = dir.preopen_path().map_err(|e| format!("cannot name the store directory {}: {e}", dir.path().display()))?;
        let fs = rustix::fs::statfs(&path).map_err(|e| format!("cannot statfs the store directory {}: {e}", dir.path().display()))?;
        // f_type is a signed word; magic numbers are 32-bit patterns.
        let f_type = u64::from(fs.f_type as u32);
        if let Some(name) = remote_file_system(f_type) {
            return Err(format!(
                "the store {} is on {name} (f_type {f_type:#x}), where a write from elsewhere raises no local event",
                dir.path().display()
            ));
        }
        let inotify = inotify::init(CreateFlags::CLOEXEC | CreateFlags::NONBLOCK).map_err(|e| format!("inotify is not available: {e}"))?;
        // Writes and appends, files created or renamed into place (an atomic rewrite), and a deleted
        // rollback journal (a commit in agmsg's native sqlite3's DELETE mode). Not IN_DONT_FOLLOW: the
        // /proc entry is a link to the directory itself.
        let events = WatchFlags::MODIFY
            | WatchFlags::CLOSE_WRITE
            | WatchFlags::CREATE
            | WatchFlags::DELETE
            | WatchFlags::MOVED_TO
            | WatchFlags::ONLYDIR;
        inotify::add_watch(&inotify, &path, events)
            .map_err(|e| format!("cannot watch the store directory {} with inotify: {e}", dir.path().display()))?;
        let mut names = vec![store_file.as_bytes().to_vec()];
        names.extend(COMPANION_SUFFIXES.iter().map(|suffix| format!("{store_file}{suffix}").into_bytes()));
        Ok(StoreWake { inotify, names, buffer: vec![MaybeUninit::uninit(); 4096].into_boxed_slice() })
    }

    /// Wait up to `timeout` for a change to the store file. What was queued is read, so one burst of
    /// writes wakes once (writes that come after the read wake again).
    pub fn wait(&mut self, timeout: Duration) -> Result<Change, String> {
        let timeout = Timespec::try_from(timeout).unwrap_or(Timespec { tv_sec: i64::MAX, tv_nsec: 0 });
        let mut fds = [PollFd::new(&self.inotify, PollFlags::IN)];
        match rustix::event::poll(&mut fds, Some(&timeout)) {
            Ok(0) => return Ok(Change::Quiet),
            Ok(_) => {}
            // A signal (Ctrl-C): the caller looks at its stop flag and waits again.
            Err(Errno::INTR) => return Ok(Change::Quiet),
            Err(e) => return Err(format!("waiting on inotify: {e}")),
        }
        self.drain()
    }

    /// Read every queued event without waiting: whether one concerned the store file.
    pub fn drain(&mut self) -> Result<Change, String> {
        let mut seen = Change::Quiet;
        let mut reader = inotify::Reader::new(&self.inotify, &mut self.buffer);
        let mut reads = 0;
        loop {
            if reader.is_buffer_empty() {
                if reads == MAX_READS_PER_DRAIN {
                    return Ok(Change::Changed);
                }
                reads += 1;
            }
            let event = match reader.next() {
                Ok(event) => event,
                Err(Errno::AGAIN) => return Ok(seen),
                Err(Errno::INTR) => continue,
                Err(e) => return Err(format!("reading inotify events: {e}")),
            };
            let flags = event.events();
            if flags.contains(ReadFlags::IGNORED) || flags.contains(ReadFlags::UNMOUNT) {
                return Ok(Change::Ended);
            }
            if flags.contains(ReadFlags::QUEUE_OVERFLOW) || event.file_name().is_some_and(|name| wakes(&self.names, name)) {
                seen = Change::Changed;
            }
        }
    }
}

fn wakes(names: &[Vec<u8>], name: &CStr) -> bool {
    names.iter().any(|n| n.as_slice() == name.to_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn watched(file: &str) -> (tempfile::TempDir, StoreWake) {
        let dir = tempfile::tempdir().unwrap();
        let wake = StoreWake::watch(&StoreDir::open(dir.path()).unwrap(), file).unwrap();
        (dir, wake)
    }

    #[test]
    fn a_write_to_the_store_file_or_a_companion_wakes_and_others_do_not() {
        let (dir, mut wake) = watched("messages.db");
        assert_eq!(wake.wait(Duration::from_millis(10)).unwrap(), Change::Quiet);
        std::fs::write(dir.path().join("unrelated.tsv"), "x").unwrap();
        std::fs::write(dir.path().join("messages.db.bak"), "x").unwrap();
        assert_eq!(wake.wait(Duration::from_millis(200)).unwrap(), Change::Quiet);
        for name in ["messages.db", "messages.db-journal", "messages.db-wal"] {
            std::fs::write(dir.path().join(name), "x").unwrap();
            assert_eq!(wake.wait(Duration::from_secs(5)).unwrap(), Change::Changed, "{name}");
            // The burst was read at once: nothing is left to wake again.
            assert_eq!(wake.wait(Duration::from_millis(10)).unwrap(), Change::Quiet, "{name}");
        }
    }

    #[test]
    fn an_append_and_a_rename_into_place_wake() {
        let (dir, mut wake) = watched("events.jsonl");
        let log = dir.path().join("events.jsonl");
        std::fs::write(&log, "{}\n").unwrap();
        assert_eq!(wake.wait(Duration::from_secs(5)).unwrap(), Change::Changed);
        std::fs::OpenOptions::new().append(true).open(&log).unwrap().write_all(b"{}\n").unwrap();
        assert_eq!(wake.wait(Duration::from_secs(5)).unwrap(), Change::Changed);
        let tmp = dir.path().join("events.jsonl.tmp");
        std::fs::write(&tmp, "{}\n").unwrap();
        assert_eq!(wake.wait(Duration::from_millis(100)).unwrap(), Change::Quiet, "the temp file is not the log");
        std::fs::rename(&tmp, &log).unwrap();
        assert_eq!(wake.wait(Duration::from_secs(5)).unwrap(), Change::Changed);
    }

    #[test]
    fn a_removed_store_directory_ends_the_watch() {
        let (dir, mut wake) = watched("messages.db");
        std::fs::remove_dir(dir.path()).unwrap();
        assert_eq!(wake.wait(Duration::from_secs(5)).unwrap(), Change::Ended);
    }

    #[test]
    fn a_store_file_below_a_directory_is_not_watched() {
        let dir = tempfile::tempdir().unwrap();
        let err = StoreWake::watch(&StoreDir::open(dir.path()).unwrap(), "db/messages.db").err().unwrap();
        assert!(err.contains("not a file directly in the store directory"), "{err}");
    }

    #[test]
    fn network_and_fuse_file_systems_are_polled_local_ones_are_not() {
        assert_eq!(remote_file_system(0x6969), Some("NFS"));
        assert_eq!(remote_file_system(0xFF53_4D42), Some("CIFS"));
        assert_eq!(remote_file_system(0x6573_5546), Some("FUSE"));
        assert_eq!(remote_file_system(0x0102_1997), Some("9p"));
        // ext4, tmpfs, btrfs, xfs, overlayfs
        for local in [0xEF53, 0x0102_1994, 0x9123_683E, 0x5846_5342, 0x794C_7630] {
            assert_eq!(remote_file_system(local), None, "{local:#x}");
        }
    }
}
