//! Choosing and changing the active storage driver (spec §3): [`switch`] and [`convert`], with agmsg's
//! config file as the one record of the choice ([`set_configured_driver`]).
//!
//! The config (`${AGMSG_CONFIG:-~/.agents/agmsg/config.json}`, [`location::config_file`]) is rewritten
//! atomically ([`atomic_file`](crate::atomic_file)) and keeps every key it does not know. `convert` never touches the old
//! store: the new one is built and verified in a private directory inside the store, moved in beside the
//! old one, and only then does the config flip; any failure before the flip leaves the old store and
//! config as they were. Progress is reported to a [`Progress`] the caller supplies; nothing here prints.

use std::collections::BTreeSet;
use std::io::Write;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use super::driver::{Event, Pair};
use super::records::event_line;
use super::{Storage, StorageError, StoreSession, bundled_drivers, location, source};
use crate::atomic_file;
use crate::axis::Axis;
use crate::bundled;
use crate::error::{ExitClass, HostError};
use crate::runtime::sandbox::StoreDir;
use crate::runtime::{DriverSource, Runtime};

/// Where `convert` builds the new store, inside the store directory (same filesystem: renames work).
const CONVERT_DIR_PREFIX: &str = ".agmsg-convert-";

/// A storage error's class: its §1.4 status.
impl From<&StorageError> for ExitClass {
    fn from(e: &StorageError) -> ExitClass {
        ExitClass::Storage(e.status)
    }
}

/// A storage error as a host error (its §1.6 directive, if any, is dropped: relay it before).
impl From<StorageError> for HostError {
    fn from(e: StorageError) -> HostError {
        HostError::new((&e).into(), e.message)
    }
}

/// What a workflow is doing, for a caller that shows it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stage {
    /// Running the new driver's check.
    Checking,
    /// Streaming the event log from the active driver into the new one.
    Copying,
    /// Reading the new store back to compare it with what was copied.
    Verifying,
    /// Moving the new store in beside the old one.
    MovingIn,
    /// Recording the new driver in agmsg's config.
    Recording,
}

/// Where a workflow reports what it is doing: each stage as it starts, and running counts of events.
/// Both default to nothing.
pub trait Progress {
    fn stage(&mut self, _stage: Stage) {}
    /// `events` so far in `stage` (after each page); `done` once the stage's count is final.
    fn events(&mut self, _stage: Stage, _events: usize, _done: bool) {}
}

/// A [`Progress`] that shows nothing.
pub struct Silent;

impl Progress for Silent {}

/// What `switch` did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Switched {
    pub driver: String,
    /// The config file that now records it.
    pub config: PathBuf,
}

/// What `convert` did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Converted {
    pub from: String,
    pub to: String,
    /// Events copied and verified.
    pub events: usize,
    /// The store directory both stores now live in (the old one left as it was).
    pub store: PathBuf,
    /// The config file that now records `to`.
    pub config: PathBuf,
}

/// `storage switch <name> [--url URL]`: check the driver, then make it the configured one. With `url`
/// (the driver with a database rather than a store directory), the check runs against that database,
/// and the URL is recorded with the choice, in the same write.
pub fn switch(store_flag: Option<PathBuf>, name: &str, url: Option<&str>, progress: &mut dyn Progress) -> Result<Switched, StorageError> {
    progress.stage(Stage::Checking);
    let source = resolve_new(name, url)?;
    match url {
        None => {
            let store = StoreSession::open(store_flag, source, None, false)?;
            check_new(&store.runtime, &store.source, Some(store.grant.clone()))?;
        }
        Some(_) => check_new(&crate::runtime::Runtime::from_env().map_err(StorageError::runtime)?, &source, None)?,
    }
    progress.stage(Stage::Recording);
    let config = set_configured_driver(name, url)?;
    Ok(Switched { driver: name.to_owned(), config })
}

/// The driver `switch` or `convert` moves to, resolved once: agmsg (when installed) must be able to
/// load it too; with `url` it must be a driver that takes one, configured for that database.
fn resolve_new(name: &str, url: Option<&str>) -> Result<DriverSource, StorageError> {
    // agmsg reads the same config: a driver it cannot load would fail every agmsg command after.
    super::shim::check_agmsg_loads(name)?;
    if url.is_some() && !takes_url(name) {
        let with_url: Vec<&str> = bundled::of(Axis::Storage).map(|d| d.name).filter(|d| takes_url(d)).collect();
        return Err(StorageError::runtime(format!("--url is for the {} driver, not '{name}'", with_url.join(" or "))));
    }
    source::resolve_at(name, None, url)
}

/// The new driver's check, on the store directory `store` (granted as it is; a store that does not
/// exist is an empty stand-in), or, for a driver whose store is a database (`None`), with an empty
/// directory it is never granted.
fn check_new(runtime: &Runtime, source: &DriverSource, store: Option<StoreDir>) -> Result<(), StorageError> {
    if let Some(dir) = store {
        return Storage::open(runtime, source, dir)?.check();
    }
    // The driver has no store directory; the handle still wants one, and is never granted it.
    let empty = tempfile::tempdir().map_err(|e| StorageError::runtime(format!("cannot create a temporary directory: {e}")))?;
    let dir = StoreDir::open(empty.path()).map_err(|e| StorageError::runtime(format!("cannot open {}: {e}", empty.path().display())))?;
    Storage::open(runtime, source, dir)?.check()
}

/// A driver whose store is elsewhere than the store directory (a database): its host settings say it
/// takes a location (`--url`).
fn takes_url(name: &str) -> bool {
    bundled_drivers::settings(name).is_some_and(|s| s.takes_location)
}

/// Write `storage: name` (and with `url`, `url` in the driver's own table) into agmsg's config, keeping
/// every other key; atomic. Returns the config file's path.
pub fn set_configured_driver(name: &str, url: Option<&str>) -> Result<PathBuf, StorageError> {
    let path = location::config_file().ok_or_else(|| StorageError::runtime("cannot find agmsg's config: set AGMSG_CONFIG or HOME"))?;
    let current = match std::fs::read_to_string(&path) {
        Ok(text) => Some(text),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(StorageError::runtime(format!("cannot read {}: {e}", path.display()))),
    };
    let text = config_with_driver(current.as_deref(), name, url).map_err(|e| match e {
        ConfigEditError::Json(e) => StorageError::runtime(format!("{} is not valid JSON: {e}", path.display())),
        ConfigEditError::NotAnObject => StorageError::runtime(format!("{} is not a JSON object", path.display())),
        ConfigEditError::TableNotAnObject => StorageError::runtime(format!("{}: \"{name}\" is not a JSON object", path.display())),
        ConfigEditError::Print(e) => StorageError::runtime(e),
    })?;
    let dir = path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir).map_err(|e| StorageError::runtime(format!("cannot create {}: {e}", dir.display())))?;
    let io_error = |e: std::io::Error| StorageError::runtime(format!("cannot write {}: {e}", path.display()));
    atomic_file::write_atomically(&path, io_error, |file| file.write_all(text.as_bytes()).map_err(io_error))?;
    Ok(path)
}

/// Why agmsg's config could not take a driver: not JSON, not an object, the driver's table not an
/// object, or (never in practice) not printable again.
#[derive(Debug)]
pub enum ConfigEditError {
    Json(serde_json::Error),
    NotAnObject,
    TableNotAnObject,
    Print(String),
}

/// agmsg's config text (`None`: no file) with `storage: name` set, and with `url`, `url` in the
/// driver's own table, every other key kept: the text [`set_configured_driver`] writes.
pub fn config_with_driver(current: Option<&str>, name: &str, url: Option<&str>) -> Result<String, ConfigEditError> {
    let mut config = match current {
        Some(text) => read_config(text).map_err(ConfigEditError::Json)?,
        None => serde_json::json!({}),
    };
    let object = config.as_object_mut().ok_or(ConfigEditError::NotAnObject)?;
    object.insert("storage".into(), serde_json::Value::String(name.to_owned()));
    if let Some(url) = url {
        // A driver's settings live in its own table of the config (agmsg's `postgres.url`).
        let table = object.entry(name).or_insert_with(|| serde_json::json!({}));
        match table.as_object_mut() {
            Some(table) => {
                table.insert("url".into(), serde_json::Value::String(url.to_owned()));
            }
            None => return Err(ConfigEditError::TableNotAnObject),
        }
    }
    let mut text = serde_json::to_string_pretty(&config).map_err(|e| ConfigEditError::Print(e.to_string()))?;
    text.push('\n');
    Ok(text)
}

/// agmsg's config text as a JSON value, each number read exactly (correctly rounded, as jq and node
/// read it), so that the config written back holds the values it held. serde_json's own reader is
/// fast but not always correctly rounded: through it, `444440.1444444444444441` was written back as
/// `444440.14444444445`, another double (a fuzzing finding). Objects, strings and errors are
/// serde_json's; only a number's value is taken from its text.
pub fn read_config(text: &str) -> Result<serde_json::Value, serde_json::Error> {
    use serde::de::DeserializeSeed;
    let mut numbers = number_tokens(text).into_iter();
    let mut de = serde_json::Deserializer::from_str(text);
    let value = ExactNumbers(&mut numbers).deserialize(&mut de)?;
    de.end()?;
    Ok(value)
}

/// The number tokens of JSON text, in order (outside strings: a `-` or a digit, and what follows of
/// `-+.eE` and digits). In valid JSON these are exactly its numbers, in the order a reader meets them.
fn number_tokens(text: &str) -> Vec<&str> {
    let bytes = text.as_bytes();
    let mut tokens = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'"' => {
                i += 1;
                while i < bytes.len() && bytes[i] != b'"' {
                    i += if bytes[i] == b'\\' { 2 } else { 1 };
                }
                i += 1;
            }
            b'-' | b'0'..=b'9' => {
                let start = i;
                while i < bytes.len() && matches!(bytes[i], b'-' | b'+' | b'.' | b'e' | b'E' | b'0'..=b'9') {
                    i += 1;
                }
                tokens.push(&text[start..i]);
            }
            _ => i += 1,
        }
    }
    tokens
}

/// serde_json's value, with each float taken from its token (the next of the iterator) by Rust's
/// correctly rounded reader; integers serde_json holds exactly.
struct ExactNumbers<'a, 't>(&'a mut std::vec::IntoIter<&'t str>);

impl<'de> serde::de::DeserializeSeed<'de> for ExactNumbers<'_, '_> {
    type Value = serde_json::Value;
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<serde_json::Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> serde::de::Visitor<'de> for ExactNumbers<'_, '_> {
    type Value = serde_json::Value;
    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_bool<E>(self, v: bool) -> Result<serde_json::Value, E> {
        Ok(v.into())
    }
    fn visit_i64<E>(self, v: i64) -> Result<serde_json::Value, E> {
        self.0.next();
        Ok(v.into())
    }
    fn visit_u64<E>(self, v: u64) -> Result<serde_json::Value, E> {
        self.0.next();
        Ok(v.into())
    }
    fn visit_f64<E>(self, v: f64) -> Result<serde_json::Value, E> {
        let exact = self.0.next().and_then(|token| token.parse::<f64>().ok()).unwrap_or(v);
        Ok(exact.into())
    }
    fn visit_str<E>(self, v: &str) -> Result<serde_json::Value, E> {
        Ok(v.into())
    }
    fn visit_string<E>(self, v: String) -> Result<serde_json::Value, E> {
        Ok(v.into())
    }
    fn visit_unit<E>(self) -> Result<serde_json::Value, E> {
        Ok(serde_json::Value::Null)
    }
    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<serde_json::Value, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element_seed(ExactNumbers(&mut *self.0))? {
            items.push(item);
        }
        Ok(serde_json::Value::Array(items))
    }
    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<serde_json::Value, A::Error> {
        let mut object = serde_json::Map::new();
        while let Some(key) = map.next_key::<String>()? {
            let value = map.next_value_seed(ExactNumbers(&mut *self.0))?;
            object.insert(key, value);
        }
        Ok(serde_json::Value::Object(object))
    }
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

/// `storage convert <to> [--url URL]`: copy the active store into driver `to`, verify, then switch to
/// it. With `url`, into that database, which is recorded with the switch as [`switch`] does.
pub fn convert(store_flag: Option<PathBuf>, to: &str, url: Option<&str>, progress: &mut dyn Progress) -> Result<Converted, StorageError> {
    let from = location::storage_driver(None)?;
    if from == to {
        return Err(StorageError::runtime(format!("the store already uses '{to}'")));
    }
    progress.stage(Stage::Checking);
    // The target is resolved once, and runs in the source's runtime: checked on this store (or its
    // database), then built.
    let target_source = resolve_new(to, url)?;
    let source_store = StoreSession::resolve(store_flag, Some(from.clone()), None, false)?;
    check_new(&source_store.runtime, &target_source, url.is_none().then(|| source_store.grant.clone()))?;
    let dir = source_store.dir.clone();
    if !source_store.source.capabilities.store() && !dir.is_dir() {
        // A source with no store directory (a database): the new store still goes into this one.
        std::fs::create_dir_all(&dir).map_err(|e| StorageError::runtime(format!("cannot create {}: {e}", dir.display())))?;
    }
    let mut source = source_store.driver()?;
    if !dir.is_dir() || !source.store_exists()? {
        return Err(StorageError::runtime(format!("there is no '{from}' store in {} to convert", dir.display())));
    }
    remove_stale_convert_dirs(&dir);

    // Build the new store in a private directory inside the store.
    let work = tempfile::Builder::new()
        .prefix(&format!("{CONVERT_DIR_PREFIX}{to}-"))
        .tempdir_in(&dir)
        .map_err(|e| StorageError::runtime(format!("cannot create a work directory in {}: {e}", dir.display())))?;
    let work_dir = StoreDir::open(work.path()).map_err(|e| StorageError::runtime(format!("cannot open {}: {e}", work.path().display())))?;
    let mut target = Storage::open(&source_store.runtime, &target_source, work_dir)?;
    target.init()?;
    // A target outside the work directory (a database) may hold events already: never merge.
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
    progress.stage(Stage::Copying);
    let mut copied = Tally::default();
    let mut recipients: BTreeSet<(String, String)> = BTreeSet::new();
    let mut import = target.begin_import()?;
    source.export_events(|page| {
        copied.add(page);
        for event in page {
            if let Event::MessageSent(m) = event {
                recipients.insert((m.team.clone(), m.to.clone()));
            }
        }
        progress.events(Stage::Copying, copied.events, false);
        import.push(page)
    })?;
    import.commit()?;
    progress.events(Stage::Copying, copied.events, true);
    let original = copied.sum();
    // Cursors are each driver's own tokens and not in the event log: move every recipient's frontier
    // over its read prefix again, as the source's consumes did.
    for (team, agent) in &recipients {
        let pair = Pair { team: team.clone(), agent: agent.clone() };
        let tip = target.watch_tip(std::slice::from_ref(&pair))?;
        target.read_cursor_consume(team, agent, &tip, &[])?;
    }
    progress.stage(Stage::Verifying);
    let mut verified = Tally::default();
    target.export_events(|page| {
        verified.add(page);
        progress.events(Stage::Verifying, verified.events, false);
        Ok(())
    })?;
    progress.events(Stage::Verifying, verified.events, true);
    let converted = verified.sum();
    if original != converted {
        return Err(StorageError::runtime(format!(
            "verification failed: '{to}' holds {} events, '{from}' {}{}",
            converted.0,
            original.0,
            if converted.0 == original.0 { ", with different content" } else { "" }
        )));
    }
    drop(target);

    progress.stage(Stage::MovingIn);
    move_in(work.path(), &dir)?;
    progress.stage(Stage::Recording);
    let config = set_configured_driver(to, url)?;
    Ok(Converted { from, to: to.to_owned(), events: original.0, store: dir, config })
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
