//! The one way to call into a driver instance, whatever its axis.
//!
//! Every call: sets the epoch deadline, runs, routes the driver's captured output to the log, and on a
//! trap or limit drops the instance, so a poisoned instance is never entered again (the next call gets
//! a fresh one, and dropping the store releases whatever the instance held, such as the store lock).

use wasmtime::Store;

use super::sandbox::HostState;
use super::{CallFailure, Limits, failure};

/// A driver's instance (created on first call) and the bindings of its world.
pub struct DriverInstance<B> {
    name: String,
    /// The driver's own limits (its grants may raise the defaults).
    limits: Limits,
    live: Option<(Store<HostState>, B)>,
}

impl<B> DriverInstance<B> {
    pub fn new(name: &str, limits: Limits) -> Self {
        DriverInstance { name: name.to_owned(), limits, live: None }
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// Call `f` on the live instance, creating it first with `new_store` and `instantiate` if needed.
    pub fn call<T>(
        &mut self,
        op: &str,
        new_store: impl FnOnce() -> wasmtime::Result<Store<HostState>>,
        instantiate: impl FnOnce(&mut Store<HostState>) -> wasmtime::Result<B>,
        f: impl FnOnce(&mut Store<HostState>, &B) -> wasmtime::Result<T>,
    ) -> Result<T, CallFailure> {
        let limits = self.limits;
        if self.live.is_none() {
            let mut store = new_store().map_err(|e| CallFailure { message: format!("driver '{}': {e:#}", self.name) })?;
            begin_call(&mut store, &limits);
            let bindings = instantiate(&mut store).map_err(|e| {
                let memory_hit = store.data().limiter.hit;
                let stderr = store.data_mut().drain_output();
                failure::explain(&self.name, "instantiation", &e, &limits, memory_hit, &stderr)
            })?;
            self.live = Some((store, bindings));
        }
        let (store, bindings) = self.live.as_mut().expect("instance was just created");
        begin_call(store, &limits);
        let result = f(store, bindings);
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
        if let Some((store, _)) = self.live.as_mut() {
            begin_call(store, &self.limits);
            if f(store).is_err() {
                self.live = None;
            }
        }
    }
}

/// A call's fresh deadline, for its wasm (epoch ticks) and for the host calls it makes (an instant).
fn begin_call(store: &mut Store<HostState>, limits: &Limits) {
    store.set_epoch_deadline(limits.deadline_ticks());
    store.data_mut().deadline = std::time::Instant::now() + limits.call_timeout;
}
