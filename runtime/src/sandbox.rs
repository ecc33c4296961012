//! The one place that decides what a driver component may touch.
//!
//! [`Grants::new`] turns a driver's capabilities (bundled drivers: their fixed ones; plugins: declared
//! AND granted by the user) into access; [`admit`] refuses, before any of its code runs, a component
//! that imports beyond them; [`new_store`] builds each instance's context from them.
//!
//! Every driver gets: no arguments; its stdout and stderr captured (capped) and routed to the host log;
//! the `agmsg:host/log` interface; a memory cap and a call deadline (raised only as granted). Beyond
//! that, only what is granted:
//! - `store` (storage drivers): the store directory preopened at `/store` (read-write) and nothing
//!   else of the filesystem, plus `agmsg:host/lock` and `agmsg:host/file-lock` (byte-range locks on
//!   plain files of that store only);
//! - `env:NAME`: the named variables that are set on the host, and no others;
//! - `program:NAME` (terminal drivers): `agmsg:host/process`, limited to those programs and argument
//!   shapes ([`ProcessGrant`]);
//! - `network:HOST:PORT`: TCP connections to those endpoints' addresses only;
//! - `inert-sockets`: `wasi:sockets` imports link with no network granted, and every call is denied
//!   (without it, or a network grant, a component importing them is refused at load).

use std::time::{Duration, Instant};

use wasmtime::Result;
use wasmtime::component::{Component, Linker, ResourceTable};
use wasmtime::error::Context;
use wasmtime::{Engine, ResourceLimiter, Store};
use wasmtime_wasi::sockets::SocketAddrUse;
use wasmtime_wasi::{FsPerms, WasiCtx, WasiCtxBuilder, WasiCtxView, WasiView};

use crate::axis::{Axis, HostInterface, offered_packages};
use crate::capabilities::{Capabilities, parse_endpoint};
use crate::log::Severity;

use super::caps::deadline::DeadlineIo;
use super::caps::file_lock::FileLockCtx;
use super::caps::lock::{LockView, StoreLockCtx};
use super::caps::log::LogCtx;
use super::caps::output::CapturedOutput;
pub use super::caps::process::ProcessGrant;
use super::caps::process::ProcessView;
use super::caps::seal::SealCtx;
pub use super::caps::seal::Sealer;
pub use super::caps::store::StoreDir;
use super::caps::store_view::StoreViewCtx;
use super::limits::Limits;

/// Where a storage driver's store directory appears inside the sandbox.
pub const GUEST_STORE_DIR: &str = "/store";
/// A driver's captured stdout and stderr are cut off (with a trap) beyond this, in one call.
pub const MAX_CAPTURED_OUTPUT: usize = 1 << 20;

/// Everything one driver is granted: built from its capabilities by [`Grants::new`], the one place
/// where capabilities become access.
#[derive(Clone, Debug)]
pub struct Grants {
    pub axis: Axis,
    /// The store directory, preopened read-write at [`GUEST_STORE_DIR`] (storage drivers granted
    /// `store`), held open by the host.
    pub store_dir: Option<StoreDir>,
    /// Granted variables that are set on the host (the driver's whole environment).
    pub env: Vec<(String, String)>,
    /// The programs it may run (terminal drivers).
    pub process: Option<ProcessGrant>,
    /// `host:port` endpoints it may connect to.
    pub network: Vec<String>,
    /// Whether `wasi:sockets` imports link with no network granted (every call then denied).
    pub inert_sockets: bool,
    /// Its call deadline and memory cap: the defaults (or the user's overrides), raised as granted.
    pub limits: Limits,
}

impl Grants {
    /// What a driver of `axis` with these (declared AND granted) capabilities gets.
    pub fn new(axis: Axis, caps: &Capabilities, store_dir: Option<StoreDir>, base: Limits) -> Grants {
        let mut limits = base;
        if let Some(mb) = caps.memory_mb() {
            limits.memory_bytes = limits.memory_bytes.max(usize::try_from(mb).unwrap_or(usize::MAX).saturating_mul(1 << 20));
        }
        if let Some(ms) = caps.timeout_ms() {
            limits.call_timeout = limits.call_timeout.max(Duration::from_millis(ms));
        }
        let env_names: Vec<String> = caps.env().map(str::to_owned).collect();
        let process = axis.runs_programs().then(|| {
            let programs: Vec<_> = caps.programs().map(|(name, args)| (name.to_owned(), args.cloned())).collect();
            ProcessGrant::resolve(&programs, &env_names, limits.process_timeout)
        });
        Grants {
            axis,
            store_dir: store_dir.filter(|_| axis.has_store() && caps.store()),
            // WASI environments are strings; a variable that is not UTF-8 is not passed.
            env: env_names.iter().filter_map(|name| Some((name.clone(), std::env::var(name).ok()?))).collect(),
            process,
            network: caps.network().map(str::to_owned).collect(),
            inert_sockets: caps.inert_sockets(),
            limits,
        }
    }
}

/// Refuse, before it runs, a component that is not a driver of its axis, was built against an
/// incompatible contract version, or imports anything beyond its grants (an interface its axis does not
/// offer, or `wasi:sockets` without the network granted).
pub fn admit(engine: &Engine, component: &Component, grants: &Grants) -> std::result::Result<(), String> {
    let (imports, exports) = interfaces(engine, component);
    for import in &imports {
        check_import(import, grants)?;
    }
    let package = grants.axis.package();
    let contract: Vec<&String> = exports.iter().filter(|e| e.starts_with(&format!("{package}/"))).collect();
    if contract.is_empty() {
        return Err(format!("it exports no {package} interface, so it is not a {} driver (exports: {})", grants.axis, list(&exports)));
    }
    for export in contract {
        check_version(export).map_err(|e| format!("it was {e}"))?;
    }
    Ok(())
}

/// A component's imported and exported interface names (`wasi:io/streams@0.2.6`, ...).
pub fn interfaces(engine: &Engine, component: &Component) -> (Vec<String>, Vec<String>) {
    let ty = component.component_type();
    (ty.imports(engine).map(|(name, _)| name.to_owned()).collect(), ty.exports(engine).map(|(name, _)| name.to_owned()).collect())
}

fn list(names: &[String]) -> String {
    if names.is_empty() { "none".to_owned() } else { names.join(", ") }
}

fn check_import(import: &str, grants: &Grants) -> std::result::Result<(), String> {
    let interface = import.split('@').next().unwrap_or(import);
    let axis = grants.axis;
    let offered = match interface {
        "wasi:cli/environment" | "wasi:cli/exit" | "wasi:cli/stdin" | "wasi:cli/stdout" | "wasi:cli/stderr" => true,
        i if i.starts_with("wasi:cli/terminal-") => true,
        i if i.starts_with("wasi:io/") || i.starts_with("wasi:clocks/") || i.starts_with("wasi:random/") => true,
        // Without a preopen (terminal drivers, storage drivers not granted a store) nothing is reachable.
        "wasi:filesystem/types" | "wasi:filesystem/preopens" => true,
        i if i.starts_with("wasi:sockets/") => {
            if grants.network.is_empty() && !grants.inert_sockets {
                return Err(format!(
                    "it imports {import}, but no network access is granted (a driver that needs the network asks for \
                     `network = [\"host:port\"]` and the user grants it; one whose language runtime imports sockets it never \
                     uses declares `inert_sockets = true`)"
                ));
            }
            true
        }
        // The axis's own shared types (ids, records, errors), imported by the driver world.
        i if i == format!("{}/{}", axis.package(), axis.contract_interfaces().shared_types) => true,
        i => axis.host_interfaces().iter().any(|offered| offered.name() == i),
    };
    if !offered {
        return Err(format!("it imports {import}, which this host does not offer to {axis} drivers"));
    }
    if interface.starts_with("agmsg:") {
        check_version(import).map_err(|e| format!("it was {e}"))?;
    }
    Ok(())
}

/// A manifest's `api` (the `agmsg:<axis>` version a driver targets) against the version this host offers.
pub fn check_api(axis: Axis, version: &str) -> std::result::Result<(), String> {
    check_version(&format!("{}/{}@{version}", axis.package(), axis.contract_interfaces().exported))
}

/// `agmsg:<package>/<interface>@<version>` against the version this host offers; the error completes
/// "it was ...".
fn check_version(name: &str) -> std::result::Result<(), String> {
    let (interface, version) = name.split_once('@').unwrap_or((name, ""));
    let package = interface.split('/').next().unwrap_or(interface);
    let Some((_, ours)) = offered_packages().find(|(p, _)| *p == package) else {
        return Err(format!("built against {name}, a package this host does not offer"));
    };
    if crate::semver::compatible(version, ours) {
        Ok(())
    } else {
        Err(format!("built against {package}@{version}, which is not compatible with the {package}@{ours} this host offers"))
    }
}

/// Per-instance host state: each capability's own state, composed. A capability sees only its slice
/// (the `project_*` functions below), so none depends on another or on this struct.
pub struct HostState {
    /// When the current call must end; host calls that wait stop waiting by then.
    pub deadline: Instant,
    log: LogCtx,
    lock: StoreLockCtx,
    file_lock: FileLockCtx,
    /// The programs it may run (terminal drivers).
    process: Option<ProcessGrant>,
    /// Who seals remote-sync envelopes, while an op that may seal runs (storage drivers).
    seal: SealCtx,
    /// What of the store the driver sees (storage drivers): not the names that are not its own.
    store_view: StoreViewCtx,
    table: ResourceTable,
    pub limiter: MemoryLimiter,
    wasi: WasiCtx,
    stdout: CapturedOutput,
    stderr: CapturedOutput,
}

impl WasiView for HostState {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView { ctx: &mut self.wasi, table: &mut self.table }
    }
}

impl HostState {
    /// Make the instance fit to be kept between ops ([`crate::warm`]): its byte-range locks released.
    /// False when it holds the store lock, which is then not taken from it: such an instance is not kept.
    pub fn release_locks(&mut self) -> bool {
        if self.lock.held() {
            return false;
        }
        self.file_lock.release_all();
        true
    }

    /// Install a sealer for the op about to run (`agmsg:host/seal`), or remove it when the op ends.
    pub fn set_sealer(&mut self, sealer: Option<Box<dyn Sealer>>) {
        self.seal.set(sealer);
    }

    /// Route what the driver printed since the last call to the host log, and return its stderr (a
    /// panic message, typically) for error reports.
    pub fn drain_output(&mut self) -> String {
        let out = String::from_utf8_lossy(&self.stdout.take()).into_owned();
        let err = String::from_utf8_lossy(&self.stderr.take()).into_owned();
        self.log.end_call();
        if !out.is_empty() {
            self.log.printed(Severity::Info, &out);
        }
        if !err.is_empty() {
            self.log.printed(Severity::Warn, &err);
        }
        err
    }
}

fn project_log(state: &mut HostState) -> &mut LogCtx {
    &mut state.log
}

fn project_lock(state: &mut HostState) -> LockView<'_> {
    LockView { ctx: &mut state.lock, table: &mut state.table, deadline: state.deadline }
}

fn project_file_lock(state: &mut HostState) -> &mut FileLockCtx {
    &mut state.file_lock
}

fn project_process(state: &mut HostState) -> ProcessView<'_> {
    ProcessView { grant: state.process.as_ref(), log_source: state.log.source(), deadline: state.deadline }
}

fn project_store_view(state: &mut HostState) -> &mut StoreViewCtx {
    &mut state.store_view
}

fn project_seal(state: &mut HostState) -> &mut SealCtx {
    &mut state.seal
}

fn project_io(state: &mut HostState) -> DeadlineIo<'_> {
    DeadlineIo { table: &mut state.table, deadline: state.deadline }
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

/// The linker for drivers of `axis`: WASI, with the sandbox's two changes (blocking `wasi:io` calls end
/// at the call's deadline, and no symlink can be created), plus the `agmsg:host` interfaces the axis is
/// offered and the axis's types interface. Which of those a driver may actually use is decided by its
/// grants ([`admit`] and [`new_store`]).
pub fn linker(engine: &Engine, axis: Axis) -> Result<Linker<HostState>> {
    let mut linker = Linker::new(engine);
    wasmtime_wasi::p2::add_to_linker_sync(&mut linker).context("adding WASI to the linker")?;
    super::caps::deadline::bind_wasi_io(&mut linker, project_io).context("binding wasi:io to call deadlines")?;
    super::caps::store::deny_symlinks(&mut linker).context("denying symlinks")?;
    if axis.has_store() {
        super::caps::store_view::link(&mut linker, project_store_view).context("linking the driver's view of its store")?;
    }
    for interface in axis.host_interfaces() {
        match interface {
            HostInterface::Log => super::caps::log::link(&mut linker, project_log),
            HostInterface::Lock => super::caps::lock::link(&mut linker, project_lock),
            HostInterface::FileLock => super::caps::file_lock::link(&mut linker, project_file_lock),
            HostInterface::Process => super::caps::process::link(&mut linker, project_process),
            HostInterface::Seal => super::caps::seal::link(&mut linker, project_seal),
        }
        .with_context(|| format!("adding {} to the linker", interface.name()))?;
    }
    // The axis's `types` interface has no functions, but a driver imports it: an empty instance.
    linker
        .instance(&format!("{}/{}@{}", axis.package(), axis.contract_interfaces().shared_types, axis.package_version()))
        .with_context(|| format!("adding {}'s shared types to the linker", axis.package()))?;
    Ok(linker)
}

/// A store for one instance of a driver, with exactly its grants. Every driver: captured output, no
/// arguments, the memory cap, no network unless granted (and then only the granted endpoints, resolved
/// now). By grant: the store preopened at [`GUEST_STORE_DIR`], the granted variables, programs.
pub fn new_store(engine: &Engine, driver_name: &str, grants: &Grants) -> Result<Store<HostState>> {
    let stdout = CapturedOutput::new(MAX_CAPTURED_OUTPUT);
    let stderr = CapturedOutput::new(MAX_CAPTURED_OUTPUT);
    let mut builder = WasiCtxBuilder::new();
    builder
        .stdout(stdout.clone())
        .stderr(stderr.clone())
        .allow_blocking_current_thread(true)
        .allow_tcp(false)
        .allow_udp(false)
        .allow_ip_name_lookup(false);
    if let Some(dir) = &grants.store_dir {
        let path = dir.preopen_path().with_context(|| format!("cannot open the store directory {}", dir.path().display()))?;
        builder
            .preopened_dir(path, GUEST_STORE_DIR, FsPerms::ReadWrite)
            .with_context(|| format!("cannot open the store directory {}", dir.path().display()))?;
    }
    for (name, value) in &grants.env {
        builder.env(name, value);
    }
    if !grants.network.is_empty() {
        grant_network(&mut builder, &grants.network)?;
    }
    let state = HostState {
        deadline: Instant::now() + grants.limits.call_timeout,
        log: LogCtx::new(driver_name),
        lock: StoreLockCtx::new(grants.store_dir.clone()),
        file_lock: FileLockCtx::new(grants.store_dir.clone()),
        process: grants.process.clone(),
        seal: SealCtx::default(),
        store_view: StoreViewCtx::new(grants.store_dir.as_ref()),
        table: ResourceTable::new(),
        limiter: MemoryLimiter { max_bytes: grants.limits.memory_bytes, hit: false },
        wasi: builder.build(),
        stdout,
        stderr,
    };
    let mut store = Store::new(engine, state);
    store.limiter(|state| &mut state.limiter);
    Ok(store)
}

/// TCP connections to the granted endpoints' addresses, nothing else (no listening, no UDP). Name
/// lookup is on only when an endpoint is a host name, since the driver must resolve it.
fn grant_network(builder: &mut WasiCtxBuilder, endpoints: &[String]) -> Result<()> {
    use std::net::ToSocketAddrs;
    let mut allowed = Vec::new();
    let mut names = false;
    for endpoint in endpoints {
        let (host, port) = parse_endpoint(endpoint).map_err(wasmtime::Error::msg)?;
        names |= host.parse::<std::net::IpAddr>().is_err();
        // An endpoint that does not resolve now is simply unreachable.
        allowed.extend((host.as_str(), port).to_socket_addrs().into_iter().flatten());
    }
    let allowed = std::sync::Arc::new(allowed);
    builder.allow_tcp(true).allow_ip_name_lookup(names).socket_addr_check(move |addr, usage| {
        let ok = match usage {
            SocketAddrUse::TcpConnect => allowed.contains(&addr),
            // The implicit bind of a connect (wildcard address, any port); never a chosen port.
            SocketAddrUse::TcpBind => addr.ip().is_unspecified() && addr.port() == 0,
            _ => false,
        };
        Box::pin(std::future::ready(ok))
    });
    Ok(())
}
