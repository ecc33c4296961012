//! The engine (one per process, shared by every runtime), its epoch ticker and per-call limits; everything here is off
//! the per-call path.

use std::sync::{Mutex, OnceLock};

pub use super::limits::{EPOCH_TICK, Limits};

use wasmtime::Engine;
use wasmtime::Result;
use wasmtime::component::{Component, Linker};

use super::cache::CompileCache;
use super::sandbox::HostState;
use crate::axis::Axis;

// The embedded-code trait lives with the loader that runs the code; named here too, where a runtime is
// built with one.
pub use super::cache::{EmbeddedCode, NoEmbeddedCode};

/// The process-wide runtime: engine, linkers (both shared by the whole process) and compile cache.
pub struct Runtime {
    pub engine: Engine,
    pub cache: CompileCache,
    pub limits: Limits,
    embedded: &'static dyn EmbeddedCode,
}

impl Runtime {
    /// A runtime whose components load through `cache`, machine code in `embedded` first.
    pub fn new(cache: CompileCache, limits: Limits, embedded: &'static dyn EmbeddedCode) -> Result<Runtime> {
        Ok(Runtime { engine: shared_engine()?, cache, limits, embedded })
    }

    /// The runtime as the user's environment configures it: the compile cache (`AGMSG_CACHE_DIR`) and
    /// the limits (`AGMSG_*_MS`, `AGMSG_*_MB`); the error says which setting is wrong.
    pub fn from_env(embedded: &'static dyn EmbeddedCode) -> std::result::Result<Runtime, String> {
        let limits = Limits::from_env().map_err(|e| format!("{e:#}"))?;
        Runtime::new(CompileCache::from_env(), limits, embedded).map_err(|e| format!("{e:#}"))
    }

    /// The linker drivers of `axis` are instantiated with.
    pub fn linker(&self, axis: Axis) -> Result<&Linker<HostState>> {
        shared_linker(&self.engine, axis)
    }

    /// Load a component through the compile cache; one with machine code embedded in the binary runs
    /// that code (never compiled at run time).
    pub fn load(&self, wasm: &[u8], sha256: &str) -> Result<Component> {
        self.cache.load(&self.engine, wasm, sha256, self.embedded)
    }
}

/// The process's one engine, which every [`Runtime`] shares (its configuration is fixed): the epoch
/// ticker advances the engine every deadline is measured on, and bundled machine code, which runs in
/// place, is registered with wasmtime once (see [`super::code_memory`]). Creating it starts no thread:
/// the host's I/O runtime, whose one worker also runs the ticker, starts with the first driver call
/// (see [`running_call`]), so that a process may make the engine and then fork (the resident server
/// does: a forked child has none of its parent's threads).
fn shared_engine() -> Result<Engine> {
    ENGINE
        .get_or_init(|| {
            let mut config = super::engine_config::engine_config();
            config.with_custom_code_memory(Some(super::code_memory::policy()));
            Engine::new(&config).map_err(|e| format!("creating the wasmtime engine: {e:#}"))
        })
        .clone()
        .map_err(wasmtime::Error::msg)
}

static ENGINE: OnceLock<std::result::Result<Engine, String>> = OnceLock::new();

/// Make the engine and every axis's linker now, starting no thread: what a resident server does once
/// before it forks a child per request, so that no child pays for them.
pub fn prewarm() -> Result<()> {
    let engine = shared_engine()?;
    for axis in Axis::ALL {
        shared_linker(&engine, axis)?;
    }
    Ok(())
}

/// The linker of `axis`'s drivers: one per process, as the engine is, built on first use (a process
/// usually runs drivers of one axis, and start-up pays only for that one).
fn shared_linker(engine: &Engine, axis: Axis) -> Result<&'static Linker<HostState>> {
    static LINKERS: [OnceLock<Linker<HostState>>; Axis::ALL.len()] = [const { OnceLock::new() }; Axis::ALL.len()];
    let cell = &LINKERS[axis.index()];
    if let Some(linker) = cell.get() {
        return Ok(linker);
    }
    let built = super::sandbox::linker(engine, axis)?;
    Ok(cell.get_or_init(|| built))
}

/// How many driver calls are running wasm in this process now: the epoch ticker advances only while
/// one is, so that an idle process (a `watch` between rounds) has nothing waking every tick.
static RUNNING: Mutex<usize> = Mutex::new(0);
static CALL_STARTED: tokio::sync::Notify = tokio::sync::Notify::const_new();

/// The host's tokio runtime: one worker thread, which runs the epoch ticker and drives sockets and
/// timers while a host call waits on them. wasmtime-wasi runs its host calls (files, sockets, clocks)
/// on the runtime the calling thread has entered; a driver call enters this one (see [`RunningCall`]).
/// Without it wasmtime-wasi builds an ambient runtime of its own on first use: a worker per CPU (after
/// reading the cgroup files to count them) beside the ticker's thread, and a yield in every host call.
fn io_runtime() -> &'static tokio::runtime::Runtime {
    static IO: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    IO.get_or_init(|| {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("agmsg-io")
            .enable_io()
            .enable_time()
            .build()
            .expect("starting the host's I/O runtime")
    })
}

/// A driver call in progress, from before its deadline is set until it returns: while one exists the
/// epoch advances (a deadline counts ticks, and ticks pass only while some call runs), and the calling
/// thread is in the host's I/O runtime (the outermost call on a thread enters it).
pub struct RunningCall {
    _entered: Option<tokio::runtime::EnterGuard<'static>>,
}

/// Mark a call as running (see [`RunningCall`]).
pub fn running_call() -> RunningCall {
    let mut running = RUNNING.lock().unwrap_or_else(|e| e.into_inner());
    *running += 1;
    if *running == 1 {
        CALL_STARTED.notify_waiters();
    }
    drop(running);
    static TICKER: std::sync::Once = std::sync::Once::new();
    TICKER.call_once(|| {
        if let Some(Ok(engine)) = ENGINE.get() {
            start_epoch_ticker(engine);
        }
    });
    let entered = tokio::runtime::Handle::try_current().is_ok();
    RunningCall { _entered: if entered { None } else { Some(io_runtime().enter()) } }
}

impl Drop for RunningCall {
    fn drop(&mut self) {
        *RUNNING.lock().unwrap_or_else(|e| e.into_inner()) -= 1;
    }
}

/// The ticker, a task on the I/O runtime's worker, advances the epoch for the process's life while a
/// call runs; between calls it waits for [`CALL_STARTED`]. A deadline is set relative to the current
/// epoch at the start of each call, so the ticks not counted between calls belong to no deadline.
fn start_epoch_ticker(engine: &Engine) {
    let engine = engine.clone();
    io_runtime().spawn(async move {
        loop {
            loop {
                // Registered before the check, so a call that starts in between still wakes it.
                let started = CALL_STARTED.notified();
                if *RUNNING.lock().unwrap_or_else(|e| e.into_inner()) > 0 {
                    break;
                }
                started.await;
            }
            engine.increment_epoch();
            tokio::time::sleep(EPOCH_TICK).await;
        }
    });
}

#[cfg(test)]
mod tests {
    use std::alloc::{Layout, alloc_zeroed};

    use super::*;

    /// The smallest component: the header alone.
    const EMPTY_COMPONENT: &[u8] = b"\0asm\x0d\x00\x01\x00";
    const SHA: &str = "0000000000000000000000000000000000000000000000000000000000000001";

    /// Machine code for `EMPTY_COMPONENT` at a page boundary, static, as a host's binary embeds it.
    struct Embedded(&'static [u8]);

    // SAFETY: the code is precompiled by the shared engine itself, leaked (static) and never written.
    unsafe impl EmbeddedCode for Embedded {
        fn precompiled(&self, sha256: &str) -> Option<&'static [u8]> {
            (sha256 == SHA).then_some(self.0)
        }
    }

    fn embedded() -> &'static Embedded {
        let code = shared_engine().unwrap().precompile_component(EMPTY_COMPONENT).unwrap();
        let layout = Layout::from_size_align(code.len(), rustix::param::page_size()).unwrap();
        // SAFETY: a non-zero size; the memory is leaked, so it lives for the process.
        let page = unsafe { std::slice::from_raw_parts_mut(alloc_zeroed(layout), code.len()) };
        page.copy_from_slice(&code);
        Box::leak(Box::new(Embedded(page)))
    }

    fn limits() -> Limits {
        Limits::from_env().unwrap()
    }

    /// The runtime loads what the host hands it instead of compiling: the bytes it is given are no
    /// component at all, so only the embedded code can load; without it the same call fails.
    #[test]
    fn a_component_with_embedded_code_runs_that_code_and_is_remembered_as_in_place() {
        let embedded = embedded();
        let runtime = Runtime::new(CompileCache::disabled(), limits(), embedded).unwrap();
        runtime.load(b"not a component", SHA).expect("loaded from the embedded code");
        // Mapped where it lies: unpublishing it must restore read-only, not read-write.
        let code = embedded.0;
        assert!(crate::code_memory::in_place(code.as_ptr()));
        assert!(crate::code_memory::in_place(code.as_ptr().wrapping_add(code.len() - 1)));
        assert!(!crate::code_memory::in_place(code.as_ptr().wrapping_add(code.len())));

        let bare = Runtime::new(CompileCache::disabled(), limits(), &NoEmbeddedCode).unwrap();
        assert!(bare.load(b"not a component", SHA).is_err(), "nothing embedded: the bytes are compiled, and fail");
        assert!(bare.load(EMPTY_COMPONENT, SHA).is_ok());
    }
}
