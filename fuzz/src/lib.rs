//! The fuzz crate's root: the targets' checks (targets.rs, shared with tests/fuzz_replay.rs), and the
//! jsonl driver's line parser, compiled here from the driver's own source (the driver is a cdylib, so
//! no crate can link it) with the checks of its lines (jsonl.rs, shared with the driver's unit tests).

#[path = "targets.rs"]
mod targets;
pub use targets::*;

/// What the driver's events.rs names its log in errors (`crate::LOG_FILE` in the driver).
pub const LOG_FILE: &str = "events.jsonl";

#[path = "../../drivers/storage-jsonl/src/events.rs"]
#[allow(dead_code)]
mod events;

pub mod jsonl;
