//! The engine, its epoch ticker and per-call limits. Created once per process; everything here is off
//! the per-call path.

use std::sync::OnceLock;
use std::time::Duration;

use wasmtime::Result;
use wasmtime::error::Context;
use wasmtime::component::{Component, Linker};
use wasmtime::{Config, Engine};

use super::cache::CompileCache;
use super::sandbox::HostState;

/// How often the epoch advances: the granularity of call deadlines.
pub const EPOCH_TICK: Duration = Duration::from_millis(10);

/// Limits every call and every instance runs under.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    /// Wall-clock deadline of one call into a driver.
    pub call_timeout: Duration,
    /// Cap on a driver instance's linear memory (and tables).
    pub memory_bytes: usize,
    /// Time limit of one program a terminal driver runs (kept below the call deadline).
    pub process_timeout: Duration,
}

impl Limits {
    pub const DEFAULT_CALL_TIMEOUT: Duration = Duration::from_secs(30);
    pub const DEFAULT_MEMORY_BYTES: usize = 256 << 20;
    pub const DEFAULT_PROCESS_TIMEOUT: Duration = Duration::from_secs(10);

    /// Defaults, overridden by `AGMSG_DRIVER_TIMEOUT_MS`, `AGMSG_DRIVER_MEMORY_MB` and
    /// `AGMSG_PROCESS_TIMEOUT_MS`.
    pub fn from_env() -> Result<Limits> {
        let mut limits = Limits {
            call_timeout: Self::DEFAULT_CALL_TIMEOUT,
            memory_bytes: Self::DEFAULT_MEMORY_BYTES,
            process_timeout: Self::DEFAULT_PROCESS_TIMEOUT,
        };
        if let Some(ms) = env_number("AGMSG_PROCESS_TIMEOUT_MS")? {
            limits.process_timeout = Duration::from_millis(ms);
        }
        if let Some(ms) = env_number("AGMSG_DRIVER_TIMEOUT_MS")? {
            limits.call_timeout = Duration::from_millis(ms);
        }
        if let Some(mb) = env_number("AGMSG_DRIVER_MEMORY_MB")? {
            limits.memory_bytes = usize::try_from(mb).unwrap_or(usize::MAX).saturating_mul(1 << 20);
        }
        Ok(limits)
    }

    /// The call deadline in epoch ticks (at least one).
    pub fn deadline_ticks(&self) -> u64 {
        (self.call_timeout.as_millis() / EPOCH_TICK.as_millis()).max(1) as u64
    }
}

fn env_number(name: &str) -> Result<Option<u64>> {
    match std::env::var(name) {
        Ok(v) => v
            .trim()
            .parse::<u64>()
            .ok()
            .filter(|n| *n > 0)
            .map(Some)
            .with_context(|| format!("{name} must be a positive whole number, not {v:?}")),
        Err(_) => Ok(None),
    }
}

/// The process-wide runtime: engine, linker and compile cache.
pub struct Runtime {
    pub engine: Engine,
    /// Built on first use: a process runs drivers of one axis, and start-up pays only for that one.
    storage_linker: OnceLock<Linker<HostState>>,
    terminal_linker: OnceLock<Linker<HostState>>,
    pub cache: CompileCache,
    pub limits: Limits,
}

impl Runtime {
    pub fn new(cache: CompileCache, limits: Limits) -> Result<Runtime> {
        let mut config = Config::new();
        config.epoch_interruption(true);
        config.wasm_component_model(true);
        // Deterministic codegen settings: precompiled artifacts are keyed by this engine's
        // compatibility hash, so keep the config stable across runs.
        config.cranelift_opt_level(wasmtime::OptLevel::Speed);
        let engine = Engine::new(&config).context("creating the wasmtime engine")?;
        start_epoch_ticker(&engine);
        Ok(Runtime { engine, storage_linker: OnceLock::new(), terminal_linker: OnceLock::new(), cache, limits })
    }

    /// The linker storage drivers are instantiated with.
    pub fn storage_linker(&self) -> Result<&Linker<HostState>> {
        linker(&self.storage_linker, || super::sandbox::storage_linker(&self.engine))
    }

    /// The linker terminal drivers are instantiated with.
    pub fn terminal_linker(&self) -> Result<&Linker<HostState>> {
        linker(&self.terminal_linker, || super::sandbox::terminal_linker(&self.engine))
    }

    /// Load a component through the compile cache.
    pub fn load(&self, wasm: &[u8], sha256: &str) -> Result<Component> {
        self.cache.load(&self.engine, wasm, sha256)
    }
}

fn linker<'a>(cell: &'a OnceLock<Linker<HostState>>, build: impl FnOnce() -> Result<Linker<HostState>>) -> Result<&'a Linker<HostState>> {
    if let Some(linker) = cell.get() {
        return Ok(linker);
    }
    let built = build()?;
    Ok(cell.get_or_init(|| built))
}

/// One background thread advances the epoch for the engine's lifetime (the process).
fn start_epoch_ticker(engine: &Engine) {
    static STARTED: OnceLock<()> = OnceLock::new();
    STARTED.get_or_init(|| {
        let weak = engine.weak();
        std::thread::Builder::new()
            .name("agmsg-epoch".into())
            .spawn(move || {
                while let Some(engine) = weak.upgrade() {
                    engine.increment_epoch();
                    drop(engine);
                    std::thread::sleep(EPOCH_TICK);
                }
            })
            .expect("spawning the epoch thread");
    });
}
