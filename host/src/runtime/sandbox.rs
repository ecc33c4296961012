//! The one place that decides what a driver component may touch.
//!
//! Every driver gets: no arguments; no network (no sockets, no name lookup); its stdout and stderr
//! captured (capped) and routed to the host log; the `agmsg:host/log` interface; a memory cap. Beyond
//! that, by axis:
//! - a storage driver: its store directory preopened at `/store` (read-write) and nothing else of the
//!   filesystem; no environment variables; the `agmsg:host/lock` and `agmsg:host/file-lock` interfaces
//!   (byte-range locks on plain files of its own store only).
//! - a terminal driver: no filesystem at all; the environment variables its manifest declares (those
//!   set on the host); the `agmsg:host/process` interface, limited to the programs its manifest
//!   declares ([`ProcessGrant`]).
//!
//! Everything else a component might import is absent from its linker, so such a component fails to
//! instantiate before any of its code runs.

use std::path::PathBuf;

use wasmtime::Result;
use wasmtime::error::Context;
use wasmtime::component::{HasSelf, Linker, ResourceTable};
use wasmtime::{Engine, ResourceLimiter, Store};
use wasmtime_wasi::p2::pipe::MemoryOutputPipe;
use wasmtime_wasi::{FsPerms, WasiCtx, WasiCtxBuilder, WasiCtxView, WasiView};

use super::caps::log::{Severity, emit};
pub use super::caps::process::ProcessGrant;
use super::caps::file_lock::LockedFiles;
use super::engine::Limits;

pub mod bindings {
    pub mod storage {
        wasmtime::component::bindgen!({
            world: "agmsg:storage/storage-driver@1.0.0",
            path: ["../wit/host", "../wit/storage"],
            with: {
                "agmsg:host/lock.guard": crate::runtime::caps::lock::LockGuard,
            },
        });
    }

    pub mod terminal {
        wasmtime::component::bindgen!({
            world: "agmsg:terminal/terminal-driver@1.0.0",
            path: ["../wit/host", "../wit/terminal"],
            with: {
                // One log interface for every axis.
                "agmsg:host/log": super::storage::agmsg::host::log,
            },
        });
    }
}

/// Where a storage driver's store directory appears inside the sandbox.
pub const GUEST_STORE_DIR: &str = "/store";
/// A driver's captured stdout and stderr are cut off (with a trap) beyond this.
pub const MAX_CAPTURED_OUTPUT: usize = 1 << 20;

/// What a storage driver is granted.
#[derive(Clone, Debug)]
pub struct StorageGrants {
    /// The store directory, preopened read-write at [`GUEST_STORE_DIR`]. It must exist.
    pub store_dir: PathBuf,
}

/// What a terminal driver is granted: the programs and variables its manifest declares.
#[derive(Clone, Debug)]
pub struct TerminalGrants {
    pub process: ProcessGrant,
}

/// Per-instance host state.
pub struct HostState {
    pub driver_name: String,
    /// The store directory (storage drivers): what the lock locks.
    pub store_dir: Option<PathBuf>,
    /// Store files this instance holds byte-range locks on (storage drivers).
    pub locked_files: LockedFiles,
    /// The programs it may run (terminal drivers).
    pub process: Option<ProcessGrant>,
    pub lock_held: bool,
    pub table: ResourceTable,
    pub limiter: MemoryLimiter,
    wasi: WasiCtx,
    stdout: MemoryOutputPipe,
    stderr: MemoryOutputPipe,
}

impl WasiView for HostState {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView { ctx: &mut self.wasi, table: &mut self.table }
    }
}

impl HostState {
    /// Route what the driver printed since the last call to the host log, and return its stderr (a
    /// panic message, typically) for error reports.
    pub fn drain_output(&mut self) -> String {
        let out = take(&mut self.stdout);
        let err = take(&mut self.stderr);
        let source = format!("driver {}", self.driver_name);
        if !out.is_empty() {
            emit(&source, Severity::Info, &out);
        }
        if !err.is_empty() {
            emit(&source, Severity::Warn, &err);
        }
        err
    }
}

fn take(pipe: &mut MemoryOutputPipe) -> String {
    let bytes = std::mem::replace(pipe, MemoryOutputPipe::new(0)).contents();
    String::from_utf8_lossy(&bytes).into_owned()
}

/// Caps linear memory and tables; remembers that it refused, so the failure can say which limit hit.
pub struct MemoryLimiter {
    pub max_bytes: usize,
    pub hit: bool,
}

impl ResourceLimiter for MemoryLimiter {
    fn memory_growing(&mut self, _current: usize, desired: usize, _maximum: Option<usize>) -> Result<bool> {
        if desired > self.max_bytes {
            self.hit = true;
            wasmtime::bail!("memory limit of {} MiB reached", self.max_bytes >> 20);
        }
        Ok(true)
    }

    fn table_growing(&mut self, _current: usize, desired: usize, _maximum: Option<usize>) -> Result<bool> {
        if desired > 1_000_000 {
            self.hit = true;
            wasmtime::bail!("table limit reached");
        }
        Ok(true)
    }
}

/// The linker for storage drivers: WASI (filesystem confined by the preopen, no sockets granted) plus
/// the `agmsg:host` interfaces.
pub fn storage_linker(engine: &Engine) -> Result<Linker<HostState>> {
    let mut linker = Linker::new(engine);
    wasmtime_wasi::p2::add_to_linker_sync(&mut linker).context("adding WASI to the linker")?;
    bindings::storage::StorageDriver::add_to_linker::<_, HasSelf<_>>(&mut linker, |state| state)
        .context("adding the agmsg host interfaces to the linker")?;
    Ok(linker)
}

/// The linker for terminal drivers: WASI (no preopens are ever granted) plus `agmsg:host` log and
/// process.
pub fn terminal_linker(engine: &Engine) -> Result<Linker<HostState>> {
    let mut linker = Linker::new(engine);
    wasmtime_wasi::p2::add_to_linker_sync(&mut linker).context("adding WASI to the linker")?;
    bindings::terminal::TerminalDriver::add_to_linker::<_, HasSelf<_>>(&mut linker, |state| state)
        .context("adding the agmsg host interfaces to the linker")?;
    Ok(linker)
}

/// A store for one instance: what every driver gets (captured output, no network, no arguments, the
/// memory cap), plus the axis' grants, which `grant` adds to the WASI context.
fn new_store(
    engine: &Engine,
    driver_name: &str,
    limits: &Limits,
    store_dir: Option<PathBuf>,
    process: Option<ProcessGrant>,
    grant: impl FnOnce(&mut WasiCtxBuilder) -> Result<()>,
) -> Result<Store<HostState>> {
    let stdout = MemoryOutputPipe::new(MAX_CAPTURED_OUTPUT);
    let stderr = MemoryOutputPipe::new(MAX_CAPTURED_OUTPUT);
    let mut builder = WasiCtxBuilder::new();
    builder
        .stdout(stdout.clone())
        .stderr(stderr.clone())
        .allow_blocking_current_thread(true)
        .allow_tcp(false)
        .allow_udp(false)
        .allow_ip_name_lookup(false);
    grant(&mut builder)?;
    let state = HostState {
        driver_name: driver_name.to_owned(),
        store_dir,
        process,
        lock_held: false,
        locked_files: LockedFiles::default(),
        table: ResourceTable::new(),
        limiter: MemoryLimiter { max_bytes: limits.memory_bytes, hit: false },
        wasi: builder.build(),
        stdout,
        stderr,
    };
    let mut store = Store::new(engine, state);
    store.limiter(|state| &mut state.limiter);
    Ok(store)
}

/// A fresh store for one instance of a storage driver, with exactly its grants.
pub fn storage_store(engine: &Engine, driver_name: &str, grants: &StorageGrants, limits: &Limits) -> Result<Store<HostState>> {
    new_store(engine, driver_name, limits, Some(grants.store_dir.clone()), None, |builder| {
        builder
            .preopened_dir(&grants.store_dir, GUEST_STORE_DIR, FsPerms::ReadWrite)
            .with_context(|| format!("cannot open the store directory {}", grants.store_dir.display()))?;
        Ok(())
    })
}

/// A fresh store for one instance of a terminal driver, with exactly its grants.
pub fn terminal_store(engine: &Engine, driver_name: &str, grants: &TerminalGrants, limits: &Limits) -> Result<Store<HostState>> {
    new_store(engine, driver_name, limits, None, Some(grants.process.clone()), |builder| {
        for (name, value) in grants.process.env() {
            // WASI environments are strings; a variable that is not UTF-8 is not passed.
            if let Some(value) = value.to_str() {
                builder.env(name, value);
            }
        }
        Ok(())
    })
}

/// The `types` interfaces have no functions; their host traits are empty.
impl bindings::storage::agmsg::storage::types::Host for HostState {}
impl bindings::terminal::agmsg::terminal::types::Host for HostState {}
