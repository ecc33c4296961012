//! The terminal axis's world as the host calls it: the bindings of `agmsg:terminal/terminal-driver`,
//! which share the `agmsg:host` interfaces of every axis (`runtime::caps::wit`), and their
//! [`DriverWorld`].

use wasmtime::Store;
use wasmtime::component::InstancePre;

use crate::axis::Axis;
use crate::runtime::{DriverWorld, HostState};

mod bindings {
    wasmtime::component::bindgen!({
        world: "agmsg:terminal/terminal-driver@1.0.0",
        path: ["../wit/host", "../wit/terminal"],
        with: {
            "agmsg:host/log": crate::runtime::caps::wit::log,
            "agmsg:host/process": crate::runtime::caps::wit::process,
        },
    });
}

/// The generated bindings of the terminal world (not to be confused with the guest SDK's trait).
pub use bindings::TerminalDriver as TerminalWorld;
/// The contract's types (`agmsg:terminal/types`), as the host sees them.
pub use bindings::agmsg::terminal::types as wit;

impl DriverWorld for TerminalWorld {
    const AXIS: Axis = Axis::Terminal;
    type Pre = bindings::TerminalDriverPre<HostState>;

    fn pre(instance_pre: InstancePre<HostState>) -> wasmtime::Result<Self::Pre> {
        bindings::TerminalDriverPre::new(instance_pre)
    }

    fn instantiate(pre: &Self::Pre, store: &mut Store<HostState>) -> wasmtime::Result<Self> {
        pre.instantiate(store)
    }
}
