//! agmsg's run directory (`<skill>/run`, where its locks, sentinels and placement records live) as
//! spawn and despawn use it: the placement record `spawn.<team>__<agent>` and the readiness sentinel
//! `ready.<team>__<agent>`, names percent-encoded as agmsg encodes them.
//!
//! The directory is opened as a [`crate::fsroot::Dir`] whose last component may not be a symlink, and
//! every file in it is opened through that root: never through a link, and without blocking (a FIFO
//! planted there is not a file), so a record can neither be read from nor written through a link
//! someone left in agmsg's directory.

use std::io;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::error::HostError;
use crate::fsroot::{self, Why};

/// The largest file in the run directory spawn reads (a record or a lock is one short line).
const MAX_READ: u64 = 64 * 1024;

/// agmsg's run directory.
#[derive(Clone, Debug)]
pub struct RunDir {
    path: PathBuf,
}

impl RunDir {
    /// `<skill>/run`.
    pub fn new(skill_dir: &Path) -> RunDir {
        RunDir { path: skill_dir.join("run") }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The directory itself, not a link to one; `None` when it does not exist and `create` is false.
    fn open(&self, create: bool) -> io::Result<Option<fsroot::Dir>> {
        if create {
            // Where agmsg's install is is the user's path: its links are theirs; `run` itself is not followed.
            std::fs::create_dir_all(&self.path)?;
        }
        match fsroot::Dir::open_ambient_nofollow(&self.path) {
            Ok(dir) => Ok(Some(dir)),
            Err(fsroot::Error { why: Why::Missing, .. }) if !create => Ok(None),
            Err(e) => Err(e.into()),
        }
    }

    /// The text of the regular file `name`; `None` when there is none. A link, a FIFO or anything
    /// else that is not a regular file is an error, as is a file that is not UTF-8 or too large.
    pub fn read(&self, name: &str) -> io::Result<Option<String>> {
        let Some(dir) = self.open(false)? else { return Ok(None) };
        let bytes = match dir.read(name, MAX_READ) {
            Ok(bytes) => bytes,
            Err(fsroot::Error { why: Why::Missing, .. }) => return Ok(None),
            Err(e) => return Err(e.into()),
        };
        String::from_utf8(bytes).map(Some).map_err(|_| io::Error::other(format!("{} is not UTF-8", self.path.join(name).display())))
    }

    /// Replace `name` with `text` atomically (a temporary file renamed over it: a link there is
    /// replaced, never written through), creating the directory if needed.
    pub fn write(&self, name: &str, text: &str) -> io::Result<()> {
        let dir = self.open(true)?.expect("created");
        dir.write_atomically(name, |e| e, |out| io::Write::write_all(out, text.as_bytes()))
    }

    /// Remove the entry `name` (whatever it is, never what a link points to); whether there was one.
    pub fn remove(&self, name: &str) -> io::Result<bool> {
        let Some(dir) = self.open(false)? else { return Ok(false) };
        dir.remove_file(name).map_err(io::Error::from)
    }

    /// Whether an entry `name` exists (agmsg's `[ -e ]` on a sentinel), a link not followed.
    pub fn exists(&self, name: &str) -> bool {
        let Ok(Some(dir)) = self.open(false) else { return false };
        matches!(dir.symlink_metadata(name), Ok(Some(_)))
    }

    /// The names in the directory that start with `prefix`.
    pub fn names_with_prefix(&self, prefix: &str) -> Vec<String> {
        let Ok(Some(dir)) = self.open(false) else { return Vec::new() };
        let names = dir.list().unwrap_or_default();
        names.into_iter().filter_map(|n| n.into_string().ok()).filter(|n| n.starts_with(prefix)).collect()
    }
}

/// agmsg's file-name encoding of a team or agent name: every byte outside `[A-Za-z0-9._-]` as `%XX`
/// (upper-case hex), so that distinct names never share an encoding. The pair `<team>__<agent>` is
/// agmsg's and can still collide (`a__b`/`c` and `a`/`b__c`, both `a__b__c`): kept for its files.
pub fn encode(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    for b in name.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// `<kind>.<team>__<agent>`, encoded.
fn pair_name(kind: &str, team: &str, agent: &str) -> String {
    format!("{kind}.{}__{}", encode(team), encode(agent))
}

/// The placement record's file name: `spawn.<team>__<agent>`.
pub fn record_name(team: &str, agent: &str) -> String {
    pair_name("spawn", team, agent)
}

/// The readiness sentinel's file name: `ready.<team>__<agent>` (agmsg's watcher creates it when it
/// attaches for the role and removes it when it exits).
pub fn ready_name(team: &str, agent: &str) -> String {
    pair_name("ready", team, agent)
}

/// The actas lock's file name: `actas.<team>__<agent>.session`.
pub fn lock_name(team: &str, agent: &str) -> String {
    format!("{}.session", pair_name("actas", team, agent))
}

/// The placement record: one TAB-separated line `<reference>\t<project>\t<type>` (spec's terminal
/// registry: the reference is `<terminal>:<id>`; a legacy bare tmux `%N` / `@N` is read as tmux's).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PlacementRecord {
    pub reference: String,
    pub project: String,
    pub agent_type: String,
}

impl PlacementRecord {
    /// The record's bytes; a field holding a TAB or a line break would change what agmsg reads
    /// back, so it is refused.
    pub fn line(&self) -> Result<String, HostError> {
        for (what, value) in [("reference", &self.reference), ("project", &self.project), ("type", &self.agent_type)] {
            if value.is_empty() || value.contains(['\t', '\n', '\r', '\0']) {
                return Err(HostError::refused(format!(
                    "the placement record's {what} {value:?} is empty or holds a TAB, line break or NUL"
                )));
            }
        }
        Ok(format!("{}\t{}\t{}\n", self.reference, self.project, self.agent_type))
    }

    /// As agmsg reads it (`read -r id project type` on the first line: the type takes the rest).
    pub fn parse(text: &str) -> Result<PlacementRecord, HostError> {
        let line = text.lines().next().unwrap_or("");
        let mut fields = line.splitn(3, '\t');
        let reference = fields.next().unwrap_or("").to_owned();
        if reference.is_empty() {
            return Err(HostError::refused("the placement record names no pane"));
        }
        let project = fields.next().unwrap_or("").to_owned();
        let agent_type = fields.next().unwrap_or("").to_owned();
        Ok(PlacementRecord { reference, project, agent_type })
    }
}

/// Write the placement record of `team`/`agent`; its path. The shared record holds the id in the
/// form agmsg 1.2.1 acts on ([`agmsg_id`]); when that drops part of the reference (the tmux socket),
/// the whole reference goes to agmsg-host's own file beside it ([`reference_name`]), written first.
/// A record that cannot be written is refused ([`crate::error::ExitClass::Refused`]).
pub fn write_record(run: &RunDir, team: &str, agent: &str, record: &PlacementRecord) -> Result<PathBuf, HostError> {
    let name = record_name(team, agent);
    let path = run.path().join(&name);
    record.line()?;
    let shared = PlacementRecord { reference: agmsg_id(&record.reference).to_owned(), ..record.clone() };
    let own = reference_name(team, agent);
    let kept =
        if shared.reference == record.reference { run.remove(&own).map(drop) } else { run.write(&own, &format!("{}\n", record.reference)) };
    kept.map_err(|e| HostError::refused(format!("cannot write {}: {e}", run.path().join(&own).display())))?;
    run.write(&name, &shared.line()?)
        .map_err(|e| HostError::refused(format!("cannot write the placement record {}: {e}", path.display())))?;
    Ok(path)
}

/// Remove the placement record of `team`/`agent` and agmsg-host's reference beside it.
pub fn remove_record(run: &RunDir, team: &str, agent: &str) -> io::Result<()> {
    let own = run.remove(&reference_name(team, agent));
    run.remove(&record_name(team, agent))?;
    own.map(drop)
}

/// The placement record of `team`/`agent`, if there is one; one that cannot be read is refused
/// (despawn refuses to guess which pane to close). Where agmsg-host's own reference beside it
/// ([`reference_name`]) still names the pane the shared record names, the record carries that
/// reference (its tmux server); otherwise the shared record's id is taken as it is (agmsg wrote it,
/// or replaced the record since). With no shared record (agmsg's despawn.sh removed it), agmsg-host's
/// file left beside it is removed.
pub fn read_record(run: &RunDir, team: &str, agent: &str) -> Result<Option<PlacementRecord>, HostError> {
    let name = record_name(team, agent);
    let text = run.read(&name).map_err(|e| HostError::refused(format!("cannot read the placement record: {e}")))?;
    let Some(mut record) = text.map(|t| PlacementRecord::parse(&t).map_err(|e| e.context(run.path().join(&name).display()))).transpose()?
    else {
        // agmsg's despawn.sh removed the shared record: agmsg-host's beside it names a closed pane.
        let _ = run.remove(&reference_name(team, agent));
        return Ok(None);
    };
    // Unreadable or stale, agmsg-host's reference is only not used: the shared record still is.
    if let Ok(Some(own)) = run.read(&reference_name(team, agent)) {
        let own = own.lines().next().unwrap_or("");
        if !own.is_empty() && agmsg_id(own) == record.reference && own != record.reference {
            record.reference = own.to_owned();
        }
    }
    Ok(Some(record))
}

/// agmsg-host's own file beside the shared record: `agmsg-host.spawn.<team>__<agent>`, holding the
/// full placement reference when the shared record holds agmsg's shorter form of it (agmsg 1.2.1
/// reads no file of this name).
pub fn reference_name(team: &str, agent: &str) -> String {
    pair_name("agmsg-host.spawn", team, agent)
}

/// The id agmsg 1.2.1's despawn.sh acts on for a placement reference: a tmux pane or window as the
/// bare `%N` / `@N` (agmsg kills it on the caller's tmux server), every other reference as it is
/// (agmsg's `herdr:<id>` is already agmsg-host's herdr reference).
pub fn agmsg_id(reference: &str) -> &str {
    let Some(id) = reference.strip_prefix("tmux:") else { return reference };
    let bare = id.rsplit_once(':').map_or(id, |(_, tail)| tail);
    let digits = bare.get(1..).unwrap_or("");
    if matches!(bare.as_bytes().first(), Some(b'%' | b'@')) && !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) {
        bare
    } else {
        reference
    }
}

/// How a readiness wait ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Readiness {
    /// The sentinel appeared after this long.
    Ready(Duration),
    /// It did not appear within the timeout.
    TimedOut(Duration),
}

/// How often the sentinel is looked for.
const READY_POLL: Duration = Duration::from_millis(100);

/// Remove a stale readiness sentinel before a launch, so only this launch's watcher is seen.
pub fn clear_ready(run: &RunDir, team: &str, agent: &str) -> io::Result<()> {
    run.remove(&ready_name(team, agent)).map(drop)
}

/// Wait, at most `timeout`, for the readiness sentinel of `team`/`agent` to appear.
pub fn wait_ready(run: &RunDir, team: &str, agent: &str, timeout: Duration) -> Readiness {
    let name = ready_name(team, agent);
    let started = Instant::now();
    loop {
        if run.exists(&name) {
            return Readiness::Ready(started.elapsed());
        }
        let waited = started.elapsed();
        if waited >= timeout {
            return Readiness::TimedOut(waited);
        }
        std::thread::sleep(READY_POLL.min(timeout - waited));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_encoded_as_agmsg_encodes_them() {
        assert_eq!(record_name("crew", "bob"), "spawn.crew__bob");
        assert_eq!(record_name("my team", "a/b"), "spawn.my%20team__a%2Fb");
        assert_eq!(ready_name("t", "é"), "ready.t__%C3%A9");
        assert_eq!(lock_name("t-1.x", "a_b"), "actas.t-1.x__a_b.session");
        // Distinct names never share an encoding (agmsg's `__` pair join can: see `encode`).
        assert_ne!(encode("foo bar"), encode("foo_bar"));
        // agmsg's pair join keeps `_`, so these two pairs share one file, as in agmsg (its names, pinned).
        assert_eq!(record_name("a__b", "c"), record_name("a", "b__c"));
    }

    #[test]
    fn the_record_round_trips_and_refuses_what_would_read_back_differently() {
        let r = PlacementRecord { reference: "tmux:/tmp/s:%3".into(), project: "/p q".into(), agent_type: "codex".into() };
        assert_eq!(r.line().unwrap(), "tmux:/tmp/s:%3\t/p q\tcodex\n");
        assert_eq!(PlacementRecord::parse(&r.line().unwrap()).unwrap(), r);
        assert!(PlacementRecord { project: "/a\tb".into(), ..r.clone() }.line().is_err());
        assert!(PlacementRecord { project: "/a\nb".into(), ..r.clone() }.line().is_err());
        assert_eq!(
            PlacementRecord::parse("%5\n").unwrap(),
            PlacementRecord { reference: "%5".into(), project: String::new(), agent_type: String::new() }
        );
        assert_eq!(PlacementRecord::parse("\t/p\tx\n").map_err(|e| e.class), Err(crate::error::ExitClass::Refused));
    }

    /// Issue 35 §3: the shared record holds the id agmsg 1.2.1's despawn.sh acts on; the whole
    /// reference is agmsg-host's own, and used only while it names the shared record's pane.
    #[test]
    fn the_shared_record_holds_agmsgs_form_and_the_reference_is_kept_beside_it() {
        assert_eq!(agmsg_id("tmux:/tmp/s:%3"), "%3");
        assert_eq!(agmsg_id("tmux:/tmp/a:b/s:@12"), "@12");
        assert_eq!(agmsg_id("tmux:%3"), "%3");
        for as_is in ["herdr:w1:p2", "plain:-", "tmux:/tmp/s:%", "tmux:/tmp/s:%3x", "%3"] {
            assert_eq!(agmsg_id(as_is), as_is);
        }
        let skill = tempfile::tempdir().unwrap();
        let run = RunDir::new(skill.path());
        let r = PlacementRecord { reference: "tmux:/tmp/s:%3".into(), project: "/p".into(), agent_type: "codex".into() };
        write_record(&run, "t", "a", &r).unwrap();
        assert_eq!(run.read("spawn.t__a").unwrap().as_deref(), Some("%3\t/p\tcodex\n"));
        assert_eq!(run.read("agmsg-host.spawn.t__a").unwrap().as_deref(), Some("tmux:/tmp/s:%3\n"));
        assert_eq!(read_record(&run, "t", "a").unwrap(), Some(r.clone()));
        // agmsg's spawn.sh replaced the record since: its pane, on the caller's server.
        run.write("spawn.t__a", "%7\t/p\tcodex\n").unwrap();
        assert_eq!(read_record(&run, "t", "a").unwrap().unwrap().reference, "%7");
        // A reference agmsg reads as it is needs nothing beside it.
        let h = PlacementRecord { reference: "herdr:w1:p2".into(), ..r.clone() };
        write_record(&run, "t", "a", &h).unwrap();
        assert_eq!(run.read("agmsg-host.spawn.t__a").unwrap(), None);
        assert_eq!(read_record(&run, "t", "a").unwrap(), Some(h));
        remove_record(&run, "t", "a").unwrap();
        assert_eq!(read_record(&run, "t", "a").unwrap(), None);
        // agmsg's despawn.sh removes only the shared record: agmsg-host's goes at the next look.
        write_record(&run, "t", "a", &r).unwrap();
        run.remove("spawn.t__a").unwrap();
        assert_eq!(read_record(&run, "t", "a").unwrap(), None);
        assert!(!run.exists("agmsg-host.spawn.t__a"));
    }

    #[test]
    fn the_run_directory_follows_no_link() {
        let skill = tempfile::tempdir().unwrap();
        let run = RunDir::new(skill.path());
        assert_eq!(run.read("x").unwrap(), None, "no directory yet");
        run.write("x", "one\n").unwrap();
        assert_eq!(run.read("x").unwrap().as_deref(), Some("one\n"));
        let outside = skill.path().join("outside");
        std::fs::write(&outside, "secret").unwrap();
        std::os::unix::fs::symlink(&outside, run.path().join("link")).unwrap();
        assert!(run.read("link").is_err(), "a link is not read through");
        run.write("link", "new\n").unwrap();
        assert_eq!(std::fs::read_to_string(&outside).unwrap(), "secret", "a link is replaced, not written through");
        assert!(run.remove("link").unwrap());
        assert!(!run.remove("link").unwrap());
        // `run` itself a link to somewhere else: neither read nor written.
        let other = tempfile::tempdir().unwrap();
        std::fs::write(other.path().join("x"), "theirs\n").unwrap();
        let linked = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(other.path(), linked.path().join("run")).unwrap();
        let run = RunDir::new(linked.path());
        assert!(run.read("x").is_err());
        assert!(run.write("y", "no\n").is_err());
        assert!(!other.path().join("y").exists());
    }
}
