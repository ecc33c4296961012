//! The storage axis's domain types: what the host, the CLI and the tests handle, as plain Rust, owned by
//! the host whatever the WIT version a driver was built against. The seam (`world.rs` and `world/`)
//! converts the generated bindings' types into these where a call returns, and back where one is made;
//! nothing else names a generated type.

use std::fmt;

pub use agmsg_contract::Status;

/// One `message_sent` event. `at` is ISO-8601 UTC.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Message {
    pub id: String,
    pub team: String,
    pub from: String,
    pub to: String,
    pub body: String,
    pub at: String,
}

/// One `message_read` event: `agent` of `team` read the message `msg_id`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReadMark {
    pub id: String,
    pub msg_id: String,
    pub team: String,
    pub agent: String,
    pub at: String,
}

/// An event of the v1 log.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Event {
    MessageSent(Message),
    MessageRead(ReadMark),
}

/// A §1.6 directive, as the driver gave it (the CLI decides what of it to print).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Directive {
    pub kind: String,
    pub commands: Vec<String>,
    pub reason: String,
}

/// A file of the store that `describe` reports (`key=<path>`), relative to the store directory.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoreFile {
    pub key: String,
    pub path: String,
}

/// A driver's `describe`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Description {
    pub name: String,
    pub backend: String,
    pub capabilities: Vec<String>,
    pub store_file: Option<StoreFile>,
}

/// A `<team>:<agent>` subscription pair.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Pair {
    pub team: String,
    pub agent: String,
}

/// One poll of `watch-after`: the messages and the cursor to resume from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WatchBatch {
    pub messages: Vec<Message>,
    pub cursor: String,
}

/// `live.wait-after`'s answer (optional interface, since 1.1.0).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Wake {
    /// Something may have arrived after the cursor.
    Changed,
    /// The timeout passed with no sign of change.
    TimedOut,
}

/// `receipts.receipt-status`'s answer (optional interface, since 1.2.0).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReceiptState {
    Receipt,
    LegacyRead,
    None,
}

/// A failed operation, with the §1.4 status that goes with it.
#[derive(Debug, Clone)]
pub struct StorageError {
    pub status: Status,
    pub message: String,
    /// A §1.6 directive to print (with `missing_deps`).
    pub directive: Option<Directive>,
}

impl StorageError {
    pub fn runtime(message: impl Into<String>) -> StorageError {
        StorageError { status: Status::RuntimeError, message: message.into(), directive: None }
    }
}

impl fmt::Display for StorageError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for StorageError {}
