//! The fuzz crate's root: the targets' checks (targets.rs, shared with tests/fuzz_replay.rs). The
//! drivers' targets have their checks in the drivers themselves (`fuzz_check`), compiled here from the
//! drivers' own source (fuzz/storage-jsonl, fuzz/storage-sqlite: the drivers are cdylibs, so no crate
//! can link them) and replayed by the drivers' unit tests.

#[path = "targets.rs"]
mod targets;
pub use targets::*;
