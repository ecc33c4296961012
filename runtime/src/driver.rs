//! Loading and calling a driver, whatever its axis: the one path from a component's bytes to a call.
//!
//! [`Driver::open`] loads the component (through the compile cache, or the machine code the host embedded
//! in its binary), builds its [`Grants`] from its capabilities, refuses it if it imports beyond them
//! ([`sandbox::admit`]), and links it with its axis's linker (once per process and component).
//! Instances are created on the first call. Every call sets the deadline, runs, routes the driver's
//! captured output to the log, and on a trap or limit drops the instance, so a poisoned instance is
//! never entered again (the next call gets a fresh one, and dropping the store releases whatever the
//! instance held, such as the store lock).
//!
//! An axis plugs in through [`DriverWorld`], which no one writes by hand: the axis's `world.rs` invokes
//! [`crate::world::driver_world!`] with its bindings and optional interfaces, and the macro generates
//! the world, its pre-linked form and this impl.

use std::any::Any;
use std::borrow::Cow;
use std::path::PathBuf;
use std::sync::Mutex;

use wasmtime::Store;
use wasmtime::component::{Component, InstancePre};

use super::engine::Runtime;
use super::failure::{self, CallFailure};
use super::limits::Limits;
use super::sandbox::{self, Grants, HostState, StoreDir};
use crate::axis::Axis;
use crate::capabilities::Capabilities;

/// An axis's world, as the host calls it: the bindings `wasmtime::component::bindgen!` generates for
/// `agmsg:<axis>/<axis>-driver`, and how to instantiate them.
pub trait DriverWorld: Sized + 'static {
    const AXIS: Axis;
    /// The world's pre-instantiated form (`<World>Pre<HostState>`).
    type Pre: Clone + Send + 'static;
    fn pre(instance_pre: InstancePre<HostState>) -> wasmtime::Result<Self::Pre>;
    fn instantiate(pre: &Self::Pre, store: &mut Store<HostState>) -> wasmtime::Result<Self>;
}

/// A driver component ready to load, of any axis: its name, its bytes, and what it runs with.
#[derive(Clone, Debug)]
pub struct DriverSource {
    pub name: String,
    pub sha256: String,
    pub wasm: Cow<'static, [u8]>,
    /// The component file (plugins and files named on the command line).
    pub path: Option<PathBuf>,
    /// Bundled drivers: their fixed capabilities; a plugin: what it declared AND the user granted.
    pub capabilities: Capabilities,
    /// Variables the host itself sets in the driver's environment (values it resolved, such as the
    /// postgres driver's database from agmsg's config), beside the granted `env:NAME` ones, which they
    /// replace.
    pub settings: Vec<(String, String)>,
}

/// A loaded driver of world `W`, with its instance (created on first call).
pub struct Driver<'rt, W: DriverWorld> {
    runtime: &'rt Runtime,
    name: String,
    sha256: String,
    pre: W::Pre,
    grants: Grants,
    /// What a kept instance must have been made with to serve this driver ([`crate::warm`]); none
    /// outside a resident server's spare, or when the store cannot be read (nothing is then kept or
    /// taken).
    warm_key: Option<String>,
    live: Option<(Store<HostState>, W)>,
}

impl<'rt, W: DriverWorld> Driver<'rt, W> {
    /// Load, admit and link `source`; `store_dir` is its store (granted only to an axis with stores,
    /// and only when its capabilities include `store`).
    pub fn open(runtime: &'rt Runtime, source: &DriverSource, store_dir: Option<StoreDir>) -> Result<Self, CallFailure> {
        let load_error = |e: String| CallFailure { message: format!("driver '{}' cannot be loaded: {e}", source.name) };
        let component = runtime.load(&source.wasm, &source.sha256).map_err(|e| load_error(format!("{e:#}")))?;
        let mut grants = Grants::new(W::AXIS, &source.capabilities, store_dir, runtime.limits);
        grants.env.retain(|(name, _)| !source.settings.iter().any(|(set, _)| set == name));
        grants.env.extend(source.settings.iter().cloned());
        sandbox::admit(&runtime.engine, &component, &grants).map_err(load_error)?;
        let pre = linked::<W>(runtime, &component, &source.sha256).map_err(|e| load_error(format!("{e:#}")))?;
        let warm_key = if crate::warm::enabled() { warm_key(&source.name, &source.sha256, &grants) } else { None };
        crate::warm::note_opened(W::AXIS);
        Ok(Driver { runtime, name: source.name.clone(), sha256: source.sha256.clone(), pre, grants, warm_key, live: None })
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn runtime(&self) -> &'rt Runtime {
        self.runtime
    }

    /// The linked component: its world's facts found at load (which optional exports it has).
    pub fn world_pre(&self) -> &W::Pre {
        &self.pre
    }

    /// What the driver runs with.
    pub fn grants(&self) -> &Grants {
        &self.grants
    }

    /// Make the instance now rather than on the first call (a resident server's spare, ahead of its op).
    pub fn instantiate(&mut self) -> Result<(), CallFailure> {
        self.live()?;
        Ok(())
    }

    /// The live instance: the one made before, else one kept for this driver ([`crate::warm`]), else a
    /// new one.
    fn live(&mut self) -> Result<&mut (Store<HostState>, W), CallFailure> {
        if self.live.is_none()
            && let Some(key) = &self.warm_key
        {
            self.live = crate::warm::take(key);
        }
        if self.live.is_none() {
            let limits = self.grants.limits;
            let mut store = sandbox::new_store(&self.runtime.engine, &self.name, &self.grants)
                .map_err(|e| CallFailure { message: format!("driver '{}': {e:#}", self.name) })?;
            let _running = begin_call(&mut store, &limits);
            let bindings = W::instantiate(&self.pre, &mut store).map_err(|e| {
                let memory_hit = store.data().limiter.hit;
                let stderr = store.data_mut().drain_output();
                failure::explain(&self.name, "instantiation", &e, &limits, memory_hit, &stderr)
            })?;
            self.live = Some((store, bindings));
        }
        Ok(self.live.as_mut().expect("instance was just made"))
    }

    /// Call `f` on the live instance, creating it first if needed. `op` names the call in errors.
    pub fn call<T>(&mut self, op: &str, f: impl FnOnce(&mut Store<HostState>, &W) -> wasmtime::Result<T>) -> Result<T, CallFailure> {
        let limits = self.grants.limits;
        let (store, bindings) = self.live()?;
        let running = begin_call(store, &limits);
        let result = f(store, bindings);
        drop(running);
        let stderr = store.data_mut().drain_output();
        match result {
            Ok(value) => Ok(value),
            Err(e) => {
                let memory_hit = store.data().limiter.hit;
                let failure = failure::explain(&self.name, op, &e, &limits, memory_hit, &stderr);
                self.live = None;
                Err(failure)
            }
        }
    }

    /// Run `f` on the live instance, if there is one, under a fresh deadline; drop the instance if it
    /// fails (cleanup such as dropping a resource).
    pub fn cleanup(&mut self, f: impl FnOnce(&mut Store<HostState>) -> wasmtime::Result<()>) {
        let limits = self.grants.limits;
        if let Some((store, _)) = self.live.as_mut() {
            let _running = begin_call(store, &limits);
            if f(store).is_err() {
                self.live = None;
            }
        }
    }
}

impl<W: DriverWorld> Drop for Driver<'_, W> {
    /// Where instances are kept (a resident server's spare or child), the live instance (one that has
    /// answered every call so far: a failed call drops it) is kept for the next driver opened with the
    /// same key, unless the store changed while it ran (a name at its top replaced, made or removed:
    /// the files it holds open may be either) or it still holds the store lock; it keeps no byte-range
    /// lock.
    fn drop(&mut self) {
        let (Some(mut live), Some(key)) = (self.live.take(), self.warm_key.take()) else { return };
        if live.0.data_mut().release_locks() && warm_key(&self.name, &self.sha256, &self.grants).as_ref() == Some(&key) {
            crate::warm::park(W::AXIS, key, Box::new(live));
        }
    }
}

/// The components this process has linked, by axis and sha256, the most recent last: linking
/// type-checks a component against its axis's linker (the process's one), the same work for every open
/// of the same bytes, and a resident server's child opens the same driver op after op. A few are kept.
static LINKED: Mutex<Vec<Linked>> = Mutex::new(Vec::new());
/// A linked component: its axis, its sha256, its world's `Pre`.
type Linked = (Axis, String, Box<dyn Any + Send>);
const LINKED_KEPT: usize = 8;

/// `component` (whose bytes hash to `sha256`) linked for world `W`: as linked before, else now.
fn linked<W: DriverWorld>(runtime: &Runtime, component: &Component, sha256: &str) -> wasmtime::Result<W::Pre> {
    let before = LINKED.lock().ok().and_then(|linked| {
        let (_, _, pre) = linked.iter().find(|(axis, hash, _)| *axis == W::AXIS && hash == sha256)?;
        pre.downcast_ref::<W::Pre>().cloned()
    });
    if let Some(pre) = before {
        return Ok(pre);
    }
    let pre = W::pre(runtime.linker(W::AXIS)?.instantiate_pre(component)?)?;
    if let Ok(mut linked) = LINKED.lock() {
        if linked.len() >= LINKED_KEPT {
            linked.remove(0);
        }
        linked.push((W::AXIS, sha256.to_owned(), Box::new(pre.clone())));
    }
    Ok(pre)
}

/// Everything an instance was made with, as one comparable text: the axis, the driver's name and
/// bytes, the store directory's identity and the inode of each name at its top (a database replaced
/// under its name is another store to an instance holding the old one open), and every grant
/// (environment values, programs, endpoints, limits). Taken before the instance opens anything.
fn warm_key(name: &str, sha256: &str, grants: &Grants) -> Option<String> {
    let store = grants.store_dir.as_ref().map(|dir| Ok::<_, std::io::Error>((dir.identity()?, dir.entries()?))).transpose().ok()?;
    Some(format!(
        "{}\0{}\0{}\0{store:?}\0{:?}\0{:?}\0{:?}\0{}\0{:?}",
        grants.axis, name, sha256, grants.env, grants.process, grants.network, grants.inert_sockets, grants.limits
    ))
}

/// A call's fresh deadline, for its wasm (epoch ticks) and for the host calls it makes (an instant). The
/// epoch advances while the returned guard lives: hold it until the call returns.
fn begin_call(store: &mut Store<HostState>, limits: &Limits) -> super::engine::RunningCall {
    let running = super::engine::running_call();
    store.set_epoch_deadline(limits.deadline_ticks());
    store.data_mut().deadline = std::time::Instant::now() + limits.call_timeout;
    running
}
