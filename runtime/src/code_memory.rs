//! Bundled machine code runs where it lies in the binary.
//!
//! Loading a precompiled component from bytes makes wasmtime copy them into fresh memory: megabytes of
//! new pages, each faulted in and cleared, which on a small VM costs more than the op itself (5 ms for
//! the SQLite driver). Writing the code to a cache file so that later processes can map it instead
//! costs a synced multi-megabyte write on the first call. Neither is needed: build.rs embeds each
//! bundled driver's machine code at a page boundary of the binary's read-only data, and the engine's
//! code-memory policy here makes a page range executable with `mprotect`, so the kernel maps those
//! pages straight from the binary's page cache. Nothing is copied and nothing is written, whatever the
//! cache directory is.
//!
//! The same policy serves wasmtime's own code memory (compiled plugins and cache files): there it does
//! what wasmtime would do itself, read-only plus executable for the text, read-write when unpublished.

use std::ptr::NonNull;
use std::sync::{Arc, Mutex, PoisonError};

use rustix::mm::{MprotectFlags, mprotect};
use wasmtime::component::Component;
use wasmtime::{CustomCodeMemory, Engine, Result};

/// The engine's code-memory policy (set in `Runtime::new`).
pub fn policy() -> Arc<dyn CustomCodeMemory> {
    Arc::new(Mprotect)
}

struct Mprotect;

impl CustomCodeMemory for Mprotect {
    fn required_alignment(&self) -> usize {
        rustix::param::page_size()
    }

    fn publish_executable(&self, ptr: *const u8, len: usize) -> Result<()> {
        protect(ptr, len, MprotectFlags::READ | MprotectFlags::EXEC)
    }

    fn unpublish_executable(&self, ptr: *const u8, len: usize) -> Result<()> {
        // Embedded code goes back to read-only, as the loader mapped it; wasmtime's own memory to
        // read-write, as wasmtime expects of unpublished code.
        let flags = if in_place(ptr) { MprotectFlags::READ } else { MprotectFlags::READ | MprotectFlags::WRITE };
        protect(ptr, len, flags)
    }
}

fn protect(ptr: *const u8, len: usize, flags: MprotectFlags) -> Result<()> {
    if len == 0 {
        return Ok(());
    }
    // SAFETY: wasmtime hands over the text section of code memory it manages (its own mapping, or
    // embedded code given to `load_in_place`), page-aligned as `required_alignment` asks, and no other
    // code in this process uses those pages.
    unsafe { mprotect(ptr.cast_mut().cast(), len, flags) }.map_err(|e| wasmtime::Error::msg(format!("mprotect of code memory: {e}")))
}

/// Load bundled machine code `code` (what the host's [`crate::engine::EmbeddedCode`] returned) without copying it. Where it is not
/// page-aligned for this system (a page size above 4 KiB), it is copied as usual.
///
/// # Safety
/// `code` is machine code precompiled with this engine's configuration, embedded in the
/// binary: static, never written. (wasmtime still checks that it fits this engine and CPU.)
pub unsafe fn load_in_place(engine: &Engine, code: &'static [u8]) -> Result<Component> {
    // wasmtime registers code by address, once: the same memory cannot back two components at a
    // time. So each piece of embedded code is loaded once per process and the component shared
    // (every runtime shares the one engine; another engine, e.g. a test's, gets a copy).
    static LOADED: Mutex<Vec<(usize, Component)>> = Mutex::new(Vec::new());
    let address = code.as_ptr().addr();
    let mut loaded = LOADED.lock().unwrap_or_else(PoisonError::into_inner);
    let earlier = loaded.iter().find(|(at, _)| *at == address).map(|(_, component)| component);
    if earlier.is_some_and(|component| !Engine::same(component.engine(), engine)) || !address.is_multiple_of(rustix::param::page_size()) {
        // SAFETY: as the caller promises.
        return unsafe { Component::deserialize(engine, code) };
    }
    if let Some(component) = earlier {
        return Ok(component.clone());
    }
    // Recorded before wasmtime sees it: if loading fails, wasmtime unpublishes it at once (and LOADED
    // is still held here, so `in_place` keeps its own lock).
    let range = address..address + code.len();
    let mut in_place = IN_PLACE.lock().unwrap_or_else(PoisonError::into_inner);
    if !in_place.contains(&range) {
        in_place.push(range);
    }
    drop(in_place);
    // SAFETY: as the caller promises; `code` lives for the whole process and is never modified.
    let component = unsafe { Component::deserialize_raw(engine, NonNull::from(code)) }?;
    loaded.push((address, component.clone()));
    Ok(component)
}

/// The embedded code handed to wasmtime where it lies (by [`load_in_place`]), for the whole process.
static IN_PLACE: Mutex<Vec<std::ops::Range<usize>>> = Mutex::new(Vec::new());

/// Whether `ptr` points into embedded code run in place: the runtime tracks what it mapped itself, so it
/// needs no list of the host's embedded drivers.
pub(crate) fn in_place(ptr: *const u8) -> bool {
    IN_PLACE.lock().unwrap_or_else(PoisonError::into_inner).iter().any(|range| range.contains(&ptr.addr()))
}
