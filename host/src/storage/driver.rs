//! A storage driver and its typed calls.
//!
//! Calls go through [`DriverInstance`] (deadline, output routing, trap mapping, poisoned instances
//! dropped). Driver output is checked here, in one place, before the CLI prints any of it.

use std::fmt;

use agmsg_contract::{Status, check_name, is_transport_token};
use wasmtime::Store;
use wasmtime::component::ResourceAny;

use crate::runtime::instance::DriverInstance;

use super::source::DriverSource;
use crate::runtime::sandbox::bindings::storage::agmsg::storage::types as wit;
use crate::runtime::sandbox::bindings::storage::{StorageDriver as Bindings, StorageDriverPre};
use crate::plugin::manifest::Axis;
use crate::runtime::sandbox::{self, Grants, HostState};
use crate::runtime::Runtime;

pub use wit::{Description, Directive, Event, Message, Pair, WatchBatch};

/// A failed operation, with the §1.4 status that goes with it.
#[derive(Debug, Clone)]
pub struct OpError {
    pub status: Status,
    pub message: String,
    /// A §1.6 directive to print (with `missing_deps`).
    pub directive: Option<wit::Directive>,
}

impl OpError {
    pub fn runtime(message: impl Into<String>) -> OpError {
        OpError { status: Status::RuntimeError, message: message.into(), directive: None }
    }
}

impl fmt::Display for OpError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for OpError {}

impl From<wit::DriverError> for OpError {
    fn from(e: wit::DriverError) -> OpError {
        let status = match e.status {
            wit::Status::MissingDeps => Status::MissingDeps,
            wit::Status::CorruptState => Status::CorruptState,
            wit::Status::RuntimeError => Status::RuntimeError,
        };
        OpError { status, message: e.message, directive: e.directive }
    }
}

pub struct StorageDriver<'rt> {
    runtime: &'rt Runtime,
    name: String,
    pre: StorageDriverPre<HostState>,
    grants: Grants,
    instance: DriverInstance<Bindings>,
}

impl<'rt> StorageDriver<'rt> {
    /// Load (through the compile cache) a driver, check that it is one and imports nothing beyond its
    /// grants, and link it; instances are created on first call. `store_dir` is its store (granted
    /// when its capabilities include `store`).
    pub fn open(runtime: &'rt Runtime, source: &DriverSource, store_dir: std::path::PathBuf) -> Result<Self, OpError> {
        let load_error = |e: String| OpError::runtime(format!("driver '{}' cannot be loaded: {e}", source.name));
        let component = runtime.load(&source.wasm, &source.sha256).map_err(|e| load_error(format!("{e:#}")))?;
        let grants = Grants::new(Axis::Storage, &source.capabilities, Some(store_dir), runtime.limits);
        sandbox::admit(&runtime.engine, &component, &grants).map_err(load_error)?;
        let pre = runtime
            .storage_linker()
            .and_then(|linker| linker.instantiate_pre(&component))
            .and_then(StorageDriverPre::new)
            .map_err(|e| load_error(format!("{e:#}")))?;
        let instance = DriverInstance::new(&source.name, grants.limits);
        Ok(StorageDriver { runtime, name: source.name.clone(), pre, grants, instance })
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// Run one call into the driver.
    fn call<T>(&mut self, op: &str, f: impl FnOnce(&mut Store<HostState>, &Bindings) -> wasmtime::Result<T>) -> Result<T, OpError> {
        let runtime = self.runtime;
        let (name, grants, pre) = (&self.name, &self.grants, &self.pre);
        self.instance
            .call(op, || sandbox::new_store(&runtime.engine, name, grants), |store| pre.instantiate(store), f)
            .map_err(|failure| OpError::runtime(failure.message))
    }

    /// A call whose result is the driver's own `result<T, driver-error>`.
    fn op<T>(&mut self, op: &str, f: impl FnOnce(&mut Store<HostState>, &Bindings) -> wasmtime::Result<Result<T, wit::DriverError>>) -> Result<T, OpError> {
        self.call(op, f)?.map_err(OpError::from)
    }

    fn malformed(&self, what: &str, value: &str) -> OpError {
        OpError::runtime(format!("driver '{}' returned a malformed {what}: {value:?}", self.name))
    }

    fn checked_token(&self, what: &str, token: String) -> Result<String, OpError> {
        if is_transport_token(&token) { Ok(token) } else { Err(self.malformed(what, &token)) }
    }

    fn checked_messages(&self, messages: Vec<Message>) -> Result<Vec<Message>, OpError> {
        for m in &messages {
            if !is_transport_token(&m.id) {
                return Err(self.malformed("message id", &m.id));
            }
            if !is_transport_token(&m.at) {
                return Err(self.malformed("timestamp", &m.at));
            }
            for (what, name) in [("team", &m.team), ("sender", &m.from), ("recipient", &m.to)] {
                if check_name(what, name).is_err() {
                    return Err(self.malformed(what, name));
                }
            }
        }
        Ok(messages)
    }

    pub fn check(&mut self) -> Result<(), OpError> {
        self.op("check", |s, b| b.agmsg_storage_driver().call_check(s))
    }

    pub fn describe(&mut self) -> Result<Description, OpError> {
        self.call("describe", |s, b| b.agmsg_storage_driver().call_describe(s))
    }

    pub fn init(&mut self) -> Result<(), OpError> {
        self.op("init", |s, b| b.agmsg_storage_driver().call_init(s))
    }

    pub fn store_exists(&mut self) -> Result<bool, OpError> {
        self.op("store-exists", |s, b| b.agmsg_storage_driver().call_store_exists(s))
    }

    pub fn send(&mut self, team: &str, from: &str, to: &str, body: &str) -> Result<String, OpError> {
        let id = self.op("send", |s, b| b.agmsg_storage_driver().call_send(s, team, from, to, body))?;
        self.checked_token("message id", id)
    }

    pub fn list_unread(&mut self, team: &str, agent: &str, limit: Option<u32>) -> Result<Vec<Message>, OpError> {
        let messages = self.op("list-unread", |s, b| b.agmsg_storage_driver().call_list_unread(s, team, agent, limit))?;
        self.checked_messages(messages)
    }

    pub fn mark_read_batch(&mut self, team: &str, agent: &str, ids: &[String]) -> Result<(), OpError> {
        self.op("mark-read-batch", |s, b| b.agmsg_storage_driver().call_mark_read_batch(s, team, agent, ids))
    }

    pub fn read_cursor_get(&mut self, team: &str, agent: &str) -> Result<String, OpError> {
        let cursor = self.op("read-cursor-get", |s, b| b.agmsg_storage_driver().call_read_cursor_get(s, team, agent))?;
        self.checked_token("cursor", cursor)
    }

    pub fn read_cursor_consume(&mut self, team: &str, agent: &str, cursor: &str, ids: &[String]) -> Result<(), OpError> {
        self.op("read-cursor-consume", |s, b| b.agmsg_storage_driver().call_read_cursor_consume(s, team, agent, cursor, ids))
    }

    pub fn watch_tip(&mut self, pairs: &[Pair]) -> Result<String, OpError> {
        let cursor = self.op("watch-tip", |s, b| b.agmsg_storage_driver().call_watch_tip(s, pairs))?;
        self.checked_token("cursor", cursor)
    }

    pub fn watch_after(&mut self, cursor: &str, pairs: &[Pair]) -> Result<WatchBatch, OpError> {
        let batch = self.op("watch-after", |s, b| b.agmsg_storage_driver().call_watch_after(s, cursor, pairs))?;
        Ok(WatchBatch { messages: self.checked_messages(batch.messages)?, cursor: self.checked_token("cursor", batch.cursor)? })
    }

    pub fn history(&mut self, team: &str, agent: Option<&str>, limit: Option<u32>) -> Result<Vec<Message>, OpError> {
        let messages = self.op("history", |s, b| b.agmsg_storage_driver().call_history(s, team, agent, limit))?;
        self.checked_messages(messages)
    }

    pub fn compact(&mut self) -> Result<(), OpError> {
        self.op("compact", |s, b| b.agmsg_storage_driver().call_compact(s))
    }

    /// Stream the whole v1 event log, page by page, to `sink`.
    pub fn export_events(&mut self, mut sink: impl FnMut(&[Event]) -> Result<(), OpError>) -> Result<(), OpError> {
        const PAGE: u32 = 1000;
        let exporter = self.op("export", |s, b| b.agmsg_storage_driver().call_export_events(s))?;
        let result = (|| loop {
            let page = self.op("export", |s, b| b.agmsg_storage_driver().exporter().call_next_page(s, exporter, PAGE))?;
            if page.is_empty() {
                return Ok(());
            }
            if page.len() > PAGE as usize {
                return Err(OpError::runtime(format!("driver '{}' returned an oversized export page", self.name)));
            }
            sink(&page)?;
        })();
        self.drop_resource(exporter);
        result
    }

    /// Apply `events` all or nothing.
    pub fn import_events(&mut self, events: &[Event]) -> Result<(), OpError> {
        const PAGE: usize = 1000;
        let importer = self.op("import", |s, b| b.agmsg_storage_driver().call_import_events(s))?;
        let result = (|| {
            for page in events.chunks(PAGE) {
                self.op("import", |s, b| b.agmsg_storage_driver().importer().call_push_page(s, importer, page))?;
            }
            self.op("import", |s, b| b.agmsg_storage_driver().importer().call_commit(s, importer))
        })();
        self.drop_resource(importer);
        result
    }

    fn drop_resource(&mut self, resource: ResourceAny) {
        self.instance.cleanup(|store| resource.resource_drop(store));
    }
}
