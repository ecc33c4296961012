//! `agmsg-host shim install | uninstall <agmsg dir>`: every shim put into (or taken out of) an agmsg
//! install in one command. The workflow is here; it answers a [`Report`] the binary prints.
//!
//! Install writes, below `<dir>/scripts/drivers/` (where agmsg's loaders look), what each axis says
//! ([`crate::axis_module::AxisModule::shim_files`]):
//! - `storage/<name>.sh` for every storage driver agmsg-host runs by name: its bundled ones (sqlite,
//!   jsonl, postgres) and every trusted storage plugin (agmsg's `agmsg_storage_load` sources the first
//!   `storage/<name>.sh` it finds, builtins first). Each forwards by name, so each call checks the
//!   plugin's trust and hashes as `agmsg-host --driver <name>` does: a plugin untrusted or changed
//!   since fails in agmsg with agmsg-host's refusal;
//! - `types/<type>/_delivery.sh` of every bundled type agmsg has a directory for (a type agmsg-host cannot
//!   answer for is skipped, saying why);
//! - `terminals/<name>/terminal.conf` + `ops.sh` for every bundled terminal driver (spec §6.1).
//!
//! Each file it replaces is kept first in `<dir>/agmsg-host-shims/backup/<sha256>`, and
//! `<dir>/agmsg-host-shims/manifest.json` records, per file, the sha256 and mode of agmsg's original (or
//! that there was none) and the sha256 of what install wrote, plus the directories install created. The
//! record is written before any shim, so an install cut short never leaves a replaced file without its
//! backup. Uninstall puts each original back (bytes and mode) or removes the file where there was none,
//! but only where the file is still what install wrote: a file changed since (an agmsg update put its
//! own back) is left as it is. Then the directories install created, if empty, and the record go.
//!
//! Nothing below `<dir>` is followed through a symlink: `<dir>` is an `fsroot::Dir` (the host's one
//! directory capability), every directory below it is opened through it with no link followed, and a
//! link where a file or directory is expected refuses the whole command before anything changes. Files
//! are written atomically (`fsroot::Dir::write_atomically`). Running either twice
//! changes nothing the second time; one runs at a time per directory (a `flock` on it, a second is
//! refused). Every failure is refused (exit 1).

use std::collections::{BTreeMap, BTreeSet};
use std::fs::{File, Permissions};
use std::io::{Read, Write};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::axis_module::ShimFile;
use crate::error::HostError;
use crate::fsroot::{self, Why};
use crate::plugin::sha256_hex;

/// Where install keeps its record and agmsg's originals, in agmsg's directory (outside `scripts/`, which
/// agmsg's own updates replace).
const STATE_DIR: &str = "agmsg-host-shims";
const RECORD: &str = "manifest.json";
const BACKUP_DIR: &str = "backup";
/// agmsg's driver files are scripts of some kilobytes; anything far larger is not one.
const MAX_FILE: u64 = 16 << 20;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    Install,
    Uninstall,
}

/// What install did, kept for uninstall.
#[derive(Debug, Default, Serialize, Deserialize)]
struct Record {
    version: u32,
    /// Per file install wrote, its path relative to agmsg's directory.
    files: BTreeMap<String, RecordedFile>,
    /// Directories install created (relative), removed by uninstall when empty.
    created_dirs: BTreeSet<String>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
struct RecordedFile {
    /// sha256 of the shim install wrote.
    installed: String,
    /// agmsg's file it replaced (kept as `backup/<sha256>`), or none.
    original: Option<Original>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
struct Original {
    sha256: String,
    mode: u32,
}

/// One line of the report: what happened (or would) to a path.
#[derive(Debug, Serialize)]
pub struct Item {
    /// Relative to agmsg's directory (a directory's ends with `/`).
    pub path: String,
    /// What happened to it (or would, in a dry run): `add`, `replace`, `update`, `unchanged`, `skip`,
    /// `create`, `restore`, `remove`, `leave`, `keep`, `nothing`.
    pub action: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
}

impl Item {
    fn new(path: &str, action: &'static str, detail: Option<String>) -> Item {
        Item { path: path.to_owned(), action, detail, warnings: Vec::new() }
    }
}

/// What `shim install | uninstall` did (or, in a dry run, would do): one item per path, in order, up to
/// a failure, if any; `result` is refused (each failure says so where it is found: not an agmsg
/// directory, a link or a damaged record or backup, a file not written).
#[derive(Debug)]
pub struct Report {
    pub items: Vec<Item>,
    pub result: Result<(), HostError>,
}

impl Action {
    /// The command's word: `install`, `uninstall`.
    pub fn verb(self) -> &'static str {
        match self {
            Action::Install => "install",
            Action::Uninstall => "uninstall",
        }
    }
}

/// The host module of each axis (the composer's, `crate::compose::module`), which says the axis's shims:
/// shim/ sits below the axes and names none of them.
pub type Modules = fn(crate::axis::Axis) -> &'static dyn crate::axis_module::AxisModule;

/// Install or uninstall every shim in agmsg's directory `dir` (`dry_run`: plan only, change nothing),
/// each axis's as its module says.
pub fn run(action: Action, dir: &Path, dry_run: bool, modules: Modules) -> Report {
    let mut items = Vec::new();
    let result = Root::open(dir).and_then(|root| match action {
        Action::Install => install(&root, modules, dry_run, &mut items),
        Action::Uninstall => uninstall(&root, dry_run, &mut items),
    });
    Report { items, result }
}

/// agmsg's install directory, opened; everything below it is reached without following a link.
struct Root {
    dir: fsroot::Dir,
    /// A description of its own of `dir`, `flock`ed for the whole command.
    lock: File,
    /// Its absolute path: agmsg's directory, as agmsg-host reads agmsg's types from it.
    path: std::path::PathBuf,
}

/// What is at a path: nothing, or a regular file's bytes and mode.
type Found = Option<(Vec<u8>, u32)>;

fn split(rel: &str) -> (&str, &str) {
    rel.rsplit_once('/').unwrap_or(("", rel))
}

impl Root {
    fn open(dir: &Path) -> Result<Root, HostError> {
        // The directory the user named is theirs to name (it may be a link); only what is below it is
        // never followed.
        let opened = fsroot::Dir::open_ambient(dir).map_err(|e| match e.why {
            Why::Io(inner) => HostError::refused(format!("cannot open {}: {inner}", dir.display())),
            _ => HostError::refused(format!("cannot open {}: {e}", dir.display())),
        })?;
        let lock = opened.reopen().map_err(|e| HostError::refused(format!("cannot open {}: {e}", dir.display())))?;
        let path = std::path::absolute(dir).map_err(|e| HostError::refused(format!("cannot resolve {}: {e}", dir.display())))?;
        let root = Root { dir: opened, lock, path };
        let layout = root.dir_at("scripts/drivers", None)?.is_some() && root.read("scripts/lib/storage.sh")?.is_some();
        if !layout {
            return Err(HostError::refused(format!(
                "{} is not an agmsg install directory (no scripts/drivers/ and scripts/lib/storage.sh): name the directory holding agmsg's scripts/, e.g. ~/.agents/skills/agmsg",
                dir.display()
            )));
        }
        // One install or uninstall at a time per directory (the kernel drops the lock with the
        // process): two at once could each record what the other is replacing.
        match rustix::fs::flock(&root.lock, rustix::fs::FlockOperation::NonBlockingLockExclusive) {
            Ok(()) => {}
            Err(rustix::io::Errno::WOULDBLOCK) => {
                return Err(HostError::refused(format!(
                    "another agmsg-host shim install or uninstall is running on {}: try again once it has finished",
                    dir.display()
                )));
            }
            Err(e) => return Err(HostError::refused(format!("cannot lock {}: {e}", dir.display()))),
        }
        Ok(root)
    }

    /// The directory `rel` (`""`: the root), no link followed at any component; `None` if a
    /// component does not exist. With `create`, missing components are made (0755) and each recorded.
    fn dir_at(&self, rel: &str, mut create: Option<&mut BTreeSet<String>>) -> Result<Option<fsroot::Dir>, HostError> {
        let mut dir = self.dir.clone();
        let mut walked = String::new();
        for part in rel.split('/').filter(|p| !p.is_empty()) {
            if !walked.is_empty() {
                walked.push('/');
            }
            walked.push_str(part);
            dir = match dir.open_dir(part) {
                Err(fsroot::Error { why: Why::Missing, .. }) => match create.as_deref_mut() {
                    None => return Ok(None),
                    Some(created) => {
                        let made = dir.create_dir_all(part, 0o755).map_err(|e| match e.why {
                            Why::Io(inner) => HostError::refused(format!("cannot create {walked}: {inner}")),
                            why => refusal(&walked, why, "a directory"),
                        })?;
                        created.insert(walked.clone());
                        made
                    }
                },
                Err(e) => return Err(refusal(&walked, e.why, "a directory")),
                Ok(next) => next,
            };
        }
        Ok(Some(dir))
    }

    /// The regular file `rel`, or `None` if it (or its directory) does not exist; a link or anything
    /// but a regular file is refused.
    fn read(&self, rel: &str) -> Result<Found, HostError> {
        let (parent, name) = split(rel);
        let Some(dir) = self.dir_at(parent, None)? else { return Ok(None) };
        let file = match dir.open_regular(name) {
            Ok(file) => file,
            Err(fsroot::Error { why: Why::Missing, .. }) => return Ok(None),
            Err(fsroot::Error { why: Why::Io(e), .. }) => return Err(HostError::refused(format!("cannot read {rel}: {e}"))),
            Err(e) => return Err(refusal(rel, e.why, "a regular file")),
        };
        let mode = file.metadata().map_err(|e| HostError::refused(format!("cannot read {rel}: {e}")))?.mode() & 0o7777;
        let mut bytes = Vec::new();
        file.take(MAX_FILE + 1).read_to_end(&mut bytes).map_err(|e| HostError::refused(format!("cannot read {rel}: {e}")))?;
        if bytes.len() as u64 > MAX_FILE {
            return Err(HostError::refused(format!("{rel} is larger than {} MiB: not a driver file", MAX_FILE >> 20)));
        }
        Ok(Some((bytes, mode)))
    }

    /// Write `rel` atomically with `bytes` and `mode`; its directory must exist.
    fn write(&self, rel: &str, bytes: &[u8], mode: u32) -> Result<(), HostError> {
        let (parent, name) = split(rel);
        let dir = self.dir_at(parent, None)?.ok_or_else(|| HostError::refused(format!("cannot write {rel}: its directory is gone")))?;
        let failed = |e: std::io::Error| HostError::refused(format!("cannot write {rel}: {e}"));
        dir.write_atomically(name, failed, |w| {
            w.get_ref().set_permissions(Permissions::from_mode(mode)).map_err(failed)?;
            w.write_all(bytes).map_err(failed)
        })
    }

    /// Remove the file or empty directory `rel`; a `NotFound` error when it (or its directory) is not
    /// there.
    fn remove(&self, rel: &str, is_dir: bool) -> Result<(), std::io::Error> {
        let (parent, name) = split(rel);
        let Ok(Some(dir)) = self.dir_at(parent, None) else { return Err(std::io::ErrorKind::NotFound.into()) };
        let removed = if is_dir { dir.remove_dir(name) } else { dir.remove_file(name) };
        match removed {
            Ok(true) => Ok(()),
            Ok(false) => Err(std::io::ErrorKind::NotFound.into()),
            Err(fsroot::Error { why: Why::Io(e), .. }) => Err(e),
            Err(e) => Err(e.into()),
        }
    }

    fn record(&self) -> Result<Option<Record>, HostError> {
        let Some((bytes, _)) = self.read(&format!("{STATE_DIR}/{RECORD}"))? else { return Ok(None) };
        let bad = |why: String| HostError::refused(format!("{STATE_DIR}/{RECORD} cannot be used ({why}): fix or remove it by hand"));
        let record: Record = serde_json::from_slice(&bytes).map_err(|e| bad(e.to_string()))?;
        // Uninstall removes and rewrites what the record names: only paths install itself writes.
        let is_sha = |h: &str| h.len() == 64 && h.bytes().all(|b| b.is_ascii_hexdigit());
        for path in record.files.keys().chain(&record.created_dirs) {
            if !is_ours(path) {
                return Err(bad(format!("{path:?} is not a path install writes")));
            }
        }
        for entry in record.files.values() {
            if !is_sha(&entry.installed) || entry.original.as_ref().is_some_and(|o| !is_sha(&o.sha256)) {
                return Err(bad("a sha256 that is not one".into()));
            }
        }
        Ok(Some(record))
    }

    fn save_record(&self, record: &Record) -> Result<(), HostError> {
        let text = serde_json::to_string_pretty(record).map_err(|e| HostError::refused(e.to_string()))? + "\n";
        self.write(&format!("{STATE_DIR}/{RECORD}"), text.as_bytes(), 0o644)
    }
}

/// Why `rel` could not be opened as `what`, in install's words: a symlink is named as one.
fn refusal(rel: &str, why: Why, what: &str) -> HostError {
    match why {
        Why::Link => HostError::refused(format!("{rel} is a symlink: not followed, nothing changed")),
        Why::NotDir | Why::NotRegular => HostError::refused(format!("{rel} is not {what}: nothing changed")),
        Why::Io(e) => HostError::refused(format!("cannot open {rel}: {e}")),
        Why::Missing => HostError::refused(format!("cannot open {rel}: {}", std::io::Error::from_raw_os_error(libc::ENOENT))),
        Why::BadPath => HostError::refused(format!("{rel} is not a path install writes: nothing changed")),
    }
}

/// Whether `rel` is a path install may write: below `scripts/drivers/`, plain names only (no `.`, `..`
/// or empty component).
fn is_ours(rel: &str) -> bool {
    rel.strip_prefix("scripts/drivers/").is_some_and(|rest| {
        rest.split('/').all(|part| {
            !part.is_empty() && part != "." && part != ".." && part.bytes().all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b))
        })
    })
}

fn backup_path(sha256: &str) -> String {
    format!("{STATE_DIR}/{BACKUP_DIR}/{sha256}")
}

/// Every shim for this install, as each axis says it ([`crate::axis_module::AxisModule::shim_files`],
/// named agmsg-host by the path the user ran it by), and what is left out with why.
fn shims(root_path: &Path, modules: Modules, items: &mut Vec<Item>) -> Result<Vec<Shim>, HostError> {
    let bin = super::invoked_binary()?;
    let mut out = Vec::new();
    for axis in crate::axis::Axis::ALL {
        for ShimFile { path, text, warnings, only_in_existing_dir } in modules(axis).shim_files(root_path, &bin)? {
            match text {
                Ok(text) => out.push(Shim { path, text, warnings, only_in_existing_dir }),
                Err(why) => items.push(Item::new(&path, "skip", Some(why))),
            }
        }
    }
    Ok(out)
}

/// A file install puts in place (a [`ShimFile`] with its text).
struct Shim {
    path: String,
    text: String,
    warnings: Vec<String>,
    only_in_existing_dir: Option<&'static str>,
}

/// The components of directory `rel` that do not exist yet, shallowest first.
fn missing_dirs(root: &Root, rel: &str) -> Result<Vec<String>, HostError> {
    let mut missing = Vec::new();
    let mut prefix = String::new();
    for part in rel.split('/').filter(|p| !p.is_empty()) {
        if !prefix.is_empty() {
            prefix.push('/');
        }
        prefix.push_str(part);
        if !missing.is_empty() || root.dir_at(&prefix, None)?.is_none() {
            missing.push(prefix.clone());
        }
    }
    Ok(missing)
}

fn install(root: &Root, modules: Modules, dry_run: bool, items: &mut Vec<Item>) -> Result<(), HostError> {
    let old = root.record()?.unwrap_or_default();
    let mut wanted = Vec::new();
    for shim in shims(&root.path, modules, items)? {
        // A file agmsg would read only in a directory it has itself (a type's) gets no directory from us.
        if let Some(why) = shim.only_in_existing_dir
            && root.dir_at(split(&shim.path).0, None)?.is_none()
        {
            items.push(Item::new(&shim.path, "skip", Some(why.into())));
            continue;
        }
        wanted.push(shim);
    }

    // Plan everything (and refuse any link) before changing anything.
    struct Planned {
        shim: Shim,
        action: &'static str,
        original: Option<Original>,
        backup: Option<Vec<u8>>,
        mode: u32,
    }
    let mut plan = Vec::new();
    let mut new_dirs: Vec<String> = Vec::new();
    for shim in wanted {
        for dir in missing_dirs(root, split(&shim.path).0)? {
            if !new_dirs.contains(&dir) {
                items.push(Item::new(&format!("{dir}/"), "create", None));
                new_dirs.push(dir);
            }
        }
        let current = root.read(&shim.path)?;
        let previous = old.files.get(&shim.path);
        let planned = match (current, previous) {
            // Ours, as install wrote it: rewritten only if the text changed (another agmsg-host, say).
            (Some((bytes, mode)), Some(entry)) if sha256_hex(&bytes) == entry.installed => {
                let action = if bytes == shim.text.as_bytes() { "unchanged" } else { "update" };
                Planned { shim, action, original: entry.original.clone(), backup: None, mode }
            }
            // Someone else's file (agmsg's, or what an agmsg update put back over ours): kept first.
            (Some((bytes, mode)), _) => {
                let original = Original { sha256: sha256_hex(&bytes), mode };
                Planned { shim, action: "replace", original: Some(original), backup: Some(bytes), mode }
            }
            // Ours was removed since: put back, agmsg's original still kept from the first install.
            (None, Some(entry)) => {
                let mode = entry.original.as_ref().map_or(0o644, |o| o.mode);
                Planned { shim, action: "add", original: entry.original.clone(), backup: None, mode }
            }
            (None, None) => Planned { shim, action: "add", original: None, backup: None, mode: 0o644 },
        };
        let detail = match (planned.action, &planned.original) {
            ("replace", Some(o)) => Some(format!("agmsg's file kept as {}", backup_path(&o.sha256))),
            ("update", _) => Some("the shim's text changed".to_owned()),
            _ => None,
        };
        let mut item = Item::new(&planned.shim.path, planned.action, detail);
        item.warnings = planned.shim.warnings.clone();
        items.push(item);
        plan.push(planned);
    }
    if dry_run {
        return Ok(());
    }

    // Backups, then the record, then the shims: a replaced file always has its backup on record.
    root.dir_at(&format!("{STATE_DIR}/{BACKUP_DIR}"), Some(&mut BTreeSet::new()))?;
    for p in &plan {
        if let (Some(bytes), Some(o)) = (&p.backup, &p.original) {
            let path = backup_path(&o.sha256);
            if root.read(&path)?.is_none_or(|(b, _)| sha256_hex(&b) != o.sha256) {
                root.write(&path, bytes, 0o600)?;
            }
        }
    }
    let mut created = old.created_dirs.clone();
    for p in &plan {
        root.dir_at(split(&p.shim.path).0, Some(&mut created))?;
    }
    let mut record = Record { version: 1, files: old.files, created_dirs: created };
    for p in &plan {
        record
            .files
            .insert(p.shim.path.clone(), RecordedFile { installed: sha256_hex(p.shim.text.as_bytes()), original: p.original.clone() });
    }
    root.save_record(&record)?;
    for p in plan.iter().filter(|p| p.action != "unchanged") {
        root.write(&p.shim.path, p.shim.text.as_bytes(), p.mode)?;
    }
    // Originals an agmsg update replaced since an earlier install are no one's any more.
    let kept: BTreeSet<String> = record.files.values().filter_map(|e| e.original.as_ref().map(|o| o.sha256.clone())).collect();
    if let Some(dir) = root.dir_at(&format!("{STATE_DIR}/{BACKUP_DIR}"), None)? {
        for name in list_names(&dir)? {
            if !kept.contains(&name) {
                let _ = dir.remove_file(&name);
            }
        }
    }
    Ok(())
}

/// The names in an open directory.
fn list_names(dir: &fsroot::Dir) -> Result<Vec<String>, HostError> {
    Ok(dir.list().map_err(|e| HostError::refused(e.to_string()))?.into_iter().map(|name| name.to_string_lossy().into_owned()).collect())
}

fn uninstall(root: &Root, dry_run: bool, items: &mut Vec<Item>) -> Result<(), HostError> {
    let Some(record) = root.record()? else {
        items.push(Item::new(&format!("{STATE_DIR}/"), "nothing", Some("agmsg-host installed no shims here".into())));
        return Ok(());
    };
    // Plan (reading every file and backup, refusing links) before changing anything.
    /// A file's undo: its action, and for a restore agmsg's bytes and mode.
    struct Undo<'a> {
        path: &'a str,
        action: &'static str,
        restore: Found,
    }
    let mut plan = Vec::new();
    for (path, entry) in &record.files {
        let current = root.read(path)?.map(|(bytes, _)| sha256_hex(&bytes));
        let ours = current.as_deref() == Some(entry.installed.as_str());
        let dir_gone = current.is_none() && root.dir_at(split(path).0, None)?.is_none();
        let (action, detail) = match (&current, &entry.original) {
            (None, Some(_)) if dir_gone => ("leave", Some("its directory is gone".to_owned())),
            // Ours, or gone since (agmsg's original is what was there before install).
            (None, Some(o)) => ("restore", Some(format!("agmsg's file, from {}", backup_path(&o.sha256)))),
            (Some(_), Some(o)) if ours => ("restore", Some(format!("agmsg's file, from {}", backup_path(&o.sha256)))),
            (Some(_), None) if ours => ("remove", None),
            (Some(sha), Some(o)) if *sha == o.sha256 => ("unchanged", Some("agmsg's file already".to_owned())),
            (None, None) => ("unchanged", Some("absent already".to_owned())),
            (Some(_), _) => ("leave", Some("changed since install: not agmsg-host's shim any more".to_owned())),
        };
        let restore = match (&entry.original, action) {
            (Some(o), "restore") => {
                let backup = root.read(&backup_path(&o.sha256))?.filter(|(b, _)| sha256_hex(b) == o.sha256);
                let bytes = backup
                    .ok_or_else(|| {
                        HostError::refused(format!(
                            "the backup of {path}, {}, is missing or damaged: nothing changed",
                            backup_path(&o.sha256)
                        ))
                    })?
                    .0;
                Some((bytes, o.mode))
            }
            _ => None,
        };
        items.push(Item::new(path, action, detail));
        plan.push(Undo { path, action, restore });
    }
    let mut dirs: Vec<&String> = record.created_dirs.iter().collect();
    // Deepest first, so a directory's own directories go before it.
    dirs.sort_by_key(|d| std::cmp::Reverse(d.matches('/').count()));
    if dry_run {
        for dir in dirs {
            items.push(Item::new(&format!("{dir}/"), "remove", Some("if empty".into())));
        }
        return Ok(());
    }

    for undo in &plan {
        match (&undo.restore, undo.action) {
            (Some((bytes, mode)), _) => root.write(undo.path, bytes, *mode)?,
            (None, "remove") => match root.remove(undo.path, false) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(HostError::refused(format!("cannot remove {}: {e}", undo.path))),
            },
            _ => {}
        }
    }
    for dir in dirs {
        match root.remove(dir, true) {
            Ok(()) => items.push(Item::new(&format!("{dir}/"), "remove", None)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => {
                items.push(Item::new(&format!("{dir}/"), "keep", Some(format!("not removed: {e}"))));
            }
        }
    }
    // The record last: until here, a failed uninstall can be run again.
    if let Some(dir) = root.dir_at(&format!("{STATE_DIR}/{BACKUP_DIR}"), None)? {
        let ours: BTreeSet<&str> = record.files.values().filter_map(|e| e.original.as_ref().map(|o| o.sha256.as_str())).collect();
        for name in list_names(&dir)? {
            if ours.contains(name.as_str()) {
                let _ = dir.remove_file(&name);
            }
        }
    }
    let _ = root.remove(&format!("{STATE_DIR}/{BACKUP_DIR}"), true);
    root.remove(&format!("{STATE_DIR}/{RECORD}"), false)
        .map_err(|e| HostError::refused(format!("cannot remove {STATE_DIR}/{RECORD}: {e}")))?;
    match root.remove(STATE_DIR, true) {
        Ok(()) => items.push(Item::new(&format!("{STATE_DIR}/"), "remove", None)),
        Err(e) => items.push(Item::new(&format!("{STATE_DIR}/"), "keep", Some(format!("not removed: {e}")))),
    }
    Ok(())
}
