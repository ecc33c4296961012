//! The compile cache: a plugin component is compiled by Cranelift once, stored as a precompiled
//! artifact, and loaded by mmap afterwards, which costs far less than copying the code into memory
//! again in every process. A bundled driver never touches it: its machine code comes with the binary
//! and runs in place (see [`super::code_memory`]).
//!
//! Loading a precompiled artifact is `unsafe` in wasmtime (the bytes become executable code), so the
//! cache only ever loads artifacts this host wrote itself, from a directory only the current user can
//! write, under a key made of the component's sha256 and the engine's precompile-compatibility hash. An
//! entry that fails to load is rebuilt.

use std::hash::{DefaultHasher, Hash, Hasher};
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};

use wasmtime::Engine;
use wasmtime::Result;
use wasmtime::component::Component;
use wasmtime::error::Context;

use crate::log::host_log;
use crate::private_dir::{self, ClosedTo};

/// Machine code a host built into its binary for the components it ships, found by a component's
/// sha256. The runtime knows nothing of which drivers those are: the host hands it one of these (the
/// `agmsg-host` binary, its bundled drivers), so this crate stays below every axis and driver.
///
/// # Safety
/// Code returned by [`EmbeddedCode::precompiled`] is run in place (see [`crate::code_memory`]): it must be
/// what `wasmtime` precompiled with [`crate::engine_config::engine_config`] for the component whose
/// sha256 is asked, embedded in the binary (static, never written). wasmtime still checks that it fits
/// the engine and the CPU.
pub unsafe trait EmbeddedCode: Sync {
    /// The machine code embedded for the component whose sha256 is `sha256`, if any.
    fn precompiled(&self, sha256: &str) -> Option<&'static [u8]>;
}

/// No embedded code: every component is compiled (through the cache).
pub struct NoEmbeddedCode;

// SAFETY: it returns no code.
unsafe impl EmbeddedCode for NoEmbeddedCode {
    fn precompiled(&self, _: &str) -> Option<&'static [u8]> {
        None
    }
}

pub struct CompileCache {
    /// The directory named, made and checked at its first use: an op on bundled drivers, which run
    /// their embedded code, never touches it.
    named: Option<PathBuf>,
    checked: OnceLock<Option<PathBuf>>,
}

impl CompileCache {
    /// No cache: compile in memory every time.
    pub fn disabled() -> CompileCache {
        CompileCache { named: None, checked: OnceLock::new() }
    }

    /// The cache at `AGMSG_CACHE_DIR`, else `$XDG_CACHE_HOME/agmsg-host`, else `~/.cache/agmsg-host`.
    /// A directory that is not private to this user is not used (with a warning, when it would be).
    pub fn from_env() -> CompileCache {
        let named = std::env::var_os("AGMSG_CACHE_DIR")
            .map(PathBuf::from)
            .or_else(|| std::env::var_os("XDG_CACHE_HOME").map(|d| PathBuf::from(d).join("agmsg-host")))
            .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache").join("agmsg-host")));
        CompileCache { named, checked: OnceLock::new() }
    }

    /// The cache directory, if caching is on (made if missing, and checked, the first time).
    pub fn dir(&self) -> Option<&std::path::Path> {
        self.checked
            .get_or_init(|| {
                let dir = self.named.clone()?;
                match private_dir::ensure(&dir, ClosedTo::Writing) {
                    Ok(()) => Some(dir),
                    Err(e) => {
                        host_log::warn(&format!("compile cache disabled: {e:#}"));
                        None
                    }
                }
            })
            .as_deref()
    }

    /// Load the component `wasm` (whose sha256 is `sha256`). If `embedded` has machine code for it (a
    /// bundled driver), that code runs in place (see [`super::code_memory`]), with no cache involved and
    /// nothing compiled, unless it does not fit this engine or CPU. Code to run comes only through the
    /// `unsafe` trait [`EmbeddedCode`], whose implementor vouches for it: a safe caller cannot hand this
    /// function arbitrary bytes to execute.
    pub fn load(&self, engine: &Engine, wasm: &[u8], sha256: &str, embedded: &dyn EmbeddedCode) -> Result<Component> {
        // Outcomes are logged at debug level (the tests read them): bundled, hit, miss, rebuilt.
        if let Some(code) = embedded.precompiled(sha256) {
            // Loaded once per process (the resident server loads every bundled driver before it forks,
            // so that no child does): the component is the same whoever asks.
            static LOADED: Mutex<Vec<(&'static [u8], Component)>> = Mutex::new(Vec::new());
            let mut loaded = LOADED.lock().unwrap_or_else(|e| e.into_inner());
            if let Some((_, component)) = loaded.iter().find(|(c, k)| std::ptr::eq(*c, code) && Engine::same(k.engine(), engine)) {
                host_log::debug(&format!("bundled machine code: loaded {sha256}"));
                return Ok(component.clone());
            }
            // SAFETY: `code` is what `EmbeddedCode`'s implementor promises: the machine code embedded
            // for exactly this component, with this engine's configuration, part of the binary (the
            // agmsg-host binary's comes from its build.rs).
            match unsafe { super::code_memory::load_in_place(engine, code) } {
                Ok(component) => {
                    host_log::debug(&format!("bundled machine code: loaded {sha256}"));
                    loaded.push((code, component.clone()));
                    return Ok(component);
                }
                Err(e) => host_log::debug(&format!("bundled machine code does not fit this engine or CPU ({e}); compiling")),
            }
        }
        let path = self.dir().map(|dir| dir.join(format!("{sha256}-{:016x}.cwasm", engine_key(engine))));
        let mut rebuilt = false;
        if let Some(path) = path.as_ref().filter(|p| p.exists()) {
            // SAFETY: the file is in a directory only this user can write, named after the content hash
            // of the component and this engine's compatibility hash, and was written by `store` below.
            match unsafe { Component::deserialize_file(engine, path) } {
                Ok(component) => {
                    host_log::debug(&format!("compile cache: hit {}", path.display()));
                    return Ok(component);
                }
                Err(e) => {
                    host_log::warn(&format!("compile cache: damaged entry {} rebuilt: {e}", path.display()));
                    rebuilt = true;
                }
            }
        }
        let artifact = engine.precompile_component(wasm).context("compiling the driver component")?;
        if let (Some(dir), Some(path)) = (self.dir(), &path) {
            if let Err(e) = store(dir, path, &artifact) {
                host_log::warn(&format!("compile cache: cannot write {}: {e:#}", path.display()));
            }
            host_log::debug(&format!("compile cache: {} {}", if rebuilt { "rebuilt" } else { "miss" }, path.display()));
        }
        // SAFETY: `artifact` was produced by this engine just now.
        unsafe { Component::deserialize(engine, &artifact) }.context("loading the compiled driver component")
    }
}

fn engine_key(engine: &Engine) -> u64 {
    let mut hasher = DefaultHasher::new();
    engine.precompile_compatibility_hash().hash(&mut hasher);
    hasher.finish()
}

/// Write atomically: a temp file in the cache directory, then rename.
fn store(dir: &Path, path: &Path, artifact: &[u8]) -> Result<()> {
    let tmp = dir.join(format!(".tmp-{}-{}", std::process::id(), path.file_name().unwrap().to_string_lossy()));
    let mut file = std::fs::OpenOptions::new().write(true).create_new(true).mode(0o600).open(&tmp)?;
    let result = file.write_all(artifact).and_then(|()| file.sync_all()).and_then(|()| std::fs::rename(&tmp, path));
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    Ok(result?)
}
