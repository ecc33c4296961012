//! The storage axis: implement [`StorageDriver`] and register it with [`export_storage_driver!`].
//!
//! The SDK checks every team and agent name (and every subscription pair) against the contract's name
//! rules before your driver sees it, so a driver only handles well-formed input.

use std::cell::RefCell;

use crate::bindings::exports::agmsg::storage::driver::{self as wit, Guest, GuestExporter, GuestImporter};

pub use crate::bindings::agmsg::storage::types::{
    Description, Directive, DriverError, Event, Message, Pair, ReadMark, Status, StoreFile, WatchBatch,
};
pub use crate::lock::{LockFailure, StoreLock};

impl DriverError {
    /// A `runtime_error` (13) with a message.
    pub fn runtime(message: impl Into<String>) -> DriverError {
        DriverError { status: Status::RuntimeError, message: message.into(), directive: None }
    }

    /// A `corrupt_state` (12) with a message.
    pub fn corrupt(message: impl Into<String>) -> DriverError {
        DriverError { status: Status::CorruptState, message: message.into(), directive: None }
    }

    /// A `missing_deps` (10) with the directive that tells the user how to install what is missing.
    pub fn missing_deps(reason: impl Into<String>, commands: Vec<String>) -> DriverError {
        let reason = reason.into();
        DriverError {
            status: Status::MissingDeps,
            message: reason.clone(),
            directive: Some(Directive { kind: "install_deps".into(), commands, reason }),
        }
    }
}

impl From<crate::NameError> for DriverError {
    fn from(e: crate::NameError) -> Self {
        DriverError::runtime(e.to_string())
    }
}

impl From<LockFailure> for DriverError {
    fn from(e: LockFailure) -> Self {
        DriverError::runtime(e.to_string())
    }
}

/// A storage driver: the whole §2 contract. Every method runs inside the sandbox; the store directory is
/// [`crate::STORE_DIR`].
pub trait StorageDriver {
    /// Verify the driver can activate; a missing dependency is [`DriverError::missing_deps`].
    fn check(&self) -> Result<(), DriverError> {
        Ok(())
    }
    fn describe(&self) -> Description;
    fn init(&self) -> Result<(), DriverError>;
    fn store_exists(&self) -> Result<bool, DriverError>;
    fn send(&self, team: &str, from: &str, to: &str, body: &str) -> Result<String, DriverError>;
    fn list_unread(&self, team: &str, agent: &str, limit: Option<u32>) -> Result<Vec<Message>, DriverError>;
    fn mark_read_batch(&self, team: &str, agent: &str, ids: &[String]) -> Result<(), DriverError>;
    fn read_cursor_get(&self, team: &str, agent: &str) -> Result<String, DriverError>;
    fn read_cursor_consume(&self, team: &str, agent: &str, cursor: &str, ids: &[String]) -> Result<(), DriverError>;
    fn watch_tip(&self, pairs: &[Pair]) -> Result<String, DriverError>;
    fn watch_after(&self, cursor: &str, pairs: &[Pair]) -> Result<WatchBatch, DriverError>;
    fn history(&self, team: &str, agent: Option<&str>, limit: Option<u32>) -> Result<Vec<Message>, DriverError>;
    /// Start a consistent export of the v1 event stream in store order.
    fn export_events(&self) -> Result<Box<dyn EventExporter>, DriverError>;
    /// Start an all-or-nothing import.
    fn import_events(&self) -> Result<Box<dyn EventImporter>, DriverError>;
    fn compact(&self) -> Result<(), DriverError>;
}

/// A snapshot being read page by page.
pub trait EventExporter {
    /// The next at most `max` events; an empty page ends the export.
    fn next_page(&mut self, max: u32) -> Result<Vec<Event>, DriverError>;
}

/// An import being staged: nothing is visible until [`EventImporter::commit`], and dropping an importer
/// that was not committed discards what it staged.
pub trait EventImporter {
    fn push_page(&mut self, events: Vec<Event>) -> Result<(), DriverError>;
    fn commit(&mut self) -> Result<(), DriverError>;
}

/// Register `$driver` (a type implementing [`StorageDriver`] and `Default`) as this component's storage
/// driver.
#[macro_export]
macro_rules! export_storage_driver {
    ($driver:ty) => {
        #[doc(hidden)]
        #[unsafe(no_mangle)]
        pub fn __agmsg_new_storage_driver() -> ::std::boxed::Box<dyn $crate::storage::StorageDriver> {
            ::std::boxed::Box::new(<$driver as ::core::default::Default>::default())
        }
    };
}

unsafe extern "Rust" {
    fn __agmsg_new_storage_driver() -> Box<dyn StorageDriver>;
}

thread_local! {
    static DRIVER: Box<dyn StorageDriver> = unsafe { __agmsg_new_storage_driver() };
}

fn with_driver<T>(f: impl FnOnce(&dyn StorageDriver) -> T) -> T {
    DRIVER.with(|driver| f(driver.as_ref()))
}

fn check_team_agent(team: &str, agent: &str) -> Result<(), DriverError> {
    crate::check_name("team", team)?;
    crate::check_name("agent", agent)?;
    Ok(())
}

/// All pairs of one watch call must be well-formed and share one team.
fn check_pairs(pairs: &[Pair]) -> Result<(), DriverError> {
    let Some(first) = pairs.first() else {
        return Err(DriverError::runtime("at least one team:agent pair is required"));
    };
    for pair in pairs {
        check_team_agent(&pair.team, &pair.agent)?;
        if pair.team != first.team {
            return Err(DriverError::runtime(format!(
                "one call cannot span teams ({}, {})",
                first.team, pair.team
            )));
        }
    }
    Ok(())
}

#[doc(hidden)]
pub struct Component;

#[doc(hidden)]
pub struct ExporterResource(RefCell<Box<dyn EventExporter>>);

#[doc(hidden)]
pub struct ImporterResource(RefCell<Box<dyn EventImporter>>);

impl GuestExporter for ExporterResource {
    fn next_page(&self, max: u32) -> Result<Vec<Event>, DriverError> {
        self.0.borrow_mut().next_page(max)
    }
}

impl GuestImporter for ImporterResource {
    fn push_page(&self, events: Vec<Event>) -> Result<(), DriverError> {
        self.0.borrow_mut().push_page(events)
    }
    fn commit(&self) -> Result<(), DriverError> {
        self.0.borrow_mut().commit()
    }
}

impl Guest for Component {
    type Exporter = ExporterResource;
    type Importer = ImporterResource;

    fn check() -> Result<(), DriverError> {
        with_driver(|d| d.check())
    }
    fn describe() -> Description {
        with_driver(|d| d.describe())
    }
    fn init() -> Result<(), DriverError> {
        with_driver(|d| d.init())
    }
    fn store_exists() -> Result<bool, DriverError> {
        with_driver(|d| d.store_exists())
    }
    fn send(team: String, sender: String, recipient: String, body: String) -> Result<String, DriverError> {
        crate::check_name("team", &team)?;
        crate::check_name("sender", &sender)?;
        crate::check_name("recipient", &recipient)?;
        with_driver(|d| d.send(&team, &sender, &recipient, &body))
    }
    fn list_unread(team: String, agent: String, limit: Option<u32>) -> Result<Vec<Message>, DriverError> {
        check_team_agent(&team, &agent)?;
        with_driver(|d| d.list_unread(&team, &agent, limit))
    }
    fn mark_read_batch(team: String, agent: String, ids: Vec<String>) -> Result<(), DriverError> {
        check_team_agent(&team, &agent)?;
        with_driver(|d| d.mark_read_batch(&team, &agent, &ids))
    }
    fn read_cursor_get(team: String, agent: String) -> Result<String, DriverError> {
        check_team_agent(&team, &agent)?;
        with_driver(|d| d.read_cursor_get(&team, &agent))
    }
    fn read_cursor_consume(team: String, agent: String, cursor: String, ids: Vec<String>) -> Result<(), DriverError> {
        check_team_agent(&team, &agent)?;
        with_driver(|d| d.read_cursor_consume(&team, &agent, &cursor, &ids))
    }
    fn watch_tip(pairs: Vec<Pair>) -> Result<String, DriverError> {
        check_pairs(&pairs)?;
        with_driver(|d| d.watch_tip(&pairs))
    }
    fn watch_after(cursor: String, pairs: Vec<Pair>) -> Result<WatchBatch, DriverError> {
        check_pairs(&pairs)?;
        with_driver(|d| d.watch_after(&cursor, &pairs))
    }
    fn history(team: String, agent: Option<String>, limit: Option<u32>) -> Result<Vec<Message>, DriverError> {
        crate::check_name("team", &team)?;
        if let Some(agent) = &agent {
            crate::check_name("agent", agent)?;
        }
        with_driver(|d| d.history(&team, agent.as_deref(), limit))
    }
    fn export_events() -> Result<wit::Exporter, DriverError> {
        let exporter = with_driver(|d| d.export_events())?;
        Ok(wit::Exporter::new(ExporterResource(RefCell::new(exporter))))
    }
    fn import_events() -> Result<wit::Importer, DriverError> {
        let importer = with_driver(|d| d.import_events())?;
        Ok(wit::Importer::new(ImporterResource(RefCell::new(importer))))
    }
    fn compact() -> Result<(), DriverError> {
        with_driver(|d| d.compact())
    }
}

crate::bindings::export!(Component with_types_in crate::bindings);
