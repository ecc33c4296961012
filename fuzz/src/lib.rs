//! The fuzz crate's root: the targets' checks (targets.rs, shared with tests/fuzz_replay.rs), and the
//! jsonl driver's readers of its store files, compiled here from the driver's own source (the driver
//! is a cdylib, so no crate can link it) with their checks (jsonl.rs: `events.jsonl`'s lines;
//! jsonl_store.rs: `read-cursors.tsv`, the sync journal, the index files; both shared with the
//! driver's unit tests). Each driver file sits at the module path it has in the driver.

#[path = "targets.rs"]
mod targets;
pub use targets::*;

/// What the driver's events.rs names its log in errors (`crate::LOG_FILE` in the driver).
pub const LOG_FILE: &str = "events.jsonl";
/// What the driver's cursors.rs names its file in errors (`crate::CURSORS_FILE` in the driver).
pub const CURSORS_FILE: &str = "read-cursors.tsv";

#[path = "../../drivers/storage-jsonl/src/events.rs"]
#[allow(dead_code)]
mod events;

#[path = "../../drivers/storage-jsonl/src/cursors.rs"]
#[allow(dead_code)]
mod cursors;

#[path = "../../drivers/storage-jsonl/src/idtable.rs"]
#[allow(dead_code)]
mod idtable;

#[path = "../../drivers/storage-jsonl/src/index_files.rs"]
#[allow(dead_code)]
mod index_files;

/// The driver's `sync` module, as far as the journal's readers go.
#[path = "../../drivers/storage-jsonl/src/sync"]
mod sync {
    #[allow(dead_code)]
    pub mod fold;

    #[allow(dead_code)]
    pub mod records;
}

pub mod jsonl;
pub mod jsonl_store;
