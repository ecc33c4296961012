//! `agmsg-host storage list | switch <name> | convert <to>`: choosing and changing the active storage
//! driver (spec §3), with agmsg's config file as the one record of the choice.
//!
//! The config (`${AGMSG_CONFIG:-~/.agents/agmsg/config.json}`) is rewritten atomically (temp file +
//! rename) and keeps every key it does not know. `convert` never touches the old store: the new one is
//! built and verified in a private directory inside the store, moved in beside the old one, and only
//! then does the config flip; any failure before the flip leaves the old store and config as they were.

use std::collections::BTreeSet;
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use agmsg_contract::Status;
use sha2::{Digest, Sha256};

use super::framing::{control_failure, record_failure};
use agmsg_host::storage::StoreSession;
use agmsg_host::axis::Axis;
use agmsg_host::catalog::{self, Origin};
use agmsg_host::display;
use agmsg_host::storage::driver::{Event, Pair};
use agmsg_host::runtime::sandbox::StoreDir;
use agmsg_host::storage::records::event_line;
use agmsg_host::storage::{StorageError, Storage, location};

/// Where `convert` builds the new store, inside the store directory (same filesystem: renames work).
const CONVERT_DIR_PREFIX: &str = ".agmsg-convert-";

/// `storage list [--json]`: every driver this host can run (bundled, trusted plugins), the active one
/// marked, and the plugins that run once trusted, with the command that trusts them (the catalog's rows,
/// as `terminal list` shows them).
pub fn list(store_flag: Option<PathBuf>, json: bool) -> ExitCode {
    let active = location::storage_driver(None).unwrap_or_default();
    let entries = match catalog::entries(Axis::Storage, &[]) {
        Ok(entries) => entries,
        Err(e) => return record_failure(&StorageError::runtime(e)),
    };
    let mut rows = Vec::new();
    for entry in entries {
        let (backend, capabilities) = match &entry.origin {
            Origin::Untrusted { trust_command, .. } => (format!("(not trusted: {trust_command})"), Vec::new()),
            _ => {
                let store = match StoreSession::resolve(store_flag.clone(), Some(entry.name.clone()), None, false) {
                    Ok(store) => store,
                    Err(e) => return record_failure(&e),
                };
                match store.driver().and_then(|mut d| d.describe()) {
                    Ok(d) => (d.backend, d.capabilities),
                    Err(e) => (format!("(cannot describe: {e})"), Vec::new()),
                }
            }
        };
        rows.push((entry, backend, capabilities));
    }
    if json {
        let value: Vec<_> = rows
            .iter()
            .map(|(entry, backend, caps)| {
                let mut row = entry.json_fields();
                row.insert("backend".into(), backend.clone().into());
                row.insert("capabilities".into(), caps.clone().into());
                row.insert("active".into(), (entry.origin.runs() && entry.name == active).into());
                serde_json::Value::Object(row)
            })
            .collect();
        println!("{}", serde_json::Value::Array(value));
    } else {
        for (entry, backend, _) in &rows {
            let mark = if entry.origin.runs() && entry.name == active { "*" } else { " " };
            println!("{mark} {:<8} {:<9} {}", display::line(&entry.name), entry.origin.word(), display::line(backend));
        }
    }
    ExitCode::SUCCESS
}

/// Run `driver`'s check against the store; a missing dependency prints agmsg's directive.
fn check(store_flag: Option<PathBuf>, driver: &str) -> Result<(), StorageError> {
    let store = StoreSession::resolve(store_flag, Some(driver.to_owned()), None, false)?;
    store.driver()?.check()
}

/// `storage switch <name> [--url URL]`: check the driver, then make it the configured one. With `--url`
/// (the postgres driver), the check runs against that database, and the URL is recorded with the
/// choice, in the same write.
pub fn switch(store_flag: Option<PathBuf>, name: &str, url: Option<&str>) -> ExitCode {
    let checked = match url {
        None => agmsg_host::storage::source::resolve(name).and_then(|_| check(store_flag, name)),
        Some(url) => check_postgres_url(name, url),
    };
    if let Err(e) = checked {
        return control_failure(&e, name);
    }
    match set_configured_driver(name, url) {
        Ok(path) => {
            println!("{}", Status::Ok.word());
            eprintln!("storage driver is now '{name}' ({})", path.display());
            ExitCode::SUCCESS
        }
        Err(e) => control_failure(&e, name),
    }
}

/// The postgres driver's check against the database `url` (not yet recorded).
fn check_postgres_url(name: &str, url: &str) -> Result<(), StorageError> {
    use agmsg_host::storage::source;
    if name != source::POSTGRES {
        return Err(StorageError::runtime(format!("--url is for the postgres driver, not '{name}'")));
    }
    let driver = source::resolve_at(name, None, Some(url))?;
    let runtime = agmsg_host::runtime::Runtime::from_env().map_err(StorageError::runtime)?;
    // The driver has no store directory; the handle still wants one, and is never granted it.
    let empty = tempfile::tempdir().map_err(|e| StorageError::runtime(format!("cannot create a temporary directory: {e}")))?;
    let dir = StoreDir::open(empty.path()).map_err(|e| StorageError::runtime(format!("cannot open {}: {e}", empty.path().display())))?;
    Storage::open(&runtime, &driver, dir)?.check()
}

/// Write `storage: name` (and with `url`, `postgres.url`) into agmsg's config, keeping every other key;
/// atomic.
fn set_configured_driver(name: &str, url: Option<&str>) -> Result<PathBuf, StorageError> {
    let path = location::config_file().ok_or_else(|| StorageError::runtime("cannot find agmsg's config: set AGMSG_CONFIG or HOME"))?;
    let mut config = match std::fs::read_to_string(&path) {
        Ok(text) => serde_json::from_str::<serde_json::Value>(&text)
            .map_err(|e| StorageError::runtime(format!("{} is not valid JSON: {e}", path.display())))?,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => serde_json::json!({}),
        Err(e) => return Err(StorageError::runtime(format!("cannot read {}: {e}", path.display()))),
    };
    let object = config.as_object_mut().ok_or_else(|| StorageError::runtime(format!("{} is not a JSON object", path.display())))?;
    object.insert("storage".into(), serde_json::Value::String(name.to_owned()));
    if let Some(url) = url {
        let postgres = object.entry("postgres").or_insert_with(|| serde_json::json!({}));
        match postgres.as_object_mut() {
            Some(table) => {
                table.insert("url".into(), serde_json::Value::String(url.to_owned()));
            }
            None => return Err(StorageError::runtime(format!("{}: \"postgres\" is not a JSON object", path.display()))),
        }
    }
    let dir = path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir).map_err(|e| StorageError::runtime(format!("cannot create {}: {e}", dir.display())))?;
    let write = || -> std::io::Result<()> {
        let mut tmp = tempfile::NamedTempFile::new_in(dir)?;
        let mut text = serde_json::to_string_pretty(&config).map_err(std::io::Error::other)?;
        text.push('\n');
        tmp.write_all(text.as_bytes())?;
        tmp.as_file().sync_all()?;
        tmp.persist(&path).map(drop).map_err(|e| e.error)
    };
    write().map_err(|e| StorageError::runtime(format!("cannot write {}: {e}", path.display())))?;
    Ok(path)
}

/// What a stream of events adds up to: how many, and a digest of their agmsg lines in order. Two
/// streams with equal sums are equal, without either being held in memory.
#[derive(Default)]
struct Tally {
    events: usize,
    hasher: Sha256,
}

impl Tally {
    fn add(&mut self, page: &[Event]) {
        for event in page {
            self.hasher.update(event_line(event).as_bytes());
            self.hasher.update(b"\n");
        }
        self.events += page.len();
    }

    fn sum(self) -> (usize, [u8; 32]) {
        (self.events, self.hasher.finalize().into())
    }
}

/// Export `driver`'s whole log into a [`Tally`].
fn tally(driver: &mut Storage<'_>, progress: &Progress, what: &str) -> Result<(usize, [u8; 32]), StorageError> {
    let mut tally = Tally::default();
    driver.export_events(|page| {
        tally.add(page);
        progress.update(what, tally.events);
        Ok(())
    })?;
    progress.done(what, tally.events);
    Ok(tally.sum())
}

/// Counts on stderr, only when stderr is a terminal.
struct Progress {
    on: bool,
}

impl Progress {
    fn update(&self, what: &str, n: usize) {
        if self.on && n.is_multiple_of(5000) {
            eprint!("\r{what}: {n} events");
        }
    }
    fn done(&self, what: &str, n: usize) {
        if self.on {
            eprintln!("\r{what}: {n} events");
        }
    }
}

/// `storage convert <to> [--url URL]`: copy the store into driver `to`, verify, then switch to it. With
/// `--url` (the postgres driver), into that database, which is recorded with the switch as `storage
/// switch --url` does.
pub fn convert(store_flag: Option<PathBuf>, to: &str, url: Option<&str>) -> ExitCode {
    match convert_inner(store_flag, to, url) {
        Ok(()) => {
            println!("{}", Status::Ok.word());
            ExitCode::SUCCESS
        }
        Err(e) => control_failure(&e, to),
    }
}

fn convert_inner(store_flag: Option<PathBuf>, to: &str, url: Option<&str>) -> Result<(), StorageError> {
    let from = location::storage_driver(None)?;
    if from == to {
        return Err(StorageError::runtime(format!("the store already uses '{to}'")));
    }
    match url {
        None => agmsg_host::storage::source::resolve(to).and_then(|_| check(store_flag.clone(), to))?,
        Some(url) => check_postgres_url(to, url)?,
    }
    let source_store = StoreSession::resolve(store_flag, Some(from.clone()), None, false)?;
    let dir = source_store.dir.clone();
    if !source_store.source.capabilities.store() && !dir.is_dir() {
        // A source with no store directory (postgres): the new store still goes into this one.
        std::fs::create_dir_all(&dir).map_err(|e| StorageError::runtime(format!("cannot create {}: {e}", dir.display())))?;
    }
    let mut source = source_store.driver()?;
    if !dir.is_dir() || !source.store_exists()? {
        return Err(StorageError::runtime(format!("there is no '{from}' store in {} to convert", dir.display())));
    }
    remove_stale_convert_dirs(&dir);
    let progress = Progress { on: std::io::stderr().is_terminal() };

    // Build the new store in a private directory inside the store.
    let work = tempfile::Builder::new()
        .prefix(&format!("{CONVERT_DIR_PREFIX}{to}-"))
        .tempdir_in(&dir)
        .map_err(|e| StorageError::runtime(format!("cannot create a work directory in {}: {e}", dir.display())))?;
    let target_source = agmsg_host::storage::source::resolve_at(to, None, url)?;
    let work_dir = StoreDir::open(work.path()).map_err(|e| StorageError::runtime(format!("cannot open {}: {e}", work.path().display())))?;
    let mut target = Storage::open(&source_store.runtime, &target_source, work_dir)?;
    target.init()?;
    // A target outside the work directory (postgres: a database) may hold events already: never merge.
    let mut occupied = false;
    let probe = target.export_events(|page| {
        occupied = !page.is_empty();
        if occupied { Err(StorageError::runtime("occupied")) } else { Ok(()) }
    });
    if occupied {
        return Err(StorageError::runtime(format!("the '{to}' store already holds events: convert only into an empty store")));
    }
    probe?;
    // Stream the event log across, page by page: neither side is ever held whole in memory (the
    // export's own bounds stop a source that never ends). Remember what it adds up to, and whose
    // frontiers to move.
    let mut copied = Tally::default();
    let mut recipients: BTreeSet<(String, String)> = BTreeSet::new();
    let mut import = target.begin_import()?;
    let what = format!("copied from {from}");
    source.export_events(|page| {
        copied.add(page);
        for event in page {
            if let Event::MessageSent(m) = event {
                recipients.insert((m.team.clone(), m.to.clone()));
            }
        }
        progress.update(&what, copied.events);
        import.push(page)
    })?;
    import.commit()?;
    progress.done(&what, copied.events);
    let original = copied.sum();
    let count = original.0;
    // Cursors are each driver's own tokens and not in the event log: move every recipient's frontier
    // over its read prefix again, as the source's consumes did.
    for (team, agent) in &recipients {
        let pair = Pair { team: team.clone(), agent: agent.clone() };
        let tip = target.watch_tip(std::slice::from_ref(&pair))?;
        target.read_cursor_consume(team, agent, &tip, &[])?;
    }
    let converted = tally(&mut target, &progress, &format!("verified in {to}"))?;
    if original != converted {
        return Err(StorageError::runtime(format!(
            "verification failed: '{to}' holds {} events, '{from}' {}{}",
            converted.0,
            original.0,
            if converted.0 == original.0 { ", with different content" } else { "" }
        )));
    }
    drop(target);

    move_in(work.path(), &dir)?;
    set_configured_driver(to, url)?;
    eprintln!("converted {count} events from '{from}' to '{to}'; the '{from}' store is left in place");
    if from == "sqlite" {
        // The v1 event log is what converts (as agmsg's export): legacy rows outside it stay behind.
        eprintln!("note: rows of the legacy messages table that predate the event log are not part of it and stay in messages.db");
    }
    Ok(())
}

/// Move every entry of `work` into `dir`; none may exist there already. On failure the ones moved are
/// moved back, so the store directory is as it was.
fn move_in(work: &Path, dir: &Path) -> Result<(), StorageError> {
    let entries: Vec<PathBuf> = std::fs::read_dir(work)
        .and_then(|rd| rd.map(|e| e.map(|e| e.path())).collect())
        .map_err(|e| StorageError::runtime(format!("cannot read {}: {e}", work.display())))?;
    for entry in &entries {
        let target = dir.join(entry.file_name().expect("a directory entry has a name"));
        if target.symlink_metadata().is_ok() {
            return Err(StorageError::runtime(format!("{} already exists; move it away and convert again", target.display())));
        }
    }
    let mut moved = Vec::new();
    for entry in &entries {
        let target = dir.join(entry.file_name().expect("a directory entry has a name"));
        if let Err(e) = std::fs::rename(entry, &target) {
            for (from, to) in moved.iter().rev() {
                let _ = std::fs::rename(to, from);
            }
            return Err(StorageError::runtime(format!("cannot move {} into the store: {e}", entry.display())));
        }
        moved.push((entry.clone(), target));
    }
    Ok(())
}

/// Work directories of a convert that was killed: never part of any store.
fn remove_stale_convert_dirs(dir: &Path) {
    if let Ok(entries) = std::fs::read_dir(dir) {
        for entry in entries.flatten() {
            if entry.file_name().to_string_lossy().starts_with(CONVERT_DIR_PREFIX) && entry.path().is_dir() {
                let _ = std::fs::remove_dir_all(entry.path());
            }
        }
    }
}
