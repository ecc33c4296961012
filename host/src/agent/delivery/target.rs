//! The one place delivery touches the project: `<project>/<hooks_file>`.
//!
//! `hooks_file` must be relative, made of plain components, and hold no `..` (agmsg's
//! `resolve_hooks_file` rule). Below the project every directory is opened with `O_NOFOLLOW`, one
//! component at a time (the missing ones created only when a text is written, as agmsg's `mkdir -p`
//! before it writes: a refused answer, a status or a removal leaves no directory behind); a symlink
//! anywhere below the project, the file included, is an error, never followed. The file is read only if it is a regular
//! file of at most [`MAX_BYTES`]; an answer is applied through an anonymous file in its directory,
//! renamed over it (keeping its permissions), or by unlinking it.

use std::fs::File;
use std::io::{Read, Write};
use std::os::fd::AsFd;
use std::path::{Component, Path, PathBuf};

use rustix::fs::{AtFlags, Mode as FileMode, OFlags};
use rustix::io::Errno;

use super::Answer;

/// The largest delivery file read or written.
pub const MAX_BYTES: usize = 4 << 20;

/// A validated target: the project, the relative file, and (once opened) its directory.
#[derive(Debug)]
pub struct Target {
    pub project: PathBuf,
    pub hooks_file: String,
    /// The file's directory, opened below the project without following symlinks; `None` when it
    /// does not exist (yet).
    dir: Option<File>,
    /// When it does not: the deepest directory that exists, and the components below it to create
    /// before a write.
    missing: Option<(File, Vec<String>)>,
    name: String,
}

/// The project directory as agmsg accepts it: an existing directory, not blank, no line break (agmsg
/// refuses CR and LF, #493; any other character, a tab included, is part of the path and reaches
/// commands quoted). Made absolute (not resolved) so commands name it as the user does.
pub fn project_dir(project: &Path) -> Result<PathBuf, String> {
    let text = project.to_str().ok_or_else(|| format!("project path {} is not UTF-8", project.display()))?;
    if text.trim().is_empty() {
        return Err("the project path is empty".to_owned());
    }
    if text.contains(['\r', '\n']) {
        return Err(format!("project path {} holds a line break (CR or LF)", crate::display::line(text)));
    }
    let abs = std::path::absolute(project).map_err(|e| format!("project {}: {e}", project.display()))?;
    if !abs.is_dir() {
        return Err(format!("project {} is not a directory", abs.display()));
    }
    Ok(abs)
}

/// `hooks_file`'s rule: relative, plain components, no `..` anywhere (agmsg's `*..*`).
pub fn check_hooks_file(agent_type: &str, hooks_file: &str) -> Result<(), String> {
    let bad = hooks_file.is_empty()
        || hooks_file.contains("..")
        || hooks_file.starts_with('/')
        || hooks_file.ends_with('/')
        || hooks_file.chars().any(char::is_control)
        || !Path::new(hooks_file).components().all(|c| matches!(c, Component::Normal(_)));
    if bad {
        return Err(format!("Invalid hooks_file for {agent_type}: {}", crate::display::line(hooks_file)));
    }
    Ok(())
}

/// How every directory below the project is opened: never through a symlink.
const DIR_FLAGS: OFlags = OFlags::RDONLY.union(OFlags::DIRECTORY).union(OFlags::NOFOLLOW).union(OFlags::CLOEXEC);

fn errno(what: &str, e: Errno) -> String {
    match e {
        Errno::LOOP | Errno::NOTDIR => format!("{what} is a symlink or not a directory; refusing to follow it"),
        e => format!("{what}: {}", std::io::Error::from(e)),
    }
}

impl Target {
    /// Open `<project>/<hooks_file>`'s directory as far as it exists, never following a symlink below
    /// the project; what is missing is made by a write ([`Target::apply`]).
    pub fn open(project: &Path, agent_type: &str, hooks_file: &str) -> Result<Target, String> {
        check_hooks_file(agent_type, hooks_file)?;
        // Only a runtime's delivery location, never another type's file: also for a type read
        // before that rule (trusted earlier, or agmsg's own installed one).
        crate::agent::manifest::check_hooks_file(agent_type, hooks_file).map_err(|e| format!("Invalid hooks_file for {}: {e}", crate::display::line(agent_type)))?;
        let project = project_dir(project)?;
        let parts: Vec<&str> = hooks_file.split('/').filter(|p| !p.is_empty() && *p != ".").collect();
        let (name, dirs) = parts.split_last().ok_or_else(|| format!("Invalid hooks_file for {agent_type}: {hooks_file}"))?;
        let mut dir = File::from(
            rustix::fs::open(&project, OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC, FileMode::empty()).map_err(|e| errno(&project.display().to_string(), e))?,
        );
        let mut so_far = project.clone();
        for (i, part) in dirs.iter().enumerate() {
            so_far.push(part);
            let next = match rustix::fs::openat(dir.as_fd(), *part, DIR_FLAGS, FileMode::empty()) {
                Err(Errno::NOENT) => {
                    let missing = Some((dir, dirs[i..].iter().map(|p| p.to_string()).collect()));
                    return Ok(Target { project, hooks_file: hooks_file.to_owned(), dir: None, missing, name: (*name).to_owned() });
                }
                other => other,
            };
            dir = File::from(next.map_err(|e| errno(&so_far.display().to_string(), e))?);
        }
        Ok(Target { project, hooks_file: hooks_file.to_owned(), dir: Some(dir), missing: None, name: (*name).to_owned() })
    }

    /// The file's directory, the missing components created below the deepest existing one (a
    /// component made meanwhile by someone else is opened, never followed if it is a link).
    fn made_dir(&self) -> Result<File, String> {
        if let Some(dir) = &self.dir {
            return dir.try_clone().map_err(|e| format!("{}: {e}", self.path().display()));
        }
        let (base, parts) = self.missing.as_ref().ok_or_else(|| format!("{}: its directory does not exist", self.path().display()))?;
        let mut dir = base.try_clone().map_err(|e| format!("{}: {e}", self.path().display()))?;
        let mut so_far = self.path();
        so_far.pop();
        for part in parts {
            match rustix::fs::mkdirat(dir.as_fd(), part.as_str(), FileMode::from_raw_mode(0o777)) {
                Ok(()) | Err(Errno::EXIST) => {}
                Err(e) => return Err(errno(&so_far.display().to_string(), e)),
            }
            let next = rustix::fs::openat(dir.as_fd(), part.as_str(), DIR_FLAGS, FileMode::empty()).map_err(|e| errno(&so_far.display().to_string(), e))?;
            dir = File::from(next);
        }
        Ok(dir)
    }

    /// The file's full path, for messages.
    pub fn path(&self) -> PathBuf {
        self.project.join(&self.hooks_file)
    }

    /// The file's text: `None` when absent; an error when it is a symlink, not a regular file, larger
    /// than [`MAX_BYTES`] or not UTF-8.
    pub fn read(&self) -> Result<Option<String>, String> {
        let Some(dir) = &self.dir else { return Ok(None) };
        let what = self.path().display().to_string();
        let fd = match rustix::fs::openat(dir.as_fd(), self.name.as_str(), OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC, FileMode::empty()) {
            Err(Errno::NOENT) => return Ok(None),
            Err(Errno::LOOP) => return Err(format!("{what} is a symlink; refusing to follow it")),
            other => other.map_err(|e| errno(&what, e))?,
        };
        let mut file = File::from(fd);
        let meta = file.metadata().map_err(|e| format!("{what}: {e}"))?;
        if !meta.is_file() {
            return Err(format!("{what} is not a regular file"));
        }
        let mut bytes = Vec::new();
        Read::by_ref(&mut file).take(MAX_BYTES as u64 + 1).read_to_end(&mut bytes).map_err(|e| format!("{what}: {e}"))?;
        if bytes.len() > MAX_BYTES {
            return Err(format!("{what} is larger than {} MiB", MAX_BYTES >> 20));
        }
        String::from_utf8(bytes).map(Some).map_err(|_| format!("{what} is not UTF-8 text"))
    }

    /// Apply `answer`: the text replaces the file atomically (its permissions kept), or the file is
    /// removed. Returns whether the file changed.
    pub fn apply(&self, answer: &Answer) -> Result<bool, String> {
        let what = self.path().display().to_string();
        match answer {
            Answer::Keep => Ok(false),
            Answer::Remove => {
                let Some(dir) = &self.dir else { return Ok(false) };
                match rustix::fs::unlinkat(dir.as_fd(), self.name.as_str(), AtFlags::empty()) {
                    Ok(()) => Ok(true),
                    Err(Errno::NOENT) => Ok(false),
                    Err(e) => Err(errno(&what, e)),
                }
            }
            Answer::Write(text) => {
                if text.len() > MAX_BYTES {
                    return Err(format!("refusing to write {what}: the new text is larger than {} MiB", MAX_BYTES >> 20));
                }
                let dir = self.made_dir()?;
                let mode = rustix::fs::statat(dir.as_fd(), self.name.as_str(), AtFlags::SYMLINK_NOFOLLOW).ok().filter(|st| (st.st_mode & 0o170000) == 0o100000).map(|st| st.st_mode & 0o7777);
                crate::storage::atomic_file::write_atomically_at(&dir, std::ffi::OsStr::new(&self.name), |e| format!("{what}: {e}"), |writer| {
                    if let Some(mode) = mode {
                        rustix::fs::fchmod(writer.get_ref(), FileMode::from_raw_mode(mode)).map_err(|e| format!("{what}: {}", std::io::Error::from(e)))?;
                    }
                    writer.write_all(text.as_bytes()).map_err(|e| format!("{what}: {e}"))
                })?;
                Ok(true)
            }
        }
    }
}
