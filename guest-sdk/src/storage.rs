//! The storage axis: implement [`StorageDriver`] and register it with
//! [`export_storage_driver!`](crate::export_storage_driver).
//!
//! For storage drivers. The SDK checks every team and agent name (and every subscription
//! pair) against the contract's name rules before your driver sees it, so a driver only handles
//! well-formed input.
//!
//! The ops are small on purpose; agmsg's commands compose them. `agmsg-host inbox` takes the tip,
//! lists the unread messages, and consumes exactly the ones it printed; `watch` polls from the pair's
//! read cursor and consumes what each poll printed. Written against the trait, that is:
//!
//! ```
//! use agmsg_guest_sdk::storage::{DriverError, Pair, StorageDriver};
//!
//! fn inbox(store: &dyn StorageDriver, team: &str, agent: &str) -> Result<(), DriverError> {
//!     let pair = Pair { team: team.into(), agent: agent.into() };
//!     let tip = store.watch_tip(std::slice::from_ref(&pair))?;
//!     let unread = store.list_unread(team, agent, None)?;
//!     let shown: Vec<String> = unread.iter().map(|m| m.id.clone()).collect(); // after printing them
//!     if !shown.is_empty() {
//!         store.read_cursor_consume(team, agent, &tip, &shown)?;
//!     }
//!     Ok(())
//! }
//!
//! fn watch_once(store: &dyn StorageDriver, team: &str, agent: &str) -> Result<(), DriverError> {
//!     let pair = Pair { team: team.into(), agent: agent.into() };
//!     let cursor = store.read_cursor_get(team, agent)?;
//!     let batch = store.watch_after(&cursor, std::slice::from_ref(&pair))?;
//!     let shown: Vec<String> = batch.messages.iter().map(|m| m.id.clone()).collect();
//!     if batch.cursor != cursor || !shown.is_empty() {
//!         store.read_cursor_consume(team, agent, &batch.cursor, &shown)?;
//!     }
//!     Ok(())
//! }
//! ```
//!
//! A crash between printing and consuming delivers the messages again; a message that was not shown
//! is never consumed. The crate-level docs hold a complete driver.

use std::cell::RefCell;

use crate::bindings::storage::exports::agmsg::storage::driver::{self as wit, Guest, GuestExporter, GuestImporter};
use crate::bindings::storage_live::exports::agmsg::storage::live::Guest as LiveGuest;
use crate::bindings::storage_purge::exports::agmsg::storage::purge::Guest as PurgeGuest;
use crate::bindings::storage_receipts::exports::agmsg::storage::receipts::Guest as ReceiptsGuest;
use crate::bindings::storage_rename::exports::agmsg::storage::rename::Guest as RenameGuest;

/// The driver's registry metadata, returned by [`StorageDriver::describe`]: its `name`, a one-line
/// `backend` description, its `capabilities`, and the `store_file` agmsg shows as `<key>=<path>`
/// (`path` relative to the store directory).
///
/// ```
/// use agmsg_guest_sdk::storage::{Description, StoreFile};
///
/// let description = Description {
///     name: "jsonl".into(),
///     backend: "append-only JSON lines".into(),
///     capabilities: Vec::new(),
///     store_file: Some(StoreFile { key: "log".into(), path: "events.jsonl".into() }),
/// };
/// # let _ = description;
/// ```
pub use crate::bindings::storage::agmsg::storage::types::Description;

/// A §1.6 directive carried by a `missing_deps` [`DriverError`]: a `kind` (`install_deps`, ...), the
/// `commands` that fix the problem, and the `reason`. [`DriverError::missing_deps`] builds one.
///
/// ```
/// use agmsg_guest_sdk::storage::DriverError;
///
/// let error = DriverError::missing_deps("sqlite3 is not installed", vec!["apt-get install sqlite3".into()]);
/// let directive = error.directive.unwrap();
/// assert_eq!(directive.kind, "install_deps");
/// assert_eq!(directive.commands, ["apt-get install sqlite3"]);
/// ```
pub use crate::bindings::storage::agmsg::storage::types::Directive;

/// How a storage op fails: a [`Status`], a `message` for the user, and for `missing_deps` a
/// [`Directive`]. Build one with [`DriverError::runtime`], [`DriverError::corrupt`] or
/// [`DriverError::missing_deps`]; a [`NameError`](crate::NameError) and a [`LockFailure`] convert into
/// a `runtime_error` with `?`.
///
/// ```
/// use agmsg_guest_sdk::storage::{DriverError, Status};
///
/// fn position(cursor: &str) -> Result<u64, DriverError> {
///     cursor.parse().map_err(|_| DriverError::runtime(format!("not a cursor: {cursor:?}")))
/// }
/// let error = position("abc").unwrap_err();
/// assert_eq!(error.status, Status::RuntimeError);
/// assert_eq!(error.message, "not a cursor: \"abc\"");
/// ```
pub use crate::bindings::storage::agmsg::storage::types::DriverError;

/// One event of the v1 event log, the unit of export and import: a message sent or a read mark.
///
/// ```
/// use agmsg_guest_sdk::storage::Event;
///
/// fn describe(event: &Event) -> String {
///     match event {
///         Event::MessageSent(m) => format!("{} -> {}: {}", m.from, m.to, m.body),
///         Event::MessageRead(r) => format!("{} read {}", r.agent, r.msg_id),
///     }
/// }
/// # let _ = describe;
/// ```
pub use crate::bindings::storage::agmsg::storage::types::Event;

/// A message as stored and delivered: its UUIDv7 `id`, `team`, sender `from`, recipient `to`, `body`,
/// and `at`, when it was sent.
///
/// ```
/// use agmsg_guest_sdk::ids::{new_id, now_utc};
/// use agmsg_guest_sdk::storage::Message;
///
/// let message = Message {
///     id: new_id(),
///     team: "dev".into(),
///     from: "alice".into(),
///     to: "bob".into(),
///     body: "the build is green".into(),
///     at: now_utc(),
/// };
/// assert_eq!(message.to, "bob");
/// ```
pub use crate::bindings::storage::agmsg::storage::types::Message;

/// A `<team>:<agent>` subscription of a watch op, already split and checked by the SDK. All the pairs
/// of one call share one team.
///
/// ```
/// use agmsg_guest_sdk::storage::{Message, Pair};
///
/// fn addressed_to(pairs: &[Pair], m: &Message) -> bool {
///     pairs.iter().any(|p| p.team == m.team && p.agent == m.to)
/// }
/// # let _ = addressed_to;
/// ```
pub use crate::bindings::storage::agmsg::storage::types::Pair;

/// A read mark: the event that says `agent` of `team` read the message `msg_id`. It has an `id` of its
/// own (a UUIDv7, as every event) and an `at`.
///
/// ```
/// use agmsg_guest_sdk::ids::{new_id, now_utc};
/// use agmsg_guest_sdk::storage::{Message, ReadMark};
///
/// fn read_by_recipient(m: &Message) -> ReadMark {
///     ReadMark { id: new_id(), msg_id: m.id.clone(), team: m.team.clone(), agent: m.to.clone(), at: now_utc() }
/// }
/// # let _ = read_by_recipient;
/// ```
pub use crate::bindings::storage::agmsg::storage::types::ReadMark;

/// The status of a failed op, which sets agmsg's status word and exit code.
///
/// ```
/// use agmsg_guest_sdk::storage::{DriverError, Status};
///
/// fn exit_code(error: &DriverError) -> u8 {
///     match error.status {
///         Status::MissingDeps => 10,
///         Status::CorruptState => 12,
///         Status::RuntimeError => 13,
///     }
/// }
/// assert_eq!(exit_code(&DriverError::corrupt("bad line")), 12);
/// ```
pub use crate::bindings::storage::agmsg::storage::types::Status;

/// The store's main file, as [`Description::store_file`] reports it.
///
/// ```
/// use agmsg_guest_sdk::storage::StoreFile;
///
/// let db = StoreFile { key: "db".into(), path: "messages.db".into() };
/// # let _ = db;
/// ```
pub use crate::bindings::storage::agmsg::storage::types::StoreFile;

/// What one [`StorageDriver::watch_after`] poll returns: the unread `messages` after the cursor, for
/// the subscribed pairs, oldest first, and the `cursor` to resume from.
///
/// ```
/// use agmsg_guest_sdk::storage::WatchBatch;
///
/// // Nothing new, but the tip moved on from "41": the cursor still advances.
/// let batch = WatchBatch { messages: Vec::new(), cursor: "42".into() };
/// # let _ = batch;
/// ```
pub use crate::bindings::storage::agmsg::storage::types::WatchBatch;

pub use crate::lock::{LockFailure, StoreLock};

impl DriverError {
    /// A `runtime_error` (13) with a message.
    ///
    /// The status for every failure that is neither a missing dependency nor a damaged store: bad
    /// input, a failed write, a busy lock.
    ///
    /// ```
    /// use agmsg_guest_sdk::storage::{DriverError, Status};
    ///
    /// let error = DriverError::runtime("one call cannot span teams");
    /// assert_eq!(error.status, Status::RuntimeError);
    /// assert!(error.directive.is_none());
    /// ```
    pub fn runtime(message: impl Into<String>) -> DriverError {
        DriverError { status: Status::RuntimeError, message: message.into(), directive: None }
    }

    /// A `corrupt_state` (12) with a message.
    ///
    /// For a store that exists but cannot be read as it should: agmsg tells the user it needs manual
    /// repair rather than retrying. Say where the damage is.
    ///
    /// ```
    /// use agmsg_guest_sdk::storage::{DriverError, Status};
    ///
    /// let line = 12;
    /// let error = DriverError::corrupt(format!("events.jsonl line {line}: not JSON"));
    /// assert_eq!(error.status, Status::CorruptState);
    /// ```
    pub fn corrupt(message: impl Into<String>) -> DriverError {
        DriverError { status: Status::CorruptState, message: message.into(), directive: None }
    }

    /// A `missing_deps` (10) with the directive that tells the user how to install what is missing.
    ///
    /// Typically the answer of [`StorageDriver::check`]. The `reason` is both the error's message and
    /// the directive's reason; the host adds the driver's name when it prints the directive.
    ///
    /// ```
    /// use agmsg_guest_sdk::storage::{DriverError, Status};
    ///
    /// let error = DriverError::missing_deps("the store needs sqlite3", vec!["apt-get install -y sqlite3".into()]);
    /// assert_eq!(error.status, Status::MissingDeps);
    /// assert_eq!(error.message, "the store needs sqlite3");
    /// assert_eq!(error.directive.unwrap().reason, "the store needs sqlite3");
    /// ```
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
///
/// Implement it on a type that is also `Default`, and register that type with
/// [`export_storage_driver!`](crate::export_storage_driver). The host may call the ops of one instance
/// many times, or drop the instance (after a failure, or between processes) and start a new one: keep
/// nothing in memory that the store does not also hold. Hold the [`StoreLock`] for the whole span of
/// every op, reads included. The names an op receives are already checked.
///
/// Only [`check`](StorageDriver::check) has a default. The crate-level docs hold a complete driver;
/// the shape is:
///
/// ```
/// use agmsg_guest_sdk::storage::{DriverError, StorageDriver};
/// # use agmsg_guest_sdk::storage::*;
///
/// #[derive(Default)]
/// struct MyStore;
///
/// impl StorageDriver for MyStore {
///     fn init(&self) -> Result<(), DriverError> {
///         let _lock = StoreLock::acquire_default()?;
///         // create the store's files under agmsg_guest_sdk::STORE_DIR
///         Ok(())
///     }
///     // ... and every other op of the contract
/// #     fn describe(&self) -> Description { unimplemented!() }
/// #     fn store_exists(&self) -> Result<bool, DriverError> { unimplemented!() }
/// #     fn send(&self, _: &str, _: &str, _: &str, _: &str) -> Result<String, DriverError> { unimplemented!() }
/// #     fn list_unread(&self, _: &str, _: &str, _: Option<u32>) -> Result<Vec<Message>, DriverError> { unimplemented!() }
/// #     fn mark_read_batch(&self, _: &str, _: &str, _: &[String]) -> Result<(), DriverError> { unimplemented!() }
/// #     fn read_cursor_get(&self, _: &str, _: &str) -> Result<String, DriverError> { unimplemented!() }
/// #     fn read_cursor_consume(&self, _: &str, _: &str, _: &str, _: &[String]) -> Result<(), DriverError> { unimplemented!() }
/// #     fn watch_tip(&self, _: &[Pair]) -> Result<String, DriverError> { unimplemented!() }
/// #     fn watch_after(&self, _: &str, _: &[Pair]) -> Result<WatchBatch, DriverError> { unimplemented!() }
/// #     fn history(&self, _: &str, _: Option<&str>, _: Option<u32>) -> Result<Vec<Message>, DriverError> { unimplemented!() }
/// #     fn export_events(&self) -> Result<Box<dyn EventExporter>, DriverError> { unimplemented!() }
/// #     fn import_events(&self) -> Result<Box<dyn EventImporter>, DriverError> { unimplemented!() }
/// #     fn compact(&self) -> Result<(), DriverError> { unimplemented!() }
/// }
/// ```
pub trait StorageDriver {
    /// Verify the driver can activate; a missing dependency is [`DriverError::missing_deps`].
    ///
    /// `agmsg-host storage check` runs it, and so does `storage switch` before it makes this the
    /// configured driver. It should be cheap and must not create the store. The default answers
    /// `Ok(())`: nothing to check.
    ///
    /// ```
    /// use agmsg_guest_sdk::storage::{DriverError, StorageDriver};
    /// # use agmsg_guest_sdk::storage::*;
    ///
    /// struct Store;
    ///
    /// impl StorageDriver for Store {
    ///     fn check(&self) -> Result<(), DriverError> {
    ///         if std::fs::metadata(agmsg_guest_sdk::STORE_DIR).is_err() {
    ///             return Err(DriverError::runtime("the store directory is not mounted"));
    ///         }
    ///         Ok(())
    ///     }
    /// #     fn describe(&self) -> Description { unimplemented!() }
    /// #     fn init(&self) -> Result<(), DriverError> { unimplemented!() }
    /// #     fn store_exists(&self) -> Result<bool, DriverError> { unimplemented!() }
    /// #     fn send(&self, _: &str, _: &str, _: &str, _: &str) -> Result<String, DriverError> { unimplemented!() }
    /// #     fn list_unread(&self, _: &str, _: &str, _: Option<u32>) -> Result<Vec<Message>, DriverError> { unimplemented!() }
    /// #     fn mark_read_batch(&self, _: &str, _: &str, _: &[String]) -> Result<(), DriverError> { unimplemented!() }
    /// #     fn read_cursor_get(&self, _: &str, _: &str) -> Result<String, DriverError> { unimplemented!() }
    /// #     fn read_cursor_consume(&self, _: &str, _: &str, _: &str, _: &[String]) -> Result<(), DriverError> { unimplemented!() }
    /// #     fn watch_tip(&self, _: &[Pair]) -> Result<String, DriverError> { unimplemented!() }
    /// #     fn watch_after(&self, _: &str, _: &[Pair]) -> Result<WatchBatch, DriverError> { unimplemented!() }
    /// #     fn history(&self, _: &str, _: Option<&str>, _: Option<u32>) -> Result<Vec<Message>, DriverError> { unimplemented!() }
    /// #     fn export_events(&self) -> Result<Box<dyn EventExporter>, DriverError> { unimplemented!() }
    /// #     fn import_events(&self) -> Result<Box<dyn EventImporter>, DriverError> { unimplemented!() }
    /// #     fn compact(&self) -> Result<(), DriverError> { unimplemented!() }
    /// }
    /// ```
    fn check(&self) -> Result<(), DriverError> {
        Ok(())
    }

    /// The driver's registry metadata; it never fails, so build it from constants.
    ///
    /// ```
    /// use agmsg_guest_sdk::storage::{Description, StorageDriver, StoreFile};
    /// # use agmsg_guest_sdk::storage::*;
    ///
    /// struct Store;
    ///
    /// impl StorageDriver for Store {
    ///     fn describe(&self) -> Description {
    ///         Description {
    ///             name: "sqlite".into(),
    ///             backend: "one SQLite database".into(),
    ///             capabilities: Vec::new(),
    ///             store_file: Some(StoreFile { key: "db".into(), path: "messages.db".into() }),
    ///         }
    ///     }
    /// #     fn init(&self) -> Result<(), DriverError> { unimplemented!() }
    /// #     fn store_exists(&self) -> Result<bool, DriverError> { unimplemented!() }
    /// #     fn send(&self, _: &str, _: &str, _: &str, _: &str) -> Result<String, DriverError> { unimplemented!() }
    /// #     fn list_unread(&self, _: &str, _: &str, _: Option<u32>) -> Result<Vec<Message>, DriverError> { unimplemented!() }
    /// #     fn mark_read_batch(&self, _: &str, _: &str, _: &[String]) -> Result<(), DriverError> { unimplemented!() }
    /// #     fn read_cursor_get(&self, _: &str, _: &str) -> Result<String, DriverError> { unimplemented!() }
    /// #     fn read_cursor_consume(&self, _: &str, _: &str, _: &str, _: &[String]) -> Result<(), DriverError> { unimplemented!() }
    /// #     fn watch_tip(&self, _: &[Pair]) -> Result<String, DriverError> { unimplemented!() }
    /// #     fn watch_after(&self, _: &str, _: &[Pair]) -> Result<WatchBatch, DriverError> { unimplemented!() }
    /// #     fn history(&self, _: &str, _: Option<&str>, _: Option<u32>) -> Result<Vec<Message>, DriverError> { unimplemented!() }
    /// #     fn export_events(&self) -> Result<Box<dyn EventExporter>, DriverError> { unimplemented!() }
    /// #     fn import_events(&self) -> Result<Box<dyn EventImporter>, DriverError> { unimplemented!() }
    /// #     fn compact(&self) -> Result<(), DriverError> { unimplemented!() }
    /// }
    ///
    /// assert_eq!(Store.describe().name, "sqlite");
    /// ```
    fn describe(&self) -> Description;

    /// Create the store in [`crate::STORE_DIR`]. Idempotent: on an existing store it changes nothing
    /// (and may upgrade the store's format).
    ///
    /// ```no_run
    /// use std::fs::OpenOptions;
    /// use agmsg_guest_sdk::STORE_DIR;
    /// use agmsg_guest_sdk::storage::{DriverError, StorageDriver, StoreLock};
    /// # use agmsg_guest_sdk::storage::*;
    ///
    /// struct Store;
    ///
    /// impl StorageDriver for Store {
    ///     fn init(&self) -> Result<(), DriverError> {
    ///         let _lock = StoreLock::acquire_default()?;
    ///         // `create` without `truncate`: an existing log is kept as it is.
    ///         OpenOptions::new()
    ///             .create(true)
    ///             .append(true)
    ///             .open(format!("{STORE_DIR}/events.jsonl"))
    ///             .map_err(|e| DriverError::runtime(format!("events.jsonl: {e}")))?;
    ///         Ok(())
    ///     }
    /// #     fn describe(&self) -> Description { unimplemented!() }
    /// #     fn store_exists(&self) -> Result<bool, DriverError> { unimplemented!() }
    /// #     fn send(&self, _: &str, _: &str, _: &str, _: &str) -> Result<String, DriverError> { unimplemented!() }
    /// #     fn list_unread(&self, _: &str, _: &str, _: Option<u32>) -> Result<Vec<Message>, DriverError> { unimplemented!() }
    /// #     fn mark_read_batch(&self, _: &str, _: &str, _: &[String]) -> Result<(), DriverError> { unimplemented!() }
    /// #     fn read_cursor_get(&self, _: &str, _: &str) -> Result<String, DriverError> { unimplemented!() }
    /// #     fn read_cursor_consume(&self, _: &str, _: &str, _: &str, _: &[String]) -> Result<(), DriverError> { unimplemented!() }
    /// #     fn watch_tip(&self, _: &[Pair]) -> Result<String, DriverError> { unimplemented!() }
    /// #     fn watch_after(&self, _: &str, _: &[Pair]) -> Result<WatchBatch, DriverError> { unimplemented!() }
    /// #     fn history(&self, _: &str, _: Option<&str>, _: Option<u32>) -> Result<Vec<Message>, DriverError> { unimplemented!() }
    /// #     fn export_events(&self) -> Result<Box<dyn EventExporter>, DriverError> { unimplemented!() }
    /// #     fn import_events(&self) -> Result<Box<dyn EventImporter>, DriverError> { unimplemented!() }
    /// #     fn compact(&self) -> Result<(), DriverError> { unimplemented!() }
    /// }
    /// ```
    fn init(&self) -> Result<(), DriverError>;

    /// Whether a store is already present and initialized. It never creates one.
    ///
    /// ```no_run
    /// use agmsg_guest_sdk::STORE_DIR;
    /// use agmsg_guest_sdk::storage::{DriverError, StorageDriver};
    /// # use agmsg_guest_sdk::storage::*;
    ///
    /// struct Store;
    ///
    /// impl StorageDriver for Store {
    ///     fn store_exists(&self) -> Result<bool, DriverError> {
    ///         std::fs::exists(format!("{STORE_DIR}/events.jsonl"))
    ///             .map_err(|e| DriverError::runtime(e.to_string()))
    ///     }
    /// #     fn describe(&self) -> Description { unimplemented!() }
    /// #     fn init(&self) -> Result<(), DriverError> { unimplemented!() }
    /// #     fn send(&self, _: &str, _: &str, _: &str, _: &str) -> Result<String, DriverError> { unimplemented!() }
    /// #     fn list_unread(&self, _: &str, _: &str, _: Option<u32>) -> Result<Vec<Message>, DriverError> { unimplemented!() }
    /// #     fn mark_read_batch(&self, _: &str, _: &str, _: &[String]) -> Result<(), DriverError> { unimplemented!() }
    /// #     fn read_cursor_get(&self, _: &str, _: &str) -> Result<String, DriverError> { unimplemented!() }
    /// #     fn read_cursor_consume(&self, _: &str, _: &str, _: &str, _: &[String]) -> Result<(), DriverError> { unimplemented!() }
    /// #     fn watch_tip(&self, _: &[Pair]) -> Result<String, DriverError> { unimplemented!() }
    /// #     fn watch_after(&self, _: &str, _: &[Pair]) -> Result<WatchBatch, DriverError> { unimplemented!() }
    /// #     fn history(&self, _: &str, _: Option<&str>, _: Option<u32>) -> Result<Vec<Message>, DriverError> { unimplemented!() }
    /// #     fn export_events(&self) -> Result<Box<dyn EventExporter>, DriverError> { unimplemented!() }
    /// #     fn import_events(&self) -> Result<Box<dyn EventImporter>, DriverError> { unimplemented!() }
    /// #     fn compact(&self) -> Result<(), DriverError> { unimplemented!() }
    /// }
    /// ```
    fn store_exists(&self) -> Result<bool, DriverError>;

    /// Append a message from `from` to `to` in `team`, and return its new id, a UUIDv7 from
    /// [`crate::ids::new_id`], stamped with [`crate::ids::now_utc`]. The message is unread for its
    /// recipient until it is marked read or consumed.
    ///
    /// ```no_run
    /// use agmsg_guest_sdk::ids::{new_id, now_utc};
    /// use agmsg_guest_sdk::storage::{DriverError, Message, StorageDriver, StoreLock};
    /// # use agmsg_guest_sdk::storage::*;
    /// # fn append(_: &Message) -> Result<(), DriverError> { Ok(()) }
    ///
    /// struct Store;
    ///
    /// impl StorageDriver for Store {
    ///     fn send(&self, team: &str, from: &str, to: &str, body: &str) -> Result<String, DriverError> {
    ///         let _lock = StoreLock::acquire_default()?;
    ///         let message = Message {
    ///             id: new_id(),
    ///             team: team.into(),
    ///             from: from.into(),
    ///             to: to.into(),
    ///             body: body.into(),
    ///             at: now_utc(),
    ///         };
    ///         append(&message)?; // the driver's own write
    ///         Ok(message.id)
    ///     }
    /// #     fn describe(&self) -> Description { unimplemented!() }
    /// #     fn init(&self) -> Result<(), DriverError> { unimplemented!() }
    /// #     fn store_exists(&self) -> Result<bool, DriverError> { unimplemented!() }
    /// #     fn list_unread(&self, _: &str, _: &str, _: Option<u32>) -> Result<Vec<Message>, DriverError> { unimplemented!() }
    /// #     fn mark_read_batch(&self, _: &str, _: &str, _: &[String]) -> Result<(), DriverError> { unimplemented!() }
    /// #     fn read_cursor_get(&self, _: &str, _: &str) -> Result<String, DriverError> { unimplemented!() }
    /// #     fn read_cursor_consume(&self, _: &str, _: &str, _: &str, _: &[String]) -> Result<(), DriverError> { unimplemented!() }
    /// #     fn watch_tip(&self, _: &[Pair]) -> Result<String, DriverError> { unimplemented!() }
    /// #     fn watch_after(&self, _: &str, _: &[Pair]) -> Result<WatchBatch, DriverError> { unimplemented!() }
    /// #     fn history(&self, _: &str, _: Option<&str>, _: Option<u32>) -> Result<Vec<Message>, DriverError> { unimplemented!() }
    /// #     fn export_events(&self) -> Result<Box<dyn EventExporter>, DriverError> { unimplemented!() }
    /// #     fn import_events(&self) -> Result<Box<dyn EventImporter>, DriverError> { unimplemented!() }
    /// #     fn compact(&self) -> Result<(), DriverError> { unimplemented!() }
    /// }
    /// ```
    fn send(&self, team: &str, from: &str, to: &str, body: &str) -> Result<String, DriverError>;

    /// The messages to `agent` of `team` that it has not read, oldest first; `limit` keeps the oldest
    /// `limit` of them. Listing marks nothing read.
    ///
    /// ```no_run
    /// use agmsg_guest_sdk::storage::{DriverError, Message, StorageDriver, StoreLock};
    /// # use agmsg_guest_sdk::storage::*;
    /// # fn all_messages() -> Result<Vec<Message>, DriverError> { Ok(Vec::new()) }
    /// # fn is_read(_: &Message) -> bool { false }
    ///
    /// struct Store;
    ///
    /// impl StorageDriver for Store {
    ///     fn list_unread(&self, team: &str, agent: &str, limit: Option<u32>) -> Result<Vec<Message>, DriverError> {
    ///         let _lock = StoreLock::acquire_default()?;
    ///         let unread = all_messages()? // in store order
    ///             .into_iter()
    ///             .filter(|m| m.team == team && m.to == agent && !is_read(m));
    ///         Ok(unread.take(limit.map_or(usize::MAX, |n| n as usize)).collect())
    ///     }
    /// #     fn describe(&self) -> Description { unimplemented!() }
    /// #     fn init(&self) -> Result<(), DriverError> { unimplemented!() }
    /// #     fn store_exists(&self) -> Result<bool, DriverError> { unimplemented!() }
    /// #     fn send(&self, _: &str, _: &str, _: &str, _: &str) -> Result<String, DriverError> { unimplemented!() }
    /// #     fn mark_read_batch(&self, _: &str, _: &str, _: &[String]) -> Result<(), DriverError> { unimplemented!() }
    /// #     fn read_cursor_get(&self, _: &str, _: &str) -> Result<String, DriverError> { unimplemented!() }
    /// #     fn read_cursor_consume(&self, _: &str, _: &str, _: &str, _: &[String]) -> Result<(), DriverError> { unimplemented!() }
    /// #     fn watch_tip(&self, _: &[Pair]) -> Result<String, DriverError> { unimplemented!() }
    /// #     fn watch_after(&self, _: &str, _: &[Pair]) -> Result<WatchBatch, DriverError> { unimplemented!() }
    /// #     fn history(&self, _: &str, _: Option<&str>, _: Option<u32>) -> Result<Vec<Message>, DriverError> { unimplemented!() }
    /// #     fn export_events(&self) -> Result<Box<dyn EventExporter>, DriverError> { unimplemented!() }
    /// #     fn import_events(&self) -> Result<Box<dyn EventImporter>, DriverError> { unimplemented!() }
    /// #     fn compact(&self) -> Result<(), DriverError> { unimplemented!() }
    /// }
    /// ```
    fn list_unread(&self, team: &str, agent: &str, limit: Option<u32>) -> Result<Vec<Message>, DriverError>;

    /// Mark `ids` read for `agent` of `team`, and advance the pair's read frontier through the prefix
    /// of its messages that is now read, up to the tip.
    ///
    /// Marking is idempotent (marking a read message again changes nothing), marking a message read for
    /// one recipient never affects another, and an empty `ids` is a valid call that succeeds.
    ///
    /// ```no_run
    /// use agmsg_guest_sdk::ids::{new_id, now_utc};
    /// use agmsg_guest_sdk::storage::{DriverError, ReadMark, StorageDriver, StoreLock};
    /// # use agmsg_guest_sdk::storage::*;
    /// # fn unread_ids(_: &str, _: &str) -> Result<Vec<String>, DriverError> { Ok(Vec::new()) }
    /// # fn append(_: &[ReadMark]) -> Result<(), DriverError> { Ok(()) }
    ///
    /// struct Store;
    ///
    /// impl StorageDriver for Store {
    ///     fn mark_read_batch(&self, team: &str, agent: &str, ids: &[String]) -> Result<(), DriverError> {
    ///         let _lock = StoreLock::acquire_default()?;
    ///         let marks: Vec<ReadMark> = unread_ids(team, agent)?
    ///             .into_iter()
    ///             .filter(|id| ids.contains(id))
    ///             .map(|msg_id| ReadMark { id: new_id(), msg_id, team: team.into(), agent: agent.into(), at: now_utc() })
    ///             .collect();
    ///         append(&marks) // a store that keeps a frontier also moves it here
    ///     }
    /// #     fn describe(&self) -> Description { unimplemented!() }
    /// #     fn init(&self) -> Result<(), DriverError> { unimplemented!() }
    /// #     fn store_exists(&self) -> Result<bool, DriverError> { unimplemented!() }
    /// #     fn send(&self, _: &str, _: &str, _: &str, _: &str) -> Result<String, DriverError> { unimplemented!() }
    /// #     fn list_unread(&self, _: &str, _: &str, _: Option<u32>) -> Result<Vec<Message>, DriverError> { unimplemented!() }
    /// #     fn read_cursor_get(&self, _: &str, _: &str) -> Result<String, DriverError> { unimplemented!() }
    /// #     fn read_cursor_consume(&self, _: &str, _: &str, _: &str, _: &[String]) -> Result<(), DriverError> { unimplemented!() }
    /// #     fn watch_tip(&self, _: &[Pair]) -> Result<String, DriverError> { unimplemented!() }
    /// #     fn watch_after(&self, _: &str, _: &[Pair]) -> Result<WatchBatch, DriverError> { unimplemented!() }
    /// #     fn history(&self, _: &str, _: Option<&str>, _: Option<u32>) -> Result<Vec<Message>, DriverError> { unimplemented!() }
    /// #     fn export_events(&self) -> Result<Box<dyn EventExporter>, DriverError> { unimplemented!() }
    /// #     fn import_events(&self) -> Result<Box<dyn EventImporter>, DriverError> { unimplemented!() }
    /// #     fn compact(&self) -> Result<(), DriverError> { unimplemented!() }
    /// }
    /// ```
    fn mark_read_batch(&self, team: &str, agent: &str, ids: &[String]) -> Result<(), DriverError>;

    /// The pair's read frontier: a cursor at or before the pair's first unread message, so that a
    /// [`watch_after`](StorageDriver::watch_after) from it misses nothing. A driver that stores
    /// frontiers answers its zero cursor for a pair that has none yet.
    ///
    /// Cursors are the driver's own opaque tokens, but must pass [`crate::is_transport_token`] (no
    /// whitespace): the host prints them and hands them back.
    ///
    /// ```no_run
    /// use agmsg_guest_sdk::storage::{DriverError, StorageDriver, StoreLock};
    /// # use agmsg_guest_sdk::storage::*;
    /// # fn stored_frontier(_: &str, _: &str) -> Result<Option<u64>, DriverError> { Ok(None) }
    ///
    /// struct Store;
    ///
    /// impl StorageDriver for Store {
    ///     // This store's cursors are message positions in decimal; "0" comes before the first.
    ///     fn read_cursor_get(&self, team: &str, agent: &str) -> Result<String, DriverError> {
    ///         let _lock = StoreLock::acquire_default()?;
    ///         Ok(stored_frontier(team, agent)?.unwrap_or(0).to_string())
    ///     }
    /// #     fn describe(&self) -> Description { unimplemented!() }
    /// #     fn init(&self) -> Result<(), DriverError> { unimplemented!() }
    /// #     fn store_exists(&self) -> Result<bool, DriverError> { unimplemented!() }
    /// #     fn send(&self, _: &str, _: &str, _: &str, _: &str) -> Result<String, DriverError> { unimplemented!() }
    /// #     fn list_unread(&self, _: &str, _: &str, _: Option<u32>) -> Result<Vec<Message>, DriverError> { unimplemented!() }
    /// #     fn mark_read_batch(&self, _: &str, _: &str, _: &[String]) -> Result<(), DriverError> { unimplemented!() }
    /// #     fn read_cursor_consume(&self, _: &str, _: &str, _: &str, _: &[String]) -> Result<(), DriverError> { unimplemented!() }
    /// #     fn watch_tip(&self, _: &[Pair]) -> Result<String, DriverError> { unimplemented!() }
    /// #     fn watch_after(&self, _: &str, _: &[Pair]) -> Result<WatchBatch, DriverError> { unimplemented!() }
    /// #     fn history(&self, _: &str, _: Option<&str>, _: Option<u32>) -> Result<Vec<Message>, DriverError> { unimplemented!() }
    /// #     fn export_events(&self) -> Result<Box<dyn EventExporter>, DriverError> { unimplemented!() }
    /// #     fn import_events(&self) -> Result<Box<dyn EventImporter>, DriverError> { unimplemented!() }
    /// #     fn compact(&self) -> Result<(), DriverError> { unimplemented!() }
    /// }
    /// ```
    fn read_cursor_get(&self, team: &str, agent: &str) -> Result<String, DriverError>;

    /// Record `ids` as read for the pair, then move its frontier forward (never back) through the
    /// contiguous run of read messages, stopping at `cursor` and at the tip.
    ///
    /// The frontier must stop at the first message to the pair that is still unread: a message that
    /// was never shown is never consumed. A `cursor` that is not one of this driver's tokens is a
    /// `runtime_error`.
    ///
    /// ```no_run
    /// use agmsg_guest_sdk::storage::{DriverError, StorageDriver, StoreLock};
    /// # use agmsg_guest_sdk::storage::*;
    /// # fn record_reads(_: &str, _: &str, _: &[String]) -> Result<(), DriverError> { Ok(()) }
    /// # fn advance_frontier(_: &str, _: &str, _: u64) -> Result<(), DriverError> { Ok(()) }
    ///
    /// struct Store;
    ///
    /// impl StorageDriver for Store {
    ///     fn read_cursor_consume(&self, team: &str, agent: &str, cursor: &str, ids: &[String]) -> Result<(), DriverError> {
    ///         // Refuse a bad cursor before anything changes.
    ///         let upto: u64 = cursor.parse().map_err(|_| DriverError::runtime(format!("bad cursor {cursor:?}")))?;
    ///         let _lock = StoreLock::acquire_default()?;
    ///         record_reads(team, agent, ids)?;
    ///         advance_frontier(team, agent, upto) // through the read prefix, capped at upto and the tip
    ///     }
    /// #     fn describe(&self) -> Description { unimplemented!() }
    /// #     fn init(&self) -> Result<(), DriverError> { unimplemented!() }
    /// #     fn store_exists(&self) -> Result<bool, DriverError> { unimplemented!() }
    /// #     fn send(&self, _: &str, _: &str, _: &str, _: &str) -> Result<String, DriverError> { unimplemented!() }
    /// #     fn list_unread(&self, _: &str, _: &str, _: Option<u32>) -> Result<Vec<Message>, DriverError> { unimplemented!() }
    /// #     fn mark_read_batch(&self, _: &str, _: &str, _: &[String]) -> Result<(), DriverError> { unimplemented!() }
    /// #     fn read_cursor_get(&self, _: &str, _: &str) -> Result<String, DriverError> { unimplemented!() }
    /// #     fn watch_tip(&self, _: &[Pair]) -> Result<String, DriverError> { unimplemented!() }
    /// #     fn watch_after(&self, _: &str, _: &[Pair]) -> Result<WatchBatch, DriverError> { unimplemented!() }
    /// #     fn history(&self, _: &str, _: Option<&str>, _: Option<u32>) -> Result<Vec<Message>, DriverError> { unimplemented!() }
    /// #     fn export_events(&self) -> Result<Box<dyn EventExporter>, DriverError> { unimplemented!() }
    /// #     fn import_events(&self) -> Result<Box<dyn EventImporter>, DriverError> { unimplemented!() }
    /// #     fn compact(&self) -> Result<(), DriverError> { unimplemented!() }
    /// }
    /// ```
    fn read_cursor_consume(&self, team: &str, agent: &str, cursor: &str, ids: &[String]) -> Result<(), DriverError>;

    /// The cursor for "now": a [`watch_after`](StorageDriver::watch_after) from it delivers only
    /// messages sent later. All pairs share one team (the SDK refuses a call that spans teams).
    ///
    /// ```no_run
    /// use agmsg_guest_sdk::storage::{DriverError, Pair, StorageDriver, StoreLock};
    /// # use agmsg_guest_sdk::storage::*;
    /// # fn message_count() -> Result<u64, DriverError> { Ok(0) }
    ///
    /// struct Store;
    ///
    /// impl StorageDriver for Store {
    ///     // With positions as cursors, the tip is the number of messages (a global tip, so the
    ///     // pairs do not matter).
    ///     fn watch_tip(&self, _pairs: &[Pair]) -> Result<String, DriverError> {
    ///         let _lock = StoreLock::acquire_default()?;
    ///         Ok(message_count()?.to_string())
    ///     }
    /// #     fn describe(&self) -> Description { unimplemented!() }
    /// #     fn init(&self) -> Result<(), DriverError> { unimplemented!() }
    /// #     fn store_exists(&self) -> Result<bool, DriverError> { unimplemented!() }
    /// #     fn send(&self, _: &str, _: &str, _: &str, _: &str) -> Result<String, DriverError> { unimplemented!() }
    /// #     fn list_unread(&self, _: &str, _: &str, _: Option<u32>) -> Result<Vec<Message>, DriverError> { unimplemented!() }
    /// #     fn mark_read_batch(&self, _: &str, _: &str, _: &[String]) -> Result<(), DriverError> { unimplemented!() }
    /// #     fn read_cursor_get(&self, _: &str, _: &str) -> Result<String, DriverError> { unimplemented!() }
    /// #     fn read_cursor_consume(&self, _: &str, _: &str, _: &str, _: &[String]) -> Result<(), DriverError> { unimplemented!() }
    /// #     fn watch_after(&self, _: &str, _: &[Pair]) -> Result<WatchBatch, DriverError> { unimplemented!() }
    /// #     fn history(&self, _: &str, _: Option<&str>, _: Option<u32>) -> Result<Vec<Message>, DriverError> { unimplemented!() }
    /// #     fn export_events(&self) -> Result<Box<dyn EventExporter>, DriverError> { unimplemented!() }
    /// #     fn import_events(&self) -> Result<Box<dyn EventImporter>, DriverError> { unimplemented!() }
    /// #     fn compact(&self) -> Result<(), DriverError> { unimplemented!() }
    /// }
    /// ```
    fn watch_tip(&self, pairs: &[Pair]) -> Result<String, DriverError>;

    /// Every unread message after `cursor` addressed to one of `pairs`, oldest first, and the cursor
    /// to resume from.
    ///
    /// The returned cursor is the tip, and never behind `cursor`: it advances even when nothing new is
    /// for these pairs, and a cursor from the future is handed back unchanged. A `cursor` that is not
    /// one of this driver's tokens is an error.
    ///
    /// ```no_run
    /// use agmsg_guest_sdk::storage::{DriverError, Message, Pair, StorageDriver, StoreLock, WatchBatch};
    /// # use agmsg_guest_sdk::storage::*;
    /// # fn positioned() -> Result<Vec<(u64, Message)>, DriverError> { Ok(Vec::new()) }
    /// # fn is_read(_: &Message) -> bool { false }
    ///
    /// struct Store;
    ///
    /// impl StorageDriver for Store {
    ///     fn watch_after(&self, cursor: &str, pairs: &[Pair]) -> Result<WatchBatch, DriverError> {
    ///         let after: u64 = cursor.parse().map_err(|_| DriverError::runtime(format!("bad cursor {cursor:?}")))?;
    ///         let _lock = StoreLock::acquire_default()?;
    ///         let all = positioned()?; // (position, message), in store order
    ///         let tip = all.len() as u64;
    ///         let messages = all
    ///             .into_iter()
    ///             .filter(|(n, m)| *n > after && !is_read(m))
    ///             .filter(|(_, m)| pairs.iter().any(|p| p.team == m.team && p.agent == m.to))
    ///             .map(|(_, m)| m)
    ///             .collect();
    ///         Ok(WatchBatch { messages, cursor: tip.max(after).to_string() })
    ///     }
    /// #     fn describe(&self) -> Description { unimplemented!() }
    /// #     fn init(&self) -> Result<(), DriverError> { unimplemented!() }
    /// #     fn store_exists(&self) -> Result<bool, DriverError> { unimplemented!() }
    /// #     fn send(&self, _: &str, _: &str, _: &str, _: &str) -> Result<String, DriverError> { unimplemented!() }
    /// #     fn list_unread(&self, _: &str, _: &str, _: Option<u32>) -> Result<Vec<Message>, DriverError> { unimplemented!() }
    /// #     fn mark_read_batch(&self, _: &str, _: &str, _: &[String]) -> Result<(), DriverError> { unimplemented!() }
    /// #     fn read_cursor_get(&self, _: &str, _: &str) -> Result<String, DriverError> { unimplemented!() }
    /// #     fn read_cursor_consume(&self, _: &str, _: &str, _: &str, _: &[String]) -> Result<(), DriverError> { unimplemented!() }
    /// #     fn watch_tip(&self, _: &[Pair]) -> Result<String, DriverError> { unimplemented!() }
    /// #     fn history(&self, _: &str, _: Option<&str>, _: Option<u32>) -> Result<Vec<Message>, DriverError> { unimplemented!() }
    /// #     fn export_events(&self) -> Result<Box<dyn EventExporter>, DriverError> { unimplemented!() }
    /// #     fn import_events(&self) -> Result<Box<dyn EventImporter>, DriverError> { unimplemented!() }
    /// #     fn compact(&self) -> Result<(), DriverError> { unimplemented!() }
    /// }
    /// ```
    fn watch_after(&self, cursor: &str, pairs: &[Pair]) -> Result<WatchBatch, DriverError>;

    /// The messages of `team`, or with `agent` only those it sent or received, whatever their read
    /// state. `limit` keeps the most recent `limit`; the result is oldest to newest either way.
    ///
    /// ```no_run
    /// use agmsg_guest_sdk::storage::{DriverError, Message, StorageDriver, StoreLock};
    /// # use agmsg_guest_sdk::storage::*;
    /// # fn all_messages() -> Result<Vec<Message>, DriverError> { Ok(Vec::new()) }
    ///
    /// struct Store;
    ///
    /// impl StorageDriver for Store {
    ///     fn history(&self, team: &str, agent: Option<&str>, limit: Option<u32>) -> Result<Vec<Message>, DriverError> {
    ///         let _lock = StoreLock::acquire_default()?;
    ///         let mut found: Vec<Message> = all_messages()?
    ///             .into_iter()
    ///             .filter(|m| m.team == team && agent.is_none_or(|a| m.from == a || m.to == a))
    ///             .collect();
    ///         if let Some(n) = limit {
    ///             let older = found.len().saturating_sub(n as usize);
    ///             found.drain(..older);
    ///         }
    ///         Ok(found)
    ///     }
    /// #     fn describe(&self) -> Description { unimplemented!() }
    /// #     fn init(&self) -> Result<(), DriverError> { unimplemented!() }
    /// #     fn store_exists(&self) -> Result<bool, DriverError> { unimplemented!() }
    /// #     fn send(&self, _: &str, _: &str, _: &str, _: &str) -> Result<String, DriverError> { unimplemented!() }
    /// #     fn list_unread(&self, _: &str, _: &str, _: Option<u32>) -> Result<Vec<Message>, DriverError> { unimplemented!() }
    /// #     fn mark_read_batch(&self, _: &str, _: &str, _: &[String]) -> Result<(), DriverError> { unimplemented!() }
    /// #     fn read_cursor_get(&self, _: &str, _: &str) -> Result<String, DriverError> { unimplemented!() }
    /// #     fn read_cursor_consume(&self, _: &str, _: &str, _: &str, _: &[String]) -> Result<(), DriverError> { unimplemented!() }
    /// #     fn watch_tip(&self, _: &[Pair]) -> Result<String, DriverError> { unimplemented!() }
    /// #     fn watch_after(&self, _: &str, _: &[Pair]) -> Result<WatchBatch, DriverError> { unimplemented!() }
    /// #     fn export_events(&self) -> Result<Box<dyn EventExporter>, DriverError> { unimplemented!() }
    /// #     fn import_events(&self) -> Result<Box<dyn EventImporter>, DriverError> { unimplemented!() }
    /// #     fn compact(&self) -> Result<(), DriverError> { unimplemented!() }
    /// }
    /// ```
    fn history(&self, team: &str, agent: Option<&str>, limit: Option<u32>) -> Result<Vec<Message>, DriverError>;

    /// Start a consistent export of the v1 event stream in store order.
    ///
    /// The host then reads the [`EventExporter`] page by page until an empty page, and writes the file
    /// itself: the driver never opens the user's files. The events must be a consistent snapshot:
    /// either take it now, or keep the [`StoreLock`] in the exporter until it is dropped.
    ///
    /// ```no_run
    /// use agmsg_guest_sdk::storage::{DriverError, Event, EventExporter, StorageDriver, StoreLock};
    /// # use agmsg_guest_sdk::storage::*;
    /// # fn load_events() -> Result<Vec<Event>, DriverError> { Ok(Vec::new()) }
    ///
    /// struct Store;
    ///
    /// struct Snapshot(std::vec::IntoIter<Event>);
    ///
    /// impl EventExporter for Snapshot {
    ///     fn next_page(&mut self, max: u32) -> Result<Vec<Event>, DriverError> {
    ///         Ok(self.0.by_ref().take(max as usize).collect())
    ///     }
    /// }
    ///
    /// impl StorageDriver for Store {
    ///     fn export_events(&self) -> Result<Box<dyn EventExporter>, DriverError> {
    ///         let _lock = StoreLock::acquire_default()?; // only while the snapshot is read
    ///         Ok(Box::new(Snapshot(load_events()?.into_iter())))
    ///     }
    /// #     fn describe(&self) -> Description { unimplemented!() }
    /// #     fn init(&self) -> Result<(), DriverError> { unimplemented!() }
    /// #     fn store_exists(&self) -> Result<bool, DriverError> { unimplemented!() }
    /// #     fn send(&self, _: &str, _: &str, _: &str, _: &str) -> Result<String, DriverError> { unimplemented!() }
    /// #     fn list_unread(&self, _: &str, _: &str, _: Option<u32>) -> Result<Vec<Message>, DriverError> { unimplemented!() }
    /// #     fn mark_read_batch(&self, _: &str, _: &str, _: &[String]) -> Result<(), DriverError> { unimplemented!() }
    /// #     fn read_cursor_get(&self, _: &str, _: &str) -> Result<String, DriverError> { unimplemented!() }
    /// #     fn read_cursor_consume(&self, _: &str, _: &str, _: &str, _: &[String]) -> Result<(), DriverError> { unimplemented!() }
    /// #     fn watch_tip(&self, _: &[Pair]) -> Result<String, DriverError> { unimplemented!() }
    /// #     fn watch_after(&self, _: &str, _: &[Pair]) -> Result<WatchBatch, DriverError> { unimplemented!() }
    /// #     fn history(&self, _: &str, _: Option<&str>, _: Option<u32>) -> Result<Vec<Message>, DriverError> { unimplemented!() }
    /// #     fn import_events(&self) -> Result<Box<dyn EventImporter>, DriverError> { unimplemented!() }
    /// #     fn compact(&self) -> Result<(), DriverError> { unimplemented!() }
    /// }
    /// ```
    fn export_events(&self) -> Result<Box<dyn EventExporter>, DriverError>;

    /// Start an all-or-nothing import.
    ///
    /// The host has already parsed and validated the whole file; it pushes the events in pages to the
    /// returned [`EventImporter`] and then commits. Nothing may be visible before the commit, and
    /// importing the same events twice must change nothing the second time.
    ///
    /// ```no_run
    /// use agmsg_guest_sdk::storage::{DriverError, Event, EventImporter, StorageDriver, StoreLock};
    /// # use agmsg_guest_sdk::storage::*;
    /// # fn append_new(_: &[Event]) -> Result<(), DriverError> { Ok(()) }
    ///
    /// struct Store;
    ///
    /// /// Holds the store lock from the first page to the commit.
    /// struct Import {
    ///     _lock: StoreLock,
    ///     staged: Vec<Event>,
    /// }
    ///
    /// impl EventImporter for Import {
    ///     fn push_page(&mut self, events: Vec<Event>) -> Result<(), DriverError> {
    ///         self.staged.extend(events);
    ///         Ok(())
    ///     }
    ///     fn commit(&mut self) -> Result<(), DriverError> {
    ///         append_new(&std::mem::take(&mut self.staged)) // skips events already in the store
    ///     }
    /// }
    ///
    /// impl StorageDriver for Store {
    ///     fn import_events(&self) -> Result<Box<dyn EventImporter>, DriverError> {
    ///         Ok(Box::new(Import { _lock: StoreLock::acquire_default()?, staged: Vec::new() }))
    ///     }
    /// #     fn describe(&self) -> Description { unimplemented!() }
    /// #     fn init(&self) -> Result<(), DriverError> { unimplemented!() }
    /// #     fn store_exists(&self) -> Result<bool, DriverError> { unimplemented!() }
    /// #     fn send(&self, _: &str, _: &str, _: &str, _: &str) -> Result<String, DriverError> { unimplemented!() }
    /// #     fn list_unread(&self, _: &str, _: &str, _: Option<u32>) -> Result<Vec<Message>, DriverError> { unimplemented!() }
    /// #     fn mark_read_batch(&self, _: &str, _: &str, _: &[String]) -> Result<(), DriverError> { unimplemented!() }
    /// #     fn read_cursor_get(&self, _: &str, _: &str) -> Result<String, DriverError> { unimplemented!() }
    /// #     fn read_cursor_consume(&self, _: &str, _: &str, _: &str, _: &[String]) -> Result<(), DriverError> { unimplemented!() }
    /// #     fn watch_tip(&self, _: &[Pair]) -> Result<String, DriverError> { unimplemented!() }
    /// #     fn watch_after(&self, _: &str, _: &[Pair]) -> Result<WatchBatch, DriverError> { unimplemented!() }
    /// #     fn history(&self, _: &str, _: Option<&str>, _: Option<u32>) -> Result<Vec<Message>, DriverError> { unimplemented!() }
    /// #     fn export_events(&self) -> Result<Box<dyn EventExporter>, DriverError> { unimplemented!() }
    /// #     fn compact(&self) -> Result<(), DriverError> { unimplemented!() }
    /// }
    /// ```
    fn import_events(&self) -> Result<Box<dyn EventImporter>, DriverError>;

    /// Collapse redundant events (§2.7).
    ///
    /// Compaction must be idempotent and state-preserving: unread sets, histories and cursors answer as
    /// before, `message_sent` events are never touched, and only redundant read marks are coalesced. A
    /// store with nothing to collapse answers `Ok(())`.
    ///
    /// ```no_run
    /// use agmsg_guest_sdk::storage::{DriverError, StorageDriver, StoreLock};
    /// # use agmsg_guest_sdk::storage::*;
    /// # fn drop_duplicate_read_marks() -> Result<usize, DriverError> { Ok(0) }
    ///
    /// struct Store;
    ///
    /// impl StorageDriver for Store {
    ///     fn compact(&self) -> Result<(), DriverError> {
    ///         let _lock = StoreLock::acquire_default()?;
    ///         let dropped = drop_duplicate_read_marks()?; // rewrite through a temp file and a rename
    ///         agmsg_guest_sdk::log::debug(&format!("compact: {dropped} read marks folded"));
    ///         Ok(())
    ///     }
    /// #     fn describe(&self) -> Description { unimplemented!() }
    /// #     fn init(&self) -> Result<(), DriverError> { unimplemented!() }
    /// #     fn store_exists(&self) -> Result<bool, DriverError> { unimplemented!() }
    /// #     fn send(&self, _: &str, _: &str, _: &str, _: &str) -> Result<String, DriverError> { unimplemented!() }
    /// #     fn list_unread(&self, _: &str, _: &str, _: Option<u32>) -> Result<Vec<Message>, DriverError> { unimplemented!() }
    /// #     fn mark_read_batch(&self, _: &str, _: &str, _: &[String]) -> Result<(), DriverError> { unimplemented!() }
    /// #     fn read_cursor_get(&self, _: &str, _: &str) -> Result<String, DriverError> { unimplemented!() }
    /// #     fn read_cursor_consume(&self, _: &str, _: &str, _: &str, _: &[String]) -> Result<(), DriverError> { unimplemented!() }
    /// #     fn watch_tip(&self, _: &[Pair]) -> Result<String, DriverError> { unimplemented!() }
    /// #     fn watch_after(&self, _: &str, _: &[Pair]) -> Result<WatchBatch, DriverError> { unimplemented!() }
    /// #     fn history(&self, _: &str, _: Option<&str>, _: Option<u32>) -> Result<Vec<Message>, DriverError> { unimplemented!() }
    /// #     fn export_events(&self) -> Result<Box<dyn EventExporter>, DriverError> { unimplemented!() }
    /// #     fn import_events(&self) -> Result<Box<dyn EventImporter>, DriverError> { unimplemented!() }
    /// }
    /// ```
    fn compact(&self) -> Result<(), DriverError>;
}

/// A snapshot being read page by page.
///
/// Returned by [`StorageDriver::export_events`]. The host asks for pages until one is empty, then
/// drops the exporter (which releases whatever it holds, such as a [`StoreLock`]).
///
/// ```
/// use agmsg_guest_sdk::ids::{new_id, now_utc};
/// use agmsg_guest_sdk::storage::{DriverError, Event, EventExporter, ReadMark};
///
/// struct Snapshot(std::vec::IntoIter<Event>);
///
/// impl EventExporter for Snapshot {
///     fn next_page(&mut self, max: u32) -> Result<Vec<Event>, DriverError> {
///         Ok(self.0.by_ref().take(max as usize).collect())
///     }
/// }
///
/// let mark = |agent: &str| {
///     let (team, agent, msg_id) = ("dev".into(), agent.into(), new_id());
///     Event::MessageRead(ReadMark { id: new_id(), msg_id, team, agent, at: now_utc() })
/// };
/// let mut export = Snapshot(vec![mark("alice"), mark("bob"), mark("carol")].into_iter());
/// assert_eq!(export.next_page(2)?.len(), 2);
/// assert_eq!(export.next_page(2)?.len(), 1);
/// assert!(export.next_page(2)?.is_empty(), "the end");
/// # Ok::<(), DriverError>(())
/// ```
pub trait EventExporter {
    /// The next at most `max` events; an empty page ends the export.
    ///
    /// ```
    /// use agmsg_guest_sdk::storage::{DriverError, Event, EventExporter};
    ///
    /// /// Reads a long log in pages rather than all at once.
    /// struct Pages {
    ///     events: Vec<Event>,
    ///     next: usize,
    /// }
    ///
    /// impl EventExporter for Pages {
    ///     fn next_page(&mut self, max: u32) -> Result<Vec<Event>, DriverError> {
    ///         let end = self.events.len().min(self.next + max as usize);
    ///         let page = self.events[self.next..end].to_vec();
    ///         self.next = end;
    ///         Ok(page)
    ///     }
    /// }
    ///
    /// let mut empty = Pages { events: Vec::new(), next: 0 };
    /// assert!(empty.next_page(100)?.is_empty());
    /// # Ok::<(), DriverError>(())
    /// ```
    fn next_page(&mut self, max: u32) -> Result<Vec<Event>, DriverError>;
}

/// An import being staged: nothing is visible until [`EventImporter::commit`], and dropping an importer
/// that was not committed discards what it staged.
///
/// Returned by [`StorageDriver::import_events`]. The host pushes every page, then commits once; if
/// anything fails on the way it drops the importer instead.
///
/// ```
/// use std::cell::RefCell;
/// use std::rc::Rc;
/// use agmsg_guest_sdk::storage::{DriverError, Event, EventImporter};
///
/// /// Stages in memory; a commit publishes to `store` (a stand-in for the driver's files).
/// struct Staged {
///     staged: Vec<Event>,
///     store: Rc<RefCell<Vec<Event>>>,
/// }
///
/// impl EventImporter for Staged {
///     fn push_page(&mut self, events: Vec<Event>) -> Result<(), DriverError> {
///         self.staged.extend(events);
///         Ok(())
///     }
///     fn commit(&mut self) -> Result<(), DriverError> {
///         self.store.borrow_mut().append(&mut self.staged);
///         Ok(())
///     }
/// }
///
/// let store = Rc::new(RefCell::new(Vec::new()));
/// let mut abandoned = Staged { staged: Vec::new(), store: store.clone() };
/// abandoned.push_page(Vec::new())?;
/// drop(abandoned); // never committed: the store is unchanged
/// assert!(store.borrow().is_empty());
/// # Ok::<(), DriverError>(())
/// ```
pub trait EventImporter {
    /// Stage one page of events, in file order. An error fails the whole import (the host then drops
    /// the importer): for example an event whose id the store holds with different content.
    ///
    /// ```
    /// use agmsg_guest_sdk::storage::{DriverError, Event, EventImporter};
    ///
    /// struct Staged(Vec<Event>);
    ///
    /// impl EventImporter for Staged {
    ///     fn push_page(&mut self, events: Vec<Event>) -> Result<(), DriverError> {
    ///         if self.0.len() + events.len() > 1_000_000 {
    ///             return Err(DriverError::runtime("import too large for this store"));
    ///         }
    ///         self.0.extend(events);
    ///         Ok(())
    ///     }
    /// #   fn commit(&mut self) -> Result<(), DriverError> { Ok(()) }
    /// }
    ///
    /// let mut import = Staged(Vec::new());
    /// import.push_page(Vec::new())?;
    /// # Ok::<(), DriverError>(())
    /// ```
    fn push_page(&mut self, events: Vec<Event>) -> Result<(), DriverError>;

    /// Publish everything staged, atomically: after an error nothing of the import may be visible.
    /// Events the store already holds are skipped, so importing the same file twice changes nothing.
    ///
    /// ```no_run
    /// use agmsg_guest_sdk::storage::{DriverError, Event, EventImporter, StoreLock};
    /// # fn known(_: &Event) -> bool { false }
    /// # fn write_all_or_nothing(_: &[Event]) -> Result<(), DriverError> { Ok(()) }
    ///
    /// struct Staged(Vec<Event>);
    ///
    /// impl EventImporter for Staged {
    /// #   fn push_page(&mut self, events: Vec<Event>) -> Result<(), DriverError> { self.0.extend(events); Ok(()) }
    ///     fn commit(&mut self) -> Result<(), DriverError> {
    ///         let _lock = StoreLock::acquire_default()?;
    ///         let new: Vec<Event> = self.0.drain(..).filter(|e| !known(e)).collect();
    ///         write_all_or_nothing(&new) // e.g. one transaction, or a temp file and a rename
    ///     }
    /// }
    /// ```
    fn commit(&mut self) -> Result<(), DriverError>;
}

/// Register `$driver` (a type implementing [`StorageDriver`] and `Default`) as this component's storage
/// driver.
///
/// Call it once, at the top level of the driver crate. It generates the
/// component's exports, the `agmsg:storage/driver` interface, in the driver crate: invoking this macro is
/// what makes the component a storage driver, and nothing of the other axis is exported; the host then
/// creates one driver value per instance with `Default::default()`.
///
/// ```rust,standalone_crate
/// use agmsg_guest_sdk::storage::{DriverError, StorageDriver};
/// # use agmsg_guest_sdk::storage::*;
///
/// #[derive(Default)]
/// struct MyStore {
///     // configuration only: state belongs in the store directory
/// }
///
/// impl StorageDriver for MyStore {
///     fn init(&self) -> Result<(), DriverError> {
///         Ok(())
///     }
///     // ... every other op
/// #     fn describe(&self) -> Description { unimplemented!() }
/// #     fn store_exists(&self) -> Result<bool, DriverError> { unimplemented!() }
/// #     fn send(&self, _: &str, _: &str, _: &str, _: &str) -> Result<String, DriverError> { unimplemented!() }
/// #     fn list_unread(&self, _: &str, _: &str, _: Option<u32>) -> Result<Vec<Message>, DriverError> { unimplemented!() }
/// #     fn mark_read_batch(&self, _: &str, _: &str, _: &[String]) -> Result<(), DriverError> { unimplemented!() }
/// #     fn read_cursor_get(&self, _: &str, _: &str) -> Result<String, DriverError> { unimplemented!() }
/// #     fn read_cursor_consume(&self, _: &str, _: &str, _: &str, _: &[String]) -> Result<(), DriverError> { unimplemented!() }
/// #     fn watch_tip(&self, _: &[Pair]) -> Result<String, DriverError> { unimplemented!() }
/// #     fn watch_after(&self, _: &str, _: &[Pair]) -> Result<WatchBatch, DriverError> { unimplemented!() }
/// #     fn history(&self, _: &str, _: Option<&str>, _: Option<u32>) -> Result<Vec<Message>, DriverError> { unimplemented!() }
/// #     fn export_events(&self) -> Result<Box<dyn EventExporter>, DriverError> { unimplemented!() }
/// #     fn import_events(&self) -> Result<Box<dyn EventImporter>, DriverError> { unimplemented!() }
/// #     fn compact(&self) -> Result<(), DriverError> { unimplemented!() }
/// }
///
/// agmsg_guest_sdk::export_storage_driver!(MyStore);
/// ```
#[macro_export]
macro_rules! export_storage_driver {
    ($driver:ty) => {
        // The world's exports, expanded here in the driver crate: with them, and only with them, the
        // world's type information (its exports) reaches this component. A native build (a driver's unit
        // tests) is no component: it exports nothing, and only checks that `$driver` is a driver.
        const _: () = {
            type __AgmsgComponent = $crate::storage::Component<$driver>;
            #[cfg(target_arch = "wasm32")]
    $crate::bindings::storage::export!(__AgmsgComponent with_types_in $crate::bindings::storage);
            #[cfg(not(target_arch = "wasm32"))]
            const _: fn() -> $crate::storage::Description =
                <__AgmsgComponent as $crate::bindings::storage::exports::agmsg::storage::driver::Guest>::describe;
        };
    };
}

/// What [`LiveDriver::wait_after`] answers: [`Wake::Changed`] (a message may have arrived: the host reads
/// now) or [`Wake::TimedOut`] (the timeout passed with no sign of one).
///
/// ```
/// use agmsg_guest_sdk::storage::Wake;
///
/// fn woke(notified: bool) -> Wake {
///     if notified { Wake::Changed } else { Wake::TimedOut }
/// }
/// assert_eq!(woke(false), Wake::TimedOut);
/// ```
pub use crate::bindings::storage_live::exports::agmsg::storage::live::Wake;

/// The optional `live` interface (`agmsg:storage` 1.1.0): a driver whose store can tell it that something
/// was written (PostgreSQL's LISTEN/NOTIFY, a file watch) lets `agmsg-host watch` sleep until then
/// instead of polling. Implement it on the driver type and register it with
/// [`export_storage_live!`](crate::export_storage_live) next to
/// [`export_storage_driver!`](crate::export_storage_driver). A driver without it is polled, as every
/// 1.0.0 driver is.
///
/// It is a hint: after every wait the host reads through [`StorageDriver::watch_after`] from the
/// watcher's cursor. A wake with nothing new costs one read; a missed one delays the message until the
/// timeout, never loses it. `changed` when in doubt is always correct.
///
/// ```
/// use std::time::{Duration, Instant};
/// use agmsg_guest_sdk::storage::{DriverError, LiveDriver, Pair, Wake};
///
/// #[derive(Default)]
/// struct MyStore;
///
/// # fn messages_after(_: &str, _: &[Pair]) -> Result<bool, DriverError> { Ok(false) }
/// impl LiveDriver for MyStore {
///     fn wait_after(&self, cursor: &str, pairs: &[Pair], timeout_ms: u32) -> Result<Wake, DriverError> {
///         // Here: a store that can only be asked. Subscribe first, then look, then block on the
///         // subscription, so a write between the look and the block still wakes.
///         let until = Instant::now() + Duration::from_millis(timeout_ms.into());
///         while Instant::now() < until {
///             if messages_after(cursor, pairs)? {
///                 return Ok(Wake::Changed);
///             }
///             std::thread::sleep(Duration::from_millis(10).min(until - Instant::now()));
///         }
///         Ok(Wake::TimedOut)
///     }
/// }
/// # assert_eq!(MyStore.wait_after("0", &[], 1)?, Wake::TimedOut);
/// # Ok::<(), DriverError>(())
/// ```
pub trait LiveDriver {
    /// Block until a message to one of `pairs` (all of one team, checked by the SDK) may have been
    /// written after `cursor` (a cursor [`StorageDriver::watch_after`] returned), or until `timeout_ms`
    /// passes. A message already there answers [`Wake::Changed`] at once.
    ///
    /// Return within `timeout_ms` (plus the little an answer takes): the host asks for a timeout well
    /// inside its call deadline, and a call that outlives the deadline is stopped with an error.
    ///
    /// ```
    /// use agmsg_guest_sdk::storage::{DriverError, LiveDriver, Pair, Wake};
    ///
    /// struct Never;
    ///
    /// impl LiveDriver for Never {
    ///     fn wait_after(&self, _: &str, _: &[Pair], timeout_ms: u32) -> Result<Wake, DriverError> {
    ///         std::thread::sleep(std::time::Duration::from_millis(timeout_ms.into()));
    ///         Ok(Wake::TimedOut)
    ///     }
    /// }
    /// assert_eq!(Never.wait_after("0", &[], 1)?, Wake::TimedOut);
    /// # Ok::<(), DriverError>(())
    /// ```
    fn wait_after(&self, cursor: &str, pairs: &[Pair], timeout_ms: u32) -> Result<Wake, DriverError>;
}

/// Register `$driver` (the type given to [`export_storage_driver!`](crate::export_storage_driver), which
/// also implements [`LiveDriver`]) as this component's `agmsg:storage/live` export, the optional
/// interface of `agmsg:storage` 1.1.0.
///
/// Call it once, at the top level, next to `export_storage_driver!` and with the same type: both
/// exports reach one driver value per instance.
///
/// ```rust,standalone_crate
/// use agmsg_guest_sdk::storage::{DriverError, LiveDriver, Pair, StorageDriver, Wake};
/// # use agmsg_guest_sdk::storage::*;
///
/// #[derive(Default)]
/// struct MyStore;
///
/// impl StorageDriver for MyStore {
///     // ... every op of the contract
/// #     fn init(&self) -> Result<(), DriverError> { unimplemented!() }
/// #     fn describe(&self) -> Description { unimplemented!() }
/// #     fn store_exists(&self) -> Result<bool, DriverError> { unimplemented!() }
/// #     fn send(&self, _: &str, _: &str, _: &str, _: &str) -> Result<String, DriverError> { unimplemented!() }
/// #     fn list_unread(&self, _: &str, _: &str, _: Option<u32>) -> Result<Vec<Message>, DriverError> { unimplemented!() }
/// #     fn mark_read_batch(&self, _: &str, _: &str, _: &[String]) -> Result<(), DriverError> { unimplemented!() }
/// #     fn read_cursor_get(&self, _: &str, _: &str) -> Result<String, DriverError> { unimplemented!() }
/// #     fn read_cursor_consume(&self, _: &str, _: &str, _: &str, _: &[String]) -> Result<(), DriverError> { unimplemented!() }
/// #     fn watch_tip(&self, _: &[Pair]) -> Result<String, DriverError> { unimplemented!() }
/// #     fn watch_after(&self, _: &str, _: &[Pair]) -> Result<WatchBatch, DriverError> { unimplemented!() }
/// #     fn history(&self, _: &str, _: Option<&str>, _: Option<u32>) -> Result<Vec<Message>, DriverError> { unimplemented!() }
/// #     fn export_events(&self) -> Result<Box<dyn EventExporter>, DriverError> { unimplemented!() }
/// #     fn import_events(&self) -> Result<Box<dyn EventImporter>, DriverError> { unimplemented!() }
/// #     fn compact(&self) -> Result<(), DriverError> { unimplemented!() }
/// }
///
/// impl LiveDriver for MyStore {
///     fn wait_after(&self, _cursor: &str, _pairs: &[Pair], _timeout_ms: u32) -> Result<Wake, DriverError> {
///         Ok(Wake::Changed) // always correct, if no better than polling
///     }
/// }
///
/// agmsg_guest_sdk::export_storage_driver!(MyStore);
/// agmsg_guest_sdk::export_storage_live!(MyStore);
/// ```
#[macro_export]
macro_rules! export_storage_live {
    ($driver:ty) => {
        const _: () = {
            type __AgmsgLiveComponent = $crate::storage::Component<$driver>;
            #[cfg(target_arch = "wasm32")]
    $crate::bindings::storage_live::export!(__AgmsgLiveComponent with_types_in $crate::bindings::storage_live);
            #[cfg(not(target_arch = "wasm32"))]
            const _: fn(String, Vec<$crate::storage::Pair>, u32) -> Result<$crate::storage::Wake, $crate::storage::DriverError> =
                <__AgmsgLiveComponent as $crate::bindings::storage_live::exports::agmsg::storage::live::Guest>::wait_after;
        };
    };
}

thread_local! {
    /// This instance's driver value, made by the first call (of `driver` or `live`: both reach the same one).
    static DRIVER: std::cell::OnceCell<Box<dyn std::any::Any>> = const { std::cell::OnceCell::new() };
}

fn with_driver<D: Default + 'static, T>(f: impl FnOnce(&D) -> T) -> T {
    DRIVER.with(|driver| {
        let driver = driver.get_or_init(|| Box::new(D::default()));
        // One driver type per component: both export macros name the same `$driver`.
        f(driver.downcast_ref::<D>().expect("export_storage_driver! and export_storage_live! name the same driver type"))
    })
}

fn check_team_agent(team: &str, agent: &str) -> Result<(), DriverError> {
    crate::check_name("team", team)?;
    crate::check_name("agent", agent)?;
    Ok(())
}

/// The pairs of one watch call, by the contract's rule (the host checks the same).
fn check_pairs(pairs: &[Pair]) -> Result<(), DriverError> {
    agmsg_contract::check_pairs(pairs.iter().map(|p| (p.team.as_str(), p.agent.as_str())))
        .map(|_| ())
        .map_err(|e| DriverError::runtime(e.to_string()))
}

/// The exports of a component whose driver is `D`: what [`export_storage_driver!`](crate::export_storage_driver)
/// registers.
#[doc(hidden)]
pub struct Component<D>(std::marker::PhantomData<D>);

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

impl<D: StorageDriver + Default + 'static> Guest for Component<D> {
    type Exporter = ExporterResource;
    type Importer = ImporterResource;

    fn check() -> Result<(), DriverError> {
        with_driver::<D, _>(|d| d.check())
    }
    fn describe() -> Description {
        with_driver::<D, _>(|d| d.describe())
    }
    fn init() -> Result<(), DriverError> {
        with_driver::<D, _>(|d| d.init())
    }
    fn store_exists() -> Result<bool, DriverError> {
        with_driver::<D, _>(|d| d.store_exists())
    }
    fn send(team: String, sender: String, recipient: String, body: String) -> Result<String, DriverError> {
        crate::check_name("team", &team)?;
        crate::check_name("sender", &sender)?;
        crate::check_name("recipient", &recipient)?;
        with_driver::<D, _>(|d| d.send(&team, &sender, &recipient, &body))
    }
    fn list_unread(team: String, agent: String, limit: Option<u32>) -> Result<Vec<Message>, DriverError> {
        check_team_agent(&team, &agent)?;
        with_driver::<D, _>(|d| d.list_unread(&team, &agent, limit))
    }
    fn mark_read_batch(team: String, agent: String, ids: Vec<String>) -> Result<(), DriverError> {
        check_team_agent(&team, &agent)?;
        with_driver::<D, _>(|d| d.mark_read_batch(&team, &agent, &ids))
    }
    fn read_cursor_get(team: String, agent: String) -> Result<String, DriverError> {
        check_team_agent(&team, &agent)?;
        with_driver::<D, _>(|d| d.read_cursor_get(&team, &agent))
    }
    fn read_cursor_consume(team: String, agent: String, cursor: String, ids: Vec<String>) -> Result<(), DriverError> {
        check_team_agent(&team, &agent)?;
        with_driver::<D, _>(|d| d.read_cursor_consume(&team, &agent, &cursor, &ids))
    }
    fn watch_tip(pairs: Vec<Pair>) -> Result<String, DriverError> {
        check_pairs(&pairs)?;
        with_driver::<D, _>(|d| d.watch_tip(&pairs))
    }
    fn watch_after(cursor: String, pairs: Vec<Pair>) -> Result<WatchBatch, DriverError> {
        check_pairs(&pairs)?;
        with_driver::<D, _>(|d| d.watch_after(&cursor, &pairs))
    }
    fn history(team: String, agent: Option<String>, limit: Option<u32>) -> Result<Vec<Message>, DriverError> {
        crate::check_name("team", &team)?;
        if let Some(agent) = &agent {
            crate::check_name("agent", agent)?;
        }
        with_driver::<D, _>(|d| d.history(&team, agent.as_deref(), limit))
    }
    fn export_events() -> Result<wit::Exporter, DriverError> {
        let exporter = with_driver::<D, _>(|d| d.export_events())?;
        Ok(wit::Exporter::new(ExporterResource(RefCell::new(exporter))))
    }
    fn import_events() -> Result<wit::Importer, DriverError> {
        let importer = with_driver::<D, _>(|d| d.import_events())?;
        Ok(wit::Importer::new(ImporterResource(RefCell::new(importer))))
    }
    fn compact() -> Result<(), DriverError> {
        with_driver::<D, _>(|d| d.compact())
    }
}

impl<D: StorageDriver + LiveDriver + Default + 'static> LiveGuest for Component<D> {
    fn wait_after(cursor: String, pairs: Vec<Pair>, timeout_ms: u32) -> Result<Wake, DriverError> {
        check_pairs(&pairs)?;
        with_driver::<D, _>(|d| d.wait_after(&cursor, &pairs, timeout_ms))
    }
}

/// What [`ReceiptsDriver::receipt_status`] answers for one message: a [`ReceiptState::Receipt`] was
/// recorded, or none was but the legacy store marks it read ([`ReceiptState::LegacyRead`]), or neither
/// ([`ReceiptState::None`]).
pub use crate::bindings::storage_receipts::exports::agmsg::storage::receipts::ReceiptState;

/// The optional `receipts` interface (`agmsg:storage` 1.2.0): the hand-off evidence agmsg's legacy
/// readers keep per message (agmsg's sqlite `message_receipts` table). Register it with
/// [`export_storage_receipts!`](crate::export_storage_receipts) next to
/// [`export_storage_driver!`](crate::export_storage_driver). A driver without it offers no receipt ops,
/// and agmsg's callers, which look for the functions first, skip them.
///
/// ```
/// use std::cell::RefCell;
/// use std::collections::BTreeMap;
/// use agmsg_guest_sdk::storage::{DriverError, ReceiptState, ReceiptsDriver};
///
/// #[derive(Default)]
/// struct Receipts(RefCell<BTreeMap<String, String>>);
///
/// impl ReceiptsDriver for Receipts {
///     fn record_receipts(&self, _team: &str, agent: &str, _evidence: &str, ids: &[String]) -> Result<(), DriverError> {
///         for id in ids {
///             self.0.borrow_mut().entry(id.clone()).or_insert_with(|| agent.to_owned()); // the first one stays
///         }
///         Ok(())
///     }
///     fn receipt_status(&self, _team: &str, id: &str) -> Result<ReceiptState, DriverError> {
///         Ok(if self.0.borrow().contains_key(id) { ReceiptState::Receipt } else { ReceiptState::None })
///     }
/// }
/// let r = Receipts::default();
/// r.record_receipts("dev", "bob", "inbox", &["7".into()])?;
/// assert_eq!(r.receipt_status("dev", "7")?, ReceiptState::Receipt);
/// # Ok::<(), DriverError>(())
/// ```
pub trait ReceiptsDriver {
    /// Record that `agent` of `team` was handed the messages `ids`, with `evidence`. Ids the store does
    /// not know are skipped; a message keeps its first receipt.
    fn record_receipts(&self, team: &str, agent: &str, evidence: &str, ids: &[String]) -> Result<(), DriverError>;
    /// The hand-off state of message `id` of `team`.
    fn receipt_status(&self, team: &str, id: &str) -> Result<ReceiptState, DriverError>;
}

/// The optional `rename` interface (`agmsg:storage` 1.2.0): renaming an agent or a team inside a store
/// that keeps names in its records. Register it with [`export_storage_rename!`](crate::export_storage_rename)
/// next to [`export_storage_driver!`](crate::export_storage_driver). Hold the [`StoreLock`] for the
/// whole rewrite, and make it all-or-nothing: a rename cut short must leave every message readable
/// under one of the two names.
pub trait RenameDriver {
    /// Every message from or to `old` of `team`, its read marks and its read cursor now name `new`.
    fn rename_agent(&self, team: &str, old: &str, new: &str) -> Result<(), DriverError>;
    /// Every record of team `old` now names team `new`. The store is the new team's (the host moved a
    /// per-team store first).
    fn rename_team(&self, old: &str, new: &str) -> Result<(), DriverError>;
}

/// Register `$driver` (the type given to [`export_storage_driver!`](crate::export_storage_driver), which
/// also implements [`ReceiptsDriver`]) as this component's `agmsg:storage/receipts` export (1.2.0).
#[macro_export]
macro_rules! export_storage_receipts {
    ($driver:ty) => {
        const _: () = {
            type __AgmsgReceiptsComponent = $crate::storage::Component<$driver>;
            #[cfg(target_arch = "wasm32")]
    $crate::bindings::storage_receipts::export!(__AgmsgReceiptsComponent with_types_in $crate::bindings::storage_receipts);
            #[cfg(not(target_arch = "wasm32"))]
            const _: fn(String, String) -> Result<$crate::storage::ReceiptState, $crate::storage::DriverError> =
                <__AgmsgReceiptsComponent as $crate::bindings::storage_receipts::exports::agmsg::storage::receipts::Guest>::receipt_status;
        };
    };
}

/// Register `$driver` (the type given to [`export_storage_driver!`](crate::export_storage_driver), which
/// also implements [`RenameDriver`]) as this component's `agmsg:storage/rename` export (1.2.0).
#[macro_export]
macro_rules! export_storage_rename {
    ($driver:ty) => {
        const _: () = {
            type __AgmsgRenameComponent = $crate::storage::Component<$driver>;
            #[cfg(target_arch = "wasm32")]
    $crate::bindings::storage_rename::export!(__AgmsgRenameComponent with_types_in $crate::bindings::storage_rename);
            #[cfg(not(target_arch = "wasm32"))]
            const _: fn(String, String) -> Result<(), $crate::storage::DriverError> =
                <__AgmsgRenameComponent as $crate::bindings::storage_rename::exports::agmsg::storage::rename::Guest>::rename_team;
        };
    };
}

impl<D: StorageDriver + ReceiptsDriver + Default + 'static> ReceiptsGuest for Component<D> {
    fn record_receipts(team: String, agent: String, evidence: String, ids: Vec<String>) -> Result<(), DriverError> {
        check_team_agent(&team, &agent)?;
        with_driver::<D, _>(|d| d.record_receipts(&team, &agent, &evidence, &ids))
    }
    fn receipt_status(team: String, id: String) -> Result<ReceiptState, DriverError> {
        crate::check_name("team", &team)?;
        with_driver::<D, _>(|d| d.receipt_status(&team, &id))
    }
}

impl<D: StorageDriver + RenameDriver + Default + 'static> RenameGuest for Component<D> {
    fn rename_agent(team: String, old: String, new: String) -> Result<(), DriverError> {
        crate::check_name("team", &team)?;
        crate::check_name("agent", &old)?;
        crate::check_name("agent", &new)?;
        with_driver::<D, _>(|d| d.rename_agent(&team, &old, &new))
    }
    fn rename_team(old: String, new: String) -> Result<(), DriverError> {
        crate::check_name("team", &old)?;
        crate::check_name("team", &new)?;
        with_driver::<D, _>(|d| d.rename_team(&old, &new))
    }
}

/// The optional `purge` interface (`agmsg:storage` 1.2.0): deleting everything the granted store holds,
/// for a driver whose store is not a directory the host can remove (a database). Register it with
/// [`export_storage_purge!`](crate::export_storage_purge) next to
/// [`export_storage_driver!`](crate::export_storage_driver). `agmsg-host driver test` calls it on each
/// rule's store when the rule ends.
pub trait PurgeDriver {
    /// Delete every record of this store (and nothing of any other), as if it had never been
    /// initialized; a store that does not exist is already purged.
    fn purge_store(&self) -> Result<(), DriverError>;
}

/// Register `$driver` (the type given to [`export_storage_driver!`](crate::export_storage_driver), which
/// also implements [`PurgeDriver`]) as this component's `agmsg:storage/purge` export (1.2.0).
#[macro_export]
macro_rules! export_storage_purge {
    ($driver:ty) => {
        const _: () = {
            type __AgmsgPurgeComponent = $crate::storage::Component<$driver>;
            #[cfg(target_arch = "wasm32")]
    $crate::bindings::storage_purge::export!(__AgmsgPurgeComponent with_types_in $crate::bindings::storage_purge);
            #[cfg(not(target_arch = "wasm32"))]
            const _: fn() -> Result<(), $crate::storage::DriverError> =
                <__AgmsgPurgeComponent as $crate::bindings::storage_purge::exports::agmsg::storage::purge::Guest>::purge_store;
        };
    };
}

impl<D: StorageDriver + PurgeDriver + Default + 'static> PurgeGuest for Component<D> {
    fn purge_store() -> Result<(), DriverError> {
        with_driver::<D, _>(|d| d.purge_store())
    }
}

// ---------------------------------------------------------------------------------------------------
// The optional Stage-1 `sync` interface (1.2.0).

/// The records of the optional `sync` interface (`agmsg:storage` 1.2.0, agmsg's Stage-1 remote sync):
/// what [`SyncDriver`]'s ops take and answer, agmsg's JSONL records as typed values (the host parses and
/// prints agmsg's lines). Sequences and cursors are canonical decimal strings ([`is_sequence`]), wire
/// ids lowercase UUIDv4, binding ids lowercase UUIDv7 ([`is_lower_uuid`]).
///
/// ```
/// use agmsg_guest_sdk::storage::{Envelope, PushCandidate};
///
/// let candidate = PushCandidate {
///     local_position: 7,
///     local_id: "0196f3a2-7c1e-7000-8000-000000000001".into(),
///     wire_id: "6f1c2a3b-4d5e-4f60-8a7b-9c0d1e2f3a4b".into(),
///     envelope: Envelope { v: 1, cipher: "none".into(), key_id: None, blob: "e30=".into() },
/// };
/// assert_eq!(candidate.envelope.cipher, "none");
/// ```
pub use crate::bindings::storage_sync::exports::agmsg::storage::sync::{
    AgeProfile, ApplyResult, Binding, Chat, Disposition, Envelope, Evaluated, Outcome, OutcomeStatus, PageKey, PrepareRequest, Projection,
    PullMessage, PushAck, PushCandidate, ReprocessCandidate, ReprocessPage, ReprocessScope, RosterKind, SyncState, WriteProfile,
};

use crate::bindings::storage_sync::exports::agmsg::storage::sync::{
    self as sync_wit, Guest as SyncGuest, GuestPullPage, GuestPushCandidates, GuestReprocessCandidates,
};

/// The most a prepare or reprocess page may hold, and the most acks one reconcile takes (agmsg's bound).
pub const SYNC_PAGE_MAX: u32 = 1000;

/// Every evaluated status (what [`Evaluated::from_name`] looks among).
const EVALUATED: [Evaluated; 6] = [
    Evaluated::Importable,
    Evaluated::UnsupportedCipher,
    Evaluated::PendingKey,
    Evaluated::AuthenticationFailed,
    Evaluated::Malformed,
    Evaluated::PolicyViolation,
];

impl Evaluated {
    /// agmsg's word for the status, as its drivers store it (`sync_quarantine.status`, the jsonl
    /// journal's `status`).
    ///
    /// ```
    /// use agmsg_guest_sdk::storage::Evaluated;
    ///
    /// assert_eq!(Evaluated::PendingKey.name(), "pending_key");
    /// assert_eq!(Evaluated::from_name("pending_key"), Some(Evaluated::PendingKey));
    /// assert_eq!(Evaluated::from_name("imported"), None);
    /// ```
    pub fn name(self) -> &'static str {
        match self {
            Evaluated::Importable => "importable",
            Evaluated::UnsupportedCipher => "unsupported_cipher",
            Evaluated::PendingKey => "pending_key",
            Evaluated::AuthenticationFailed => "authentication_failed",
            Evaluated::Malformed => "malformed",
            Evaluated::PolicyViolation => "policy_violation",
        }
    }

    /// The status agmsg's word `name` stands for; none for any other word.
    pub fn from_name(name: &str) -> Option<Evaluated> {
        EVALUATED.into_iter().find(|e| e.name() == name)
    }
}

impl OutcomeStatus {
    /// The outcome agmsg's word `name` stands for (an evaluated status's, or `imported`, `reconciled`,
    /// `corrupt_state`); none for any other word.
    pub fn from_name(name: &str) -> Option<OutcomeStatus> {
        Some(match name {
            "imported" => OutcomeStatus::Imported,
            "reconciled" => OutcomeStatus::Reconciled,
            "corrupt_state" => OutcomeStatus::CorruptState,
            _ => match Evaluated::from_name(name)? {
                Evaluated::Importable => OutcomeStatus::Importable,
                Evaluated::UnsupportedCipher => OutcomeStatus::UnsupportedCipher,
                Evaluated::PendingKey => OutcomeStatus::PendingKey,
                Evaluated::AuthenticationFailed => OutcomeStatus::AuthenticationFailed,
                Evaluated::Malformed => OutcomeStatus::Malformed,
                Evaluated::PolicyViolation => OutcomeStatus::PolicyViolation,
            },
        })
    }
}

/// Whether `text` is a canonical decimal sequence or cursor as agmsg's sync records carry them: digits,
/// no leading zero (but `0` itself), at most 2^63-1.
///
/// ```
/// use agmsg_guest_sdk::storage::is_sequence;
///
/// assert!(is_sequence("0") && is_sequence("42") && is_sequence("9223372036854775807"));
/// for bad in ["", "007", "-1", "+1", "1.0", "9223372036854775808", " 1"] {
///     assert!(!is_sequence(bad), "{bad:?}");
/// }
/// ```
pub use agmsg_contract::sync::is_sequence;

/// Whether `text` is a lowercase hyphenated UUID of `version` (7 for binding ids, 4 for wire ids) with
/// the RFC 9562 variant, the only form agmsg's sync accepts.
///
/// ```
/// use agmsg_guest_sdk::storage::is_lower_uuid;
///
/// assert!(is_lower_uuid("0196f3a2-7c1e-7000-8000-000000000000", 7));
/// assert!(is_lower_uuid("6f1c2a3b-4d5e-4f60-8a7b-9c0d1e2f3a4b", 4));
/// assert!(!is_lower_uuid("0196F3A2-7C1E-7000-8000-000000000000", 7), "uppercase");
/// assert!(!is_lower_uuid("6f1c2a3b-4d5e-4f60-8a7b-9c0d1e2f3a4b", 7), "another version");
/// assert!(!is_lower_uuid("6f1c2a3b-4d5e-4f60-ca7b-9c0d1e2f3a4b", 4), "another variant");
/// ```
pub use agmsg_contract::sync::is_lower_uuid;

/// The optional `sync` interface (`agmsg:storage` 1.2.0, capability `stage1-sync`): the local half of
/// agmsg's Stage-1 remote sync (spec §2.8). agmsg's engine does the HTTP, decryption and policy; the
/// driver owns the durable transitions, and has the host seal each push envelope
/// ([`crate::seal::seal`]): the host refuses an `age-v1` answer holding an envelope it did not seal.
/// Register it with
/// [`export_storage_sync!`](crate::export_storage_sync) next to
/// [`export_storage_driver!`](crate::export_storage_driver).
///
/// The SDK refuses, before the driver sees them, a binding whose team is not a valid name, whose ids are
/// not lowercase UUIDv7 or whose protocol version is not digits; a limit outside 1..1000; a prepare
/// request other than envelope version 1 with `none`, or `age-v1` with a key id of
/// `[a-z0-9][a-z0-9._-]{0,63}` and 1 to 256 distinct `age1` recipients; a sequence, cursor or wire id
/// not in its canonical form; an empty or oversized ack batch.
///
/// What each op must guarantee (agmsg's crash boundaries): a wire id is never visible before its
/// envelope is durably stored with it, and a stored reservation is never resealed; reconcile is all or
/// nothing; a pull page's outcomes and its transport cursor commit together. A crash (a trap drops the
/// instance) anywhere must lose and duplicate nothing.
pub trait SyncDriver {
    /// Reserve up to `limit` new messages (unless `request.allow_new` is false), each under the wire id and
    /// envelope [`crate::seal::seal`] returns, stored together; then answer the binding's state and every
    /// unacknowledged reservation in local order, at most `limit`, each as it was stored.
    fn prepare_push(
        &self,
        binding: &Binding,
        limit: u32,
        request: &PrepareRequest,
    ) -> Result<(SyncState, Box<dyn SyncPages<PushCandidate>>), DriverError>;
    /// Record `acks` (1..1000) and answer the push cursor, advanced through the contiguous acknowledged
    /// prefix. An ack that matches no durable reservation refuses the whole batch (`corrupt_state`). An
    /// ack that conflicts with a recorded one (another sequence for its wire id, or another wire id's
    /// sequence) is the driver's to handle as its agmsg driver does: refuse the whole batch
    /// (`corrupt_state`, sqlite), or record the conflict beside the valid acks, the wire id then blocked
    /// (jsonl). What the call records, it records in one commit.
    fn reconcile_push(&self, binding: &Binding, acks: &[PushAck]) -> Result<i64, DriverError>;
    /// Begin a pull page: the returned stage takes its messages and commits them with the cursor.
    fn apply_pull(&self, binding: &Binding) -> Result<Box<dyn PullStage>, DriverError>;
    /// One keyset page of quarantined envelopes in `scope` after `after`: its trailer (with the state)
    /// and its candidates.
    fn reprocess(
        &self,
        binding: &Binding,
        limit: u32,
        after: Option<&PageKey>,
        scope: ReprocessScope,
    ) -> Result<(ReprocessPage, Box<dyn SyncPages<ReprocessCandidate>>), DriverError>;
}

/// An answer read in slices: prepare's push candidates, reprocess's candidates.
pub trait SyncPages<T> {
    /// The next items, together at most `max_bytes` of envelope blob but at least one while any are
    /// left; empty at the end.
    fn next_page(&mut self, max_bytes: u32) -> Result<Vec<T>, DriverError>;
}

/// A pull page being applied: messages staged in slices, then committed with the transport cursor.
/// Dropped without `commit`, nothing it staged remains.
pub trait PullStage {
    /// Stage the next messages of the page, in server order.
    fn push(&mut self, messages: Vec<PullMessage>) -> Result<(), DriverError>;
    /// Commit everything staged and set the transport cursor to `next_after`.
    fn commit(&mut self, next_after: &str) -> Result<ApplyResult, DriverError>;
}

/// Register `$driver` (the type given to [`export_storage_driver!`](crate::export_storage_driver), which
/// also implements [`SyncDriver`]) as this component's `agmsg:storage/sync` export (1.2.0).
#[macro_export]
macro_rules! export_storage_sync {
    ($driver:ty) => {
        const _: () = {
            type __AgmsgSyncComponent = $crate::storage::Component<$driver>;
            #[cfg(target_arch = "wasm32")]
    $crate::bindings::storage_sync::export!(__AgmsgSyncComponent with_types_in $crate::bindings::storage_sync);
            #[cfg(not(target_arch = "wasm32"))]
            const _: fn($crate::storage::Binding, Vec<$crate::storage::PushAck>) -> Result<i64, $crate::storage::DriverError> =
                <__AgmsgSyncComponent as $crate::bindings::storage_sync::exports::agmsg::storage::sync::Guest>::reconcile_push;
        };
    };
}

fn refuse(what: impl std::fmt::Display) -> DriverError {
    DriverError::runtime(format!("sync: {what}"))
}

/// The binding rules agmsg's sqlite driver applies (the team by the contract's name rules).
fn check_binding(b: &Binding) -> Result<(), DriverError> {
    crate::check_name("team", &b.local_team)?;
    for (what, id) in [("server instance id", &b.server_instance_id), ("remote team id", &b.remote_team_id)] {
        if !is_lower_uuid(id, 7) {
            return Err(refuse(format!("invalid {what} {id:?}: expected a lowercase UUIDv7")));
        }
    }
    let v = &b.protocol_version;
    if v.is_empty() || !v.bytes().all(|c| c.is_ascii_digit()) || v.parse::<i64>().is_err() {
        return Err(refuse(format!("invalid protocol version {v:?}: expected digits")));
    }
    Ok(())
}

fn check_limit(limit: u32) -> Result<(), DriverError> {
    if !(1..=SYNC_PAGE_MAX).contains(&limit) {
        return Err(refuse(format!("invalid limit {limit}: expected 1..{SYNC_PAGE_MAX}")));
    }
    Ok(())
}

fn check_sequence(what: &str, text: &str) -> Result<(), DriverError> {
    if !is_sequence(text) {
        return Err(refuse(format!("invalid {what} {text:?}: expected a canonical decimal up to 2^63-1")));
    }
    Ok(())
}

fn check_wire_id(text: &str) -> Result<(), DriverError> {
    if !is_lower_uuid(text, 4) {
        return Err(refuse(format!("invalid wire id {text:?}: expected a lowercase UUIDv4")));
    }
    Ok(())
}

fn check_prepare(request: &PrepareRequest) -> Result<(), DriverError> {
    if request.envelope_v != 1 {
        return Err(refuse(format!("unsupported envelope version {}", request.envelope_v)));
    }
    if let WriteProfile::AgeV1(age) = &request.profile {
        let key = age.key_id.as_bytes();
        let key_ok = !key.is_empty()
            && key.len() <= 64
            && (key[0].is_ascii_lowercase() || key[0].is_ascii_digit())
            && key.iter().all(|&c| c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, b'.' | b'_' | b'-'));
        if !key_ok {
            return Err(refuse(format!("invalid key id {:?}", age.key_id)));
        }
        if !(1..=256).contains(&age.recipients.len()) {
            return Err(refuse(format!("age-v1 needs 1 to 256 recipients, not {}", age.recipients.len())));
        }
        let mut seen = std::collections::BTreeSet::new();
        for r in &age.recipients {
            let ok = r.len() == 62 && r.starts_with("age1") && r.bytes().skip(4).all(|c| c.is_ascii_lowercase() || c.is_ascii_digit());
            if !ok {
                return Err(refuse(format!("invalid age recipient {r:?}")));
            }
            if !seen.insert(r) {
                return Err(refuse(format!("duplicate age recipient {r:?}")));
            }
        }
    }
    Ok(())
}

fn check_pull_message(m: &PullMessage) -> Result<(), DriverError> {
    check_sequence("server_seq", &m.server_seq)?;
    check_wire_id(&m.wire_id)?;
    pull_chat(m).map(drop)
}

/// The chat message a pull record brings to import: an importable record's message projection; none
/// for a roster projection (the engine applied it, the driver only acknowledges it) or any other
/// status. An importable record with no projection is refused, as agmsg's drivers both refuse the page
/// at it. The SDK checks every record so before [`PullStage::push`] sees it.
///
/// ```
/// use agmsg_guest_sdk::storage::{Chat, Envelope, Evaluated, Projection, PullMessage, pull_chat};
///
/// let chat = Chat { body: "hi".into(), created_at: "2026-01-01T00:00:00Z".into(), from_agent: "a".into(), to_agent: "b".into() };
/// let mut m = PullMessage {
///     server_seq: "1".into(),
///     wire_id: "6f1c2a3b-4d5e-4f60-8a7b-9c0d1e2f3a4b".into(),
///     server_received_at: "2026-01-01T00:00:00Z".into(),
///     envelope: Envelope { v: 1, cipher: "none".into(), key_id: None, blob: "e30=".into() },
///     status: Evaluated::Importable,
///     reason: None,
///     policy_revision: None,
///     local_security_revision: None,
///     projection: Some(Projection::Message(chat.clone())),
/// };
/// assert_eq!(pull_chat(&m).unwrap(), Some(&chat));
/// m.projection = None;
/// assert!(pull_chat(&m).is_err());
/// m.status = Evaluated::PendingKey;
/// assert_eq!(pull_chat(&m).unwrap(), None);
/// ```
pub fn pull_chat(m: &PullMessage) -> Result<Option<&Chat>, DriverError> {
    match (m.status, &m.projection) {
        (Evaluated::Importable, None) => Err(refuse(format!("importable pull message {} has no projection", m.wire_id))),
        (Evaluated::Importable, Some(Projection::Message(chat))) => Ok(Some(chat)),
        _ => Ok(None),
    }
}

fn check_page_key(key: &PageKey) -> Result<(), DriverError> {
    check_sequence("page-after sequence", &key.server_seq)?;
    check_wire_id(&key.wire_id)
}

#[doc(hidden)]
pub struct PushCandidatesResource(RefCell<Box<dyn SyncPages<PushCandidate>>>);

#[doc(hidden)]
pub struct ReprocessCandidatesResource(RefCell<Box<dyn SyncPages<ReprocessCandidate>>>);

#[doc(hidden)]
pub struct PullPageResource(RefCell<Box<dyn PullStage>>);

impl GuestPushCandidates for PushCandidatesResource {
    fn next_page(&self, max_bytes: u32) -> Result<Vec<PushCandidate>, DriverError> {
        self.0.borrow_mut().next_page(max_bytes)
    }
}

impl GuestReprocessCandidates for ReprocessCandidatesResource {
    fn next_page(&self, max_bytes: u32) -> Result<Vec<ReprocessCandidate>, DriverError> {
        self.0.borrow_mut().next_page(max_bytes)
    }
}

impl GuestPullPage for PullPageResource {
    fn push(&self, messages: Vec<PullMessage>) -> Result<(), DriverError> {
        messages.iter().try_for_each(check_pull_message)?;
        self.0.borrow_mut().push(messages)
    }
    fn commit(&self, next_after: String) -> Result<ApplyResult, DriverError> {
        check_sequence("next_after", &next_after)?;
        self.0.borrow_mut().commit(&next_after)
    }
}

impl<D: StorageDriver + SyncDriver + Default + 'static> SyncGuest for Component<D> {
    type PushCandidates = PushCandidatesResource;
    type PullPage = PullPageResource;
    type ReprocessCandidates = ReprocessCandidatesResource;

    fn prepare_push(b: Binding, limit: u32, request: PrepareRequest) -> Result<(SyncState, sync_wit::PushCandidates), DriverError> {
        check_binding(&b)?;
        check_limit(limit)?;
        check_prepare(&request)?;
        let (state, pages) = with_driver::<D, _>(|d| d.prepare_push(&b, limit, &request))?;
        Ok((state, sync_wit::PushCandidates::new(PushCandidatesResource(RefCell::new(pages)))))
    }

    fn reconcile_push(b: Binding, acks: Vec<PushAck>) -> Result<i64, DriverError> {
        check_binding(&b)?;
        if acks.is_empty() || acks.len() > SYNC_PAGE_MAX as usize {
            return Err(refuse(format!("reconcile takes 1..{SYNC_PAGE_MAX} acks, not {}", acks.len())));
        }
        for ack in &acks {
            check_sequence("server_seq", &ack.server_seq)?;
            check_wire_id(&ack.wire_id)?;
        }
        with_driver::<D, _>(|d| d.reconcile_push(&b, &acks))
    }

    fn apply_pull(b: Binding) -> Result<sync_wit::PullPage, DriverError> {
        check_binding(&b)?;
        let stage = with_driver::<D, _>(|d| d.apply_pull(&b))?;
        Ok(sync_wit::PullPage::new(PullPageResource(RefCell::new(stage))))
    }

    fn reprocess(
        b: Binding,
        limit: u32,
        after: Option<PageKey>,
        scope: ReprocessScope,
    ) -> Result<(ReprocessPage, sync_wit::ReprocessCandidates), DriverError> {
        check_binding(&b)?;
        check_limit(limit)?;
        if let Some(key) = &after {
            check_page_key(key)?;
        }
        let (page, pages) = with_driver::<D, _>(|d| d.reprocess(&b, limit, after.as_ref(), scope))?;
        Ok((page, sync_wit::ReprocessCandidates::new(ReprocessCandidatesResource(RefCell::new(pages)))))
    }
}

// The optional `resync` and `read-state` interfaces (1.2.0).
mod stage2;
pub use stage2::*;
