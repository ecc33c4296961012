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

/// The optional interfaces: each `name => world` line is a file `storage/<name>.rs` (its trait, its
/// `export_storage_<name>!` and the checks the SDK makes before the driver sees a call), re-exported
/// here, and the interface's bindings, generated from its world with `storage`'s types
/// (`optional_bindings::<name>`, whose export macro `export_storage_<name>!` expands in the driver
/// crate). A new optional interface is its file and one line.
macro_rules! optional_interfaces {
    ($($name:ident => $world:literal),* $(,)?) => {
        /// The wit-bindgen output of each optional interface's world. Internal, as `crate::bindings`.
        #[doc(hidden)]
        pub mod optional_bindings {
            $(
                #[doc = concat!("`", $world, "`, with `storage`'s types.")]
                pub mod $name {
                    wit_bindgen::generate!({
                        world: $world,
                        path: ["wit/host", "wit/storage"],
                        with: {
                            "agmsg:storage/types@1.2.0": crate::bindings::storage::agmsg::storage::types,
                        },
                        // Records compare, so a driver's tests can assert that answers are byte-stable.
                        additional_derives: [PartialEq],
                        pub_export_macro: true,
                    });
                }
            )*
        }

        $(
            mod $name;
            pub use $name::*;
        )*
    };
}

optional_interfaces! {
    live => "agmsg:storage/storage-live@1.2.0",
    receipts => "agmsg:storage/storage-receipts@1.2.0",
    rename => "agmsg:storage/storage-rename@1.2.0",
    purge => "agmsg:storage/storage-purge@1.2.0",
    sync => "agmsg:storage/storage-sync@1.2.0",
    resync => "agmsg:storage/storage-resync@1.2.0",
    read_state => "agmsg:storage/storage-read-state@1.2.0",
}

/// What every `export_storage_<name>!` expands to: register `$driver` (the type given to
/// [`export_storage_driver!`](crate::export_storage_driver)) as this component's export of the optional
/// interface `$name`. A native build (a driver's unit tests) is no component: it exports nothing, and
/// only checks that `$driver` implements the interface's trait.
#[doc(hidden)]
#[macro_export]
macro_rules! __export_storage_optional {
    ($driver:ty, $name:ident) => {
        const _: () = {
            type __AgmsgOptionalComponent = $crate::storage::Component<$driver>;
            #[cfg(target_arch = "wasm32")]
            $crate::storage::optional_bindings::$name::export!(__AgmsgOptionalComponent with_types_in $crate::storage::optional_bindings::$name);
            #[cfg(not(target_arch = "wasm32"))]
            const _: () = {
                fn implemented<C: $crate::storage::optional_bindings::$name::exports::agmsg::storage::$name::Guest>() {}
                let _ = implemented::<__AgmsgOptionalComponent>;
            };
        };
    };
}
