//! The one place delivery touches the project: `<project>/<hooks_file>`.
//!
//! `hooks_file` must be relative, made of plain components, and hold no `..` (agmsg's
//! `resolve_hooks_file` rule). The project is an [`fsroot::Dir`] (the host's one directory
//! capability): below it every directory is opened without following a link, one component at a time
//! (the missing ones created only when a text is written, as agmsg's `mkdir -p` before it writes: a
//! refused answer, a status or a removal leaves no directory behind); a symlink anywhere below the
//! project, the file included, is an error, never followed. The file is read only if it is a regular
//! file of at most [`MAX_BYTES`] (opened without blocking, so a FIFO is refused at once); an answer is
//! applied through an anonymous file in its directory, renamed over it (keeping its permissions), or
//! by unlinking it.

use std::fs::Permissions;
use std::io::{Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::{Component, Path, PathBuf};

use crate::error::HostError;
use crate::fsroot::{self, Why};

use super::FileAnswer;

/// The largest delivery file read or written.
pub const MAX_BYTES: usize = 4 << 20;

/// A validated target: the project, the relative file, and (once opened) its directory.
#[derive(Debug)]
pub struct Target {
    pub project: PathBuf,
    pub hooks_file: String,
    /// The project, held open: every access below it goes through this.
    root: fsroot::Dir,
    /// The file's directory, opened below the project without following symlinks; `None` when it
    /// does not exist (yet).
    dir: Option<fsroot::Dir>,
    /// The file's directory relative to the project, made by a write when it is missing.
    dirs: PathBuf,
    name: String,
}

/// The project directory as agmsg accepts it: an existing directory, not blank, no line break (agmsg
/// refuses CR and LF, #493; any other character, a tab included, is part of the path and reaches
/// commands quoted). Made absolute (not resolved) so commands name it as the user does.
pub fn project_dir(project: &Path) -> Result<PathBuf, HostError> {
    let text = project.to_str().ok_or_else(|| HostError::refused(format!("project path {} is not UTF-8", project.display())))?;
    if text.trim().is_empty() {
        return Err(HostError::refused("the project path is empty"));
    }
    if text.contains(['\r', '\n']) {
        return Err(HostError::refused(format!("project path {} holds a line break (CR or LF)", crate::display::line(text))));
    }
    let abs = std::path::absolute(project).map_err(|e| HostError::refused(format!("project {}: {e}", project.display())))?;
    if !abs.is_dir() {
        return Err(HostError::refused(format!("project {} is not a directory", abs.display())));
    }
    Ok(abs)
}

/// `hooks_file`'s rule: relative, plain components, no `..` anywhere (agmsg's `*..*`).
pub fn check_hooks_file(agent_type: &str, hooks_file: &str) -> Result<(), HostError> {
    let bad = hooks_file.is_empty()
        || hooks_file.contains("..")
        || hooks_file.starts_with('/')
        || hooks_file.ends_with('/')
        || hooks_file.chars().any(char::is_control)
        || !Path::new(hooks_file).components().all(|c| matches!(c, Component::Normal(_)));
    if bad {
        return Err(HostError::refused(format!("Invalid hooks_file for {agent_type}: {}", crate::display::line(hooks_file))));
    }
    Ok(())
}

/// A directory below the project that could not be opened, in delivery's words.
fn dir_error(e: fsroot::Error) -> String {
    match e.why {
        Why::Link | Why::NotDir => format!("{} is a symlink or not a directory; refusing to follow it", e.path.display()),
        Why::Io(inner) => format!("{}: {inner}", e.path.display()),
        _ => e.to_string(),
    }
}

impl Target {
    /// Open `<project>/<hooks_file>`'s directory as far as it exists, never following a symlink below
    /// the project; what is missing is made by a write ([`Target::apply`]).
    pub fn open(project: &Path, agent_type: &str, hooks_file: &str) -> Result<Target, HostError> {
        check_hooks_file(agent_type, hooks_file)?;
        // Only a runtime's delivery location, never another type's file: also for a type read
        // before that rule (trusted earlier, or agmsg's own installed one).
        crate::agent::manifest::check_hooks_file(agent_type, hooks_file)
            .map_err(|e| HostError::refused(format!("Invalid hooks_file for {}: {e}", crate::display::line(agent_type))))?;
        let project = project_dir(project)?;
        let parts: Vec<&str> = hooks_file.split('/').filter(|p| !p.is_empty() && *p != ".").collect();
        let (name, dirs) =
            parts.split_last().ok_or_else(|| HostError::refused(format!("Invalid hooks_file for {agent_type}: {hooks_file}")))?;
        let root = fsroot::Dir::open_ambient(&project).map_err(|e| HostError::refused(dir_error(e)))?;
        let dirs: PathBuf = dirs.iter().collect();
        let dir = match root.open_dir(&dirs) {
            Ok(dir) => Some(dir),
            Err(fsroot::Error { why: Why::Missing, .. }) => None,
            Err(e) => return Err(HostError::refused(dir_error(e))),
        };
        Ok(Target { project, hooks_file: hooks_file.to_owned(), root, dir, dirs, name: (*name).to_owned() })
    }

    /// The file's directory, the missing components created (a component made meanwhile by someone
    /// else is opened, never followed if it is a link).
    fn made_dir(&self) -> Result<fsroot::Dir, HostError> {
        match &self.dir {
            Some(dir) => Ok(dir.clone()),
            None => self.root.create_dir_all(&self.dirs, 0o777).map_err(|e| HostError::refused(dir_error(e))),
        }
    }

    /// The file's full path, for messages.
    pub fn path(&self) -> PathBuf {
        self.project.join(&self.hooks_file)
    }

    /// The file's text: `None` when absent; an error when it is a symlink, not a regular file, larger
    /// than [`MAX_BYTES`] or not UTF-8.
    pub fn read(&self) -> Result<Option<String>, HostError> {
        let Some(dir) = &self.dir else { return Ok(None) };
        let what = self.path().display().to_string();
        let mut file = match dir.open_regular(&self.name) {
            Ok(file) => file,
            Err(e) => {
                return match e.why {
                    Why::Missing => Ok(None),
                    Why::Link => Err(HostError::refused(format!("{what} is a symlink; refusing to follow it"))),
                    Why::NotRegular => Err(HostError::refused(format!("{what} is not a regular file"))),
                    Why::Io(inner) => Err(HostError::refused(format!("{what}: {inner}"))),
                    _ => Err(HostError::refused(e.to_string())),
                };
            }
        };
        let mut bytes = Vec::new();
        Read::by_ref(&mut file)
            .take(MAX_BYTES as u64 + 1)
            .read_to_end(&mut bytes)
            .map_err(|e| HostError::refused(format!("{what}: {e}")))?;
        if bytes.len() > MAX_BYTES {
            return Err(HostError::refused(format!("{what} is larger than {} MiB", MAX_BYTES >> 20)));
        }
        String::from_utf8(bytes).map(Some).map_err(|_| HostError::refused(format!("{what} is not UTF-8 text")))
    }

    /// Apply `answer`: the text replaces the file atomically (its permissions kept), or the file is
    /// removed. Returns whether the file changed.
    pub fn apply(&self, answer: &FileAnswer) -> Result<bool, HostError> {
        let what = self.path().display().to_string();
        match answer {
            FileAnswer::Keep => Ok(false),
            FileAnswer::Remove => {
                let Some(dir) = &self.dir else { return Ok(false) };
                dir.remove_file(&self.name).map_err(|e| match e.why {
                    Why::Io(inner) => HostError::refused(format!("{what}: {inner}")),
                    _ => HostError::refused(e.to_string()),
                })
            }
            FileAnswer::Write(text) => {
                if text.len() > MAX_BYTES {
                    return Err(HostError::refused(format!(
                        "refusing to write {what}: the new text is larger than {} MiB",
                        MAX_BYTES >> 20
                    )));
                }
                let dir = self.made_dir()?;
                let mode = dir.file_mode(&self.name);
                dir.write_atomically(
                    &self.name,
                    |e| HostError::refused(format!("{what}: {e}")),
                    |writer| {
                        if let Some(mode) = mode {
                            writer
                                .get_ref()
                                .set_permissions(Permissions::from_mode(mode))
                                .map_err(|e| HostError::refused(format!("{what}: {e}")))?;
                        }
                        writer.write_all(text.as_bytes()).map_err(|e| HostError::refused(format!("{what}: {e}")))
                    },
                )?;
                Ok(true)
            }
        }
    }
}
