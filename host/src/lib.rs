//! `agmsg-host`: runs agmsg's drivers as sandboxed WebAssembly components.
//!
//! - [`runtime`] owns wasmtime: the engine, the compile cache, what a component may touch (the
//!   sandbox), and how a failed call becomes an error.
//! - [`storage`] is the typed storage-driver handle on top of it, plus driver selection and the store's
//!   location on disk.
//! - [`terminal`] is the same for terminal drivers: manifests (their grants), the typed handle, and
//!   the §6.3 resolvers.
//! - [`cli`] parses argv and prints exactly agmsg's framing; it holds no driver logic.

pub mod bundled;
pub mod cli;
pub mod runtime;
pub mod storage;
pub mod terminal;
